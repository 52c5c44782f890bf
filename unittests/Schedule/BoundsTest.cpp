//===- BoundsTest.cpp - The search's work is bounded and scale-free -------===//
//
// Work is measured in branch-and-bound nodes, never in seconds: the same
// input gives the same counts on any machine, so every check here is
// deterministic. Each test pins one way the search used to run away: spans
// in large units, memory in large units, huge limits, memory that grows
// with the micro-batches, and budgets that were per period only.
//
//===----------------------------------------------------------------------===//

#include "tessera/Schedule/ScheduleSearch.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

using namespace tessera::schedule;
using tessera::Exception;

namespace {

Placement load(const std::string &file) {
  std::string path = std::string(TESSERA_SCHEDULE_WORKLOADS) + "/" + file;
  if (!std::ifstream(path))
    throw Exception("workload not found: " + path);
  return loadPlacement(path);
}

Placement scaleSpans(Placement p, int64_t k) {
  for (Block &b : p.blocks)
    b.span *= k;
  return p;
}

Placement scaleMemory(Placement p, int64_t k) {
  for (Block &b : p.blocks)
    b.memory *= k;
  return p;
}

/// The placement with the memory field of some blocks left out (0).
Placement omitMemory(Placement p, bool forwards, bool backwards) {
  for (Block &b : p.blocks)
    if ((b.kind == BlockKind::Forward && forwards) ||
        (b.kind != BlockKind::Forward && backwards))
      b.memory = 0;
  return p;
}

SearchResult search(const Placement &p, int64_t memory,
                    uint64_t nodeBudget = SearchOptions().nodeBudget) {
  PlacementGraph g(p);
  SearchOptions o;
  o.memoryLimit = memory;
  o.numMicroBatches = 128;
  o.nodeBudget = nodeBudget;
  return searchSchedule(g, o);
}

struct Case {
  const char *file;
  int64_t memory;
};

/// The README limits (P = W exists) and tighter ones, where the period
/// grows and the memory explanation runs, or nothing fits at all.
const Case kCases[] = {
    {"vshape-d4.json", 4},  {"xshape-d4.json", 4},  {"mshape-d4.json", 6},
    {"nnshape-d4.json", 6}, {"kshape-d4.json", 6},  {"vshape-d8.json", 8},
    {"xshape-d8.json", 20}, {"mshape-d8.json", 20}, {"nnshape-d8.json", 20},
    {"kshape-d8.json", 20}, {"vshape-d4.json", 3},  {"xshape-d4.json", 3},
    {"mshape-d4.json", 3},  {"vshape-d8.json", 3},  {"vshape-d4.json", 0},
    {"mshape-d4.json", 0}};

const char *const kFiles[] = {
    "vshape-d4.json",  "xshape-d4.json", "mshape-d4.json", "nnshape-d4.json",
    "kshape-d4.json",  "vshape-d8.json", "xshape-d8.json", "mshape-d8.json",
    "nnshape-d8.json", "kshape-d8.json"};

std::string where(const Case &c) {
  return std::string(c.file) + " memory " + std::to_string(c.memory);
}

// The same problem in microseconds instead of steps: the same search, node
// for node, and the same schedule scaled (the spans' gcd is the quantum).
TEST(SearchBounds, SpansScaledByAMillionGiveTheSameSearch) {
  constexpr int64_t kScale = 1'000'000;
  for (const Case &c : kCases) {
    SCOPED_TRACE(where(c));
    SearchResult a = search(load(c.file), c.memory);
    SearchResult b = search(scaleSpans(load(c.file), kScale), c.memory);
    EXPECT_EQ(a.timeQuantum, 1);
    EXPECT_EQ(b.timeQuantum, kScale);
    EXPECT_FALSE(b.spansQuantised);
    EXPECT_EQ(b.nodes, a.nodes);
    EXPECT_EQ(b.explainNodes, a.explainNodes);
    EXPECT_EQ(b.attempts.size(), a.attempts.size());
    EXPECT_EQ(b.lowerBound, kScale * a.lowerBound);
    ASSERT_EQ(b.found, a.found) << b.message;
    EXPECT_EQ(b.memoryForLowerBound, a.memoryForLowerBound);
    EXPECT_EQ(b.memoryNeeded, a.memoryNeeded);
    if (!a.found)
      continue;
    EXPECT_EQ(b.repetend.period, kScale * a.repetend.period);
    ASSERT_EQ(b.repetend.starts.size(), a.repetend.starts.size());
    for (size_t i = 0; i < a.repetend.starts.size(); ++i)
      EXPECT_EQ(b.repetend.starts[i], kScale * a.repetend.starts[i]);
    EXPECT_EQ(b.stats.makespan, kScale * a.stats.makespan);
    EXPECT_EQ(b.stats.peakMemory, a.stats.peakMemory);
  }
}

// Memory in bytes instead of units: every probe of the memory explanation
// is a multiple of the deltas' gcd, so the explanation runs the same
// searches whatever the magnitude (it used to bisect over the raw range).
TEST(SearchBounds, MemoryScaledByTwoToThe30GivesTheSameSearch) {
  constexpr int64_t kScale = int64_t(1) << 30;
  for (const Case &c : kCases) {
    SCOPED_TRACE(where(c));
    SearchResult a = search(load(c.file), c.memory);
    SearchResult b =
        search(scaleMemory(load(c.file), kScale), c.memory * kScale);
    ASSERT_EQ(b.found, a.found) << b.message;
    EXPECT_EQ(b.repetend.period, a.repetend.period);
    EXPECT_EQ(b.nodes, a.nodes);
    EXPECT_EQ(b.explainNodes, a.explainNodes);
    EXPECT_EQ(b.explainSearches, a.explainSearches);
    ASSERT_EQ(b.memoryForLowerBound.has_value(),
              a.memoryForLowerBound.has_value());
    if (a.memoryForLowerBound) {
      EXPECT_EQ(*b.memoryForLowerBound, kScale * *a.memoryForLowerBound);
    }
    ASSERT_EQ(b.memoryNeeded.has_value(), a.memoryNeeded.has_value());
    if (a.memoryNeeded) {
      EXPECT_EQ(*b.memoryNeeded, kScale * *a.memoryNeeded);
    }
  }
}

// A limit of 2^63 - 1 or 2^32 means "no limit" for these placements: P = W
// at once, no explanation, no overflow.
TEST(SearchBounds, HugeMemoryLimitsReachWWithFewNodes) {
  for (int64_t limit :
       {INT64_MAX, INT64_MAX - 1, int64_t(1) << 32, int64_t(1) << 62}) {
    for (const char *file : kFiles) {
      SCOPED_TRACE(std::string(file) + " memory " + std::to_string(limit));
      PlacementGraph g(load(file));
      SearchResult r = search(g.placement(), limit);
      ASSERT_TRUE(r.found) << r.message;
      EXPECT_EQ(r.repetend.period, g.lowerBound());
      // The first solution, then at most improveBudget (20,000) nodes to
      // shorten the latency.
      EXPECT_LE(r.nodes, 50'000u);
      EXPECT_EQ(r.explainSearches, 0u);
      EXPECT_TRUE(validateSchedule(g, r.schedule, limit).ok());
    }
  }
}

// Memory is optional in a placement. Left out everywhere it never binds:
// P = W straight away.
TEST(SearchBounds, OmittedMemoryReachesWWithFewNodes) {
  for (const char *file : kFiles) {
    SCOPED_TRACE(file);
    PlacementGraph g(omitMemory(load(file), true, true));
    SearchResult r = search(g.placement(), 4);
    ASSERT_TRUE(r.found) << r.message;
    EXPECT_EQ(r.repetend.period, g.lowerBound());
    EXPECT_LE(r.nodes, 50'000u);
    EXPECT_EQ(r.explainSearches, 0u);
  }
}

// Left out on the backward blocks only, the forwards' memory is never freed:
// a device ends 128 micro-batches at 128 times its net delta whatever the
// schedule. That is decided without a search (it used to exhaust the node
// budget of every period, then bisect: minutes), and the explanation names
// exactly that memory.
TEST(SearchBounds, MemoryThatGrowsWithMicroBatchesIsRefusedWithoutSearch) {
  for (const char *file : kFiles) {
    SCOPED_TRACE(file);
    PlacementGraph g(omitMemory(load(file), false, true));
    int64_t net = 0;
    for (int d = 0; d < g.numDevices(); ++d)
      net = std::max(net, g.netMemory(d));
    ASSERT_GT(net, 0);
    SearchResult r = search(g.placement(), 4);
    EXPECT_FALSE(r.found);
    EXPECT_EQ(r.nodes, 0u);
    EXPECT_TRUE(r.attempts.empty());
    EXPECT_NE(
        r.message.find("grows by " + std::to_string(net) + " per micro-batch"),
        std::string::npos)
        << r.message;
    ASSERT_TRUE(r.memoryNeeded.has_value()) << r.message;
    EXPECT_EQ(*r.memoryNeeded, 128 * net);
    EXPECT_TRUE(r.memoryNeededExact);
    EXPECT_LE(r.explainNodes, 100'000u);

    // At that memory, P = W.
    SearchResult ok = search(g.placement(), 128 * net);
    ASSERT_TRUE(ok.found) << ok.message;
    EXPECT_EQ(ok.repetend.period, g.lowerBound());
    EXPECT_LE(ok.nodes, 50'000u);
  }
}

// The node budget bounds the whole call: all periods of the main search
// together, and a quarter more for the memory explanation (both used to be
// per period or per probe, so a hard limit cost budget x periods x probes).
TEST(SearchBounds, TheNodeBudgetBoundsTheWholeSearch) {
  for (uint64_t budget : {1'000u, 100'000u}) {
    for (const char *file :
         {"kshape-d8.json", "nnshape-d8.json", "xshape-d8.json"}) {
      SCOPED_TRACE(std::string(file) + " budget " + std::to_string(budget));
      SearchResult r = search(load(file), 1, budget);
      EXPECT_LE(r.nodes, budget);
      EXPECT_LE(r.explainNodes, budget / 4);
      EXPECT_TRUE(r.budgetExhausted);
      EXPECT_FALSE(r.found);
      EXPECT_NE(r.message.find("node budget"), std::string::npos) << r.message;
    }
  }
}

// Spans that share no useful factor (10^6-scaled with a little noise) are
// rounded up to a coarser quantum: the periods tried stay within the
// documented bound, and the schedule, re-timed with the real spans, is
// valid and close to the ideal.
TEST(SearchBounds, LargeCoprimeSpansAreQuantised) {
  for (const Case &c : kCases) {
    if (c.memory < 4)
      continue;
    SCOPED_TRACE(where(c));
    Placement p = load(c.file);
    for (size_t i = 0; i < p.blocks.size(); ++i)
      p.blocks[i].span = p.blocks[i].span * 1'000'000 + 7919 * int64_t(i);
    PlacementGraph g(p);
    SearchResult r = search(p, c.memory);
    ASSERT_TRUE(r.found) << r.message;
    EXPECT_TRUE(r.spansQuantised);
    ASSERT_GT(r.timeQuantum, 1);
    ASSERT_FALSE(r.attempts.empty());
    // The first period tried is W on the grid: at most maxPeriodSteps, or
    // 16 steps per block of the busiest device.
    size_t perDevice = 0;
    for (int d = 0; d < g.numDevices(); ++d)
      perDevice = std::max(perDevice, g.blocksOn(d).size());
    EXPECT_LE(r.attempts.front().period / r.timeQuantum,
              std::max<int64_t>(SearchOptions().maxPeriodSteps,
                                16 * static_cast<int64_t>(perDevice)));
    EXPECT_EQ(r.repetend.period % r.timeQuantum, 0);
    EXPECT_NE(
        r.message.find("spans quantised by " + std::to_string(r.timeQuantum)),
        std::string::npos)
        << r.message;
    ValidationReport v = validateSchedule(g, r.schedule, c.memory);
    EXPECT_TRUE(v.ok()) << v.errors.front();
    // Each block rounds up by less than a quantum: a device loses at most
    // about 1/8 of its time.
    EXPECT_LE(8 * r.repetend.period, 9 * r.lowerBound);
    EXPECT_LE(r.nodes, SearchOptions().nodeBudget);
  }
}

TEST(SearchBounds, OneHugePeriodIsRefused) {
  PlacementGraph g(load("vshape-d4.json"));
  SearchOptions o;
  o.memoryLimit = 4;
  EXPECT_THROW(searchPeriod(g, 1'000'000'000, o), Exception);
  EXPECT_EQ(searchPeriod(g, 4, o).outcome, PeriodOutcome::Found);
}

TEST(SearchBounds, MemoryOrTimesBeyondRangeAreAnError) {
  Placement memory = scaleMemory(load("vshape-d4.json"), int64_t(1) << 58);
  try {
    search(memory, INT64_MAX);
    ADD_FAILURE() << "no error";
  } catch (const Exception &e) {
    EXPECT_NE(std::string(e.what()).find("memory deltas of device"),
              std::string::npos)
        << e.what();
  }
  Placement spans = scaleSpans(load("vshape-d4.json"), int64_t(1) << 56);
  EXPECT_THROW(search(spans, 4), Exception);
}

} // namespace
