//===- SearchTest.cpp - The search against exhaustive enumeration ---------===//

#include "TestUtil.h"
#include "tessera/Schedule/Builtins.h"
#include "tessera/Schedule/ScheduleSearch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

using namespace tessera::schedule;
using tessera::Exception;
using namespace tessera::schedule::test;

namespace {

constexpr int kMicro = 12;

int64_t floorDivT(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

// Memory of a device at time t when micro-batches [0, count) follow the
// starts with period P: counted directly, no formula shared with the search.
int64_t memoryAt(const PlacementGraph &g, int d, int64_t P,
                 const std::vector<int64_t> &s, int count, int64_t t) {
  int64_t mem = 0;
  for (int b : g.blocksOn(d))
    for (int i = 0; i < count; ++i)
      if (s[b] + i * P <= t)
        mem += g.block(b).memory;
  return mem;
}

// Exhaustive enumeration of starts in a window: the first block pinned at 0,
// other roots anywhere in [-H, H], every other block anywhere in
// [earliest, earliest + H]. Wider than the search's domains, so it would
// expose a schedule the search's dominance rules wrongly skip.
class BruteForce {
public:
  BruteForce(const PlacementGraph &g, int64_t P, int64_t limit)
      : g_(g), P_(P), limit_(limit), H_(2 * P + 2) {}

  bool run() {
    s_.assign(g_.numBlocks(), 0);
    occ_.assign(static_cast<size_t>(g_.numDevices()) * P_, 0);
    return dfs(0);
  }

private:
  bool fits(int b, int64_t v, int set) {
    int64_t ph = v - floorDivT(v, P_) * P_;
    for (int d : g_.block(b).devices)
      for (int64_t k = 0; k < g_.block(b).span; ++k) {
        char &c = occ_[static_cast<size_t>(d) * P_ + (ph + k) % P_];
        if (set == 0 && c)
          return false;
        if (set != 0)
          c = set > 0;
      }
    return true;
  }

  bool memoryOk() {
    for (int d = 0; d < g_.numDevices(); ++d) {
      // Exact finite run (warm-up, cool-down) of kMicro micro-batches.
      std::vector<int64_t> times;
      for (int b : g_.blocksOn(d))
        for (int i = 0; i < kMicro; ++i)
          times.push_back(s_[b] + i * P_);
      for (int64_t t : times)
        if (memoryAt(g_, d, P_, s_, kMicro, t) > limit_)
          return false;
      // Steady state: deep inside a long run.
      for (int64_t r = 0; r < P_; ++r)
        if (memoryAt(g_, d, P_, s_, 400, 200 * P_ + r) > limit_)
          return false;
    }
    return true;
  }

  bool dfs(size_t depth) {
    const auto &order = g_.topoOrder();
    if (depth == order.size())
      return memoryOk();
    int b = order[depth];
    int64_t lo, hi;
    if (depth == 0) {
      lo = hi = 0;
    } else if (g_.preds(b).empty()) {
      lo = -H_;
      hi = H_;
    } else {
      lo = INT64_MIN;
      for (int p : g_.preds(b))
        lo = std::max(lo, s_[p] + g_.block(p).span);
      hi = lo + H_;
    }
    for (int64_t v = lo; v <= hi; ++v) {
      if (!fits(b, v, 0))
        continue;
      fits(b, v, 1);
      s_[b] = v;
      bool found = dfs(depth + 1);
      fits(b, v, -1);
      if (found)
        return true;
    }
    return false;
  }

  const PlacementGraph &g_;
  int64_t P_, limit_, H_;
  std::vector<int64_t> s_;
  std::vector<char> occ_;
};

// Small training-like DAGs: forwards (sometimes on two devices, sometimes
// joining two earlier forwards) and mirrored backwards that free memory.
Placement randomPlacement(std::mt19937 &rng) {
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  Placement p;
  p.name = "random";
  p.numDevices = 2 + pick(2);
  int k = 2 + pick(2);
  std::vector<std::vector<int>> devs(k), fdeps(k);
  for (int j = 0; j < k; ++j) {
    devs[j] = {pick(p.numDevices)};
    if (pick(5) == 0)
      devs[j].push_back((devs[j][0] + 1) % p.numDevices);
    if (j > 0 && pick(5) != 0)
      fdeps[j].push_back(pick(j));
    if (j > 1 && pick(3) == 0) {
      int other = pick(j);
      if (std::find(fdeps[j].begin(), fdeps[j].end(), other) == fdeps[j].end())
        fdeps[j].push_back(other);
    }
    p.blocks.push_back(
        makeBlock(j, BlockKind::Forward, 1 + pick(2), 1, devs[j], fdeps[j]));
  }
  for (int j = k - 1; j >= 0; --j) {
    std::vector<int> deps;
    for (int x = j + 1; x < k; ++x)
      if (std::find(fdeps[x].begin(), fdeps[x].end(), j) != fdeps[x].end())
        deps.push_back(k + x);
    if (deps.empty())
      deps.push_back(j);
    p.blocks.push_back(
        makeBlock(k + j, BlockKind::Backward, 1 + pick(3), -1, devs[j], deps));
  }
  return p;
}

SearchOptions options(int64_t limit) {
  SearchOptions o;
  o.memoryLimit = limit;
  o.numMicroBatches = kMicro;
  return o;
}

TEST(SearchTest, MatchesExhaustiveSearchOnRandomPlacements) {
  std::mt19937 rng(12345);
  int compared = 0, aboveW = 0;
  for (int trial = 0; trial < 60; ++trial) {
    PlacementGraph g(randomPlacement(rng));
    int64_t limit = 1 + static_cast<int64_t>(rng() % 3);
    SearchResult r = searchSchedule(g, options(limit));
    const int64_t W = g.lowerBound();
    // The smallest period the exhaustive enumeration finds near W.
    int64_t brute = -1;
    for (int64_t P = W; P <= W + 3 && brute < 0; ++P)
      if (BruteForce(g, P, limit).run())
        brute = P;
    SCOPED_TRACE("trial " + std::to_string(trial) + " limit " +
                 std::to_string(limit));
    if (brute < 0) {
      EXPECT_TRUE(!r.found || r.repetend.period > W + 3);
      continue;
    }
    ++compared;
    ASSERT_TRUE(r.found) << "exhaustive found P = " << brute;
    EXPECT_EQ(r.repetend.period, brute);
    EXPECT_TRUE(r.provenOptimal);
    aboveW += brute > W;
    ValidationReport v = validateSchedule(g, r.schedule, limit);
    EXPECT_TRUE(v.ok()) << v.errors.front();
    EXPECT_EQ(v.stats.peakMemory, r.stats.peakMemory);
  }
  // The comparison must have covered both bubble-free and memory-bound
  // cases to mean anything.
  EXPECT_GE(compared, 40);
  EXPECT_GE(aboveW, 3);
}

TEST(SearchTest, ChainAtOneFOneBMemoryHasNoBubble) {
  PlacementGraph g(chainPlacement(4, 1, 2));
  SearchResult r = searchSchedule(g, options(4));
  ASSERT_TRUE(r.found);
  EXPECT_EQ(r.lowerBound, 3);
  EXPECT_EQ(r.repetend.period, 3);
  EXPECT_EQ(r.stats.peakMemory, (std::vector<int64_t>{4, 3, 2, 1}));
  // 1F1B's makespan: (m + p - 1)(F + B).
  EXPECT_EQ(r.stats.makespan, (kMicro + 3) * 3);
}

TEST(SearchTest, LessMemoryCostsPeriodAndSaysWhatWWouldNeed) {
  PlacementGraph g(chainPlacement(4, 1, 2));
  SearchResult r = searchSchedule(g, options(3));
  ASSERT_TRUE(r.found);
  // Device 0 holds a micro-batch for at least 4F + 3B = 10 steps, so
  // memory 3 forces P >= 4; reservation conflicts push it further. The
  // exhaustive enumeration agrees on the exact value.
  int64_t brute = -1;
  for (int64_t P = 3; P <= 8 && brute < 0; ++P)
    if (BruteForce(g, P, 3).run())
      brute = P;
  EXPECT_GE(r.repetend.period, 4);
  EXPECT_EQ(r.repetend.period, brute);
  EXPECT_TRUE(r.provenOptimal);
  ASSERT_TRUE(r.memoryForLowerBound.has_value());
  EXPECT_EQ(*r.memoryForLowerBound, 4);
  EXPECT_LE(
      *std::max_element(r.stats.peakMemory.begin(), r.stats.peakMemory.end()),
      3);
}

TEST(SearchTest, ImpossibleMemoryIsReportedWithTheMemoryNeeded) {
  PlacementGraph g(chainPlacement(3, 1, 2));
  SearchResult r = searchSchedule(g, options(0));
  EXPECT_FALSE(r.found);
  ASSERT_TRUE(r.memoryNeeded.has_value());
  EXPECT_EQ(*r.memoryNeeded, 1);
  ASSERT_TRUE(r.memoryForLowerBound.has_value());
  EXPECT_EQ(*r.memoryForLowerBound, 3);
  EXPECT_NE(r.message.find("no schedule fits memory 0"), std::string::npos);
  for (const PeriodAttempt &a : r.attempts)
    EXPECT_EQ(a.outcome, PeriodOutcome::Infeasible);
}

TEST(SearchTest, ZeroBubblePlacementsReachW) {
  // With B and W split, P = W = F + B + W at the memory of ZB-H2/ZB-V.
  PipelineSpec h;
  h.stages = 4;
  h.forwardSpan = h.backwardSpan = h.weightSpan = 1;
  PlacementGraph gh(makePipelinePlacement(h));
  SearchResult rh = searchSchedule(gh, options(2 * (2 * 4 - 1)));
  ASSERT_TRUE(rh.found);
  EXPECT_EQ(rh.repetend.period, 3);
  PipelineSpec v = normalizeSpec(BuiltinMethod::ZBV, h);
  PlacementGraph gv(makePipelinePlacement(v));
  SearchResult rv = searchSchedule(gv, options(4 * 4));
  ASSERT_TRUE(rv.found);
  EXPECT_EQ(rv.repetend.period, gv.lowerBound());
  EXPECT_TRUE(validateSchedule(gv, rv.schedule, 16).ok());
}

TEST(SearchTest, SteadyStatePeakMatchesLongRun) {
  PlacementGraph g(chainPlacement(4, 1, 2));
  SearchResult r = searchSchedule(g, options(4));
  ASSERT_TRUE(r.found);
  const Repetend &rep = r.repetend;
  for (int d = 0; d < g.numDevices(); ++d) {
    int64_t peak = INT64_MIN;
    for (int64_t t = 0; t < rep.period; ++t)
      peak = std::max(peak, memoryAt(g, d, rep.period, rep.starts, 400,
                                     200 * rep.period + t));
    EXPECT_EQ(rep.steadyPeak[d], peak) << "device " << d;
  }
}

TEST(SearchTest, IsDeterministic) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 10; ++trial) {
    PlacementGraph g(randomPlacement(rng));
    SearchResult a = searchSchedule(g, options(2));
    SearchResult b = searchSchedule(g, options(2));
    ASSERT_EQ(a.found, b.found);
    if (!a.found)
      continue;
    EXPECT_EQ(a.repetend.starts, b.repetend.starts);
    ASSERT_EQ(a.schedule.tasks.size(), b.schedule.tasks.size());
    for (size_t i = 0; i < a.schedule.tasks.size(); ++i)
      EXPECT_EQ(a.schedule.tasks[i].start, b.schedule.tasks[i].start);
  }
}

TEST(SearchTest, RejectsZeroMicroBatches) {
  PlacementGraph g(chainPlacement(2, 1, 1));
  SearchOptions o = options(2);
  o.numMicroBatches = 0;
  EXPECT_THROW(searchSchedule(g, o), Exception);
}

} // namespace
