//===- AutoPlanSearchTest.cpp - the auto policy's search vs brute force ---===//
//
// searchAutoPlan against an exhaustive search over the same space: every
// uniform mesh and micro-batch count the search tries, and every contiguous
// cut of the units into pp stages, each scored by evaluatePlan (the search's
// own cost and memory model).
//
//===----------------------------------------------------------------------===//

#include "tessera/Planner/AutoPlanSearch.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>

using namespace tessera::planner::autoplan;
using tessera::planner::PlanShape;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// Platform-independent uniform draws (std distributions are not).
struct Rng {
  std::mt19937_64 gen;
  explicit Rng(uint64_t seed) : gen(seed) {}
  double uniform(double lo, double hi) {
    return lo + (hi - lo) * double(gen() >> 11) * 0x1.0p-53;
  }
  /// Log-uniform in [lo, hi].
  double logUniform(double lo, double hi) {
    return std::exp(uniform(std::log(lo), std::log(hi)));
  }
  int64_t pick(std::initializer_list<int64_t> xs) {
    return xs.begin()[gen() % xs.size()];
  }
  bool coin(double p) { return uniform(0, 1) < p; }
};

Problem randomProblem(uint64_t seed) {
  Rng r(seed);
  Problem p;
  int n = int(r.pick({3, 4, 5, 6}));
  for (int u = 0; u < n; ++u) {
    Unit unit;
    unit.name = "u" + std::to_string(u);
    unit.paramBytes = r.coin(0.5) ? r.logUniform(1e5, 1e8) : 0;
    unit.paramBytesSplit = r.logUniform(1e6, 2e9);
    unit.stateBytes = 2 * unit.paramBytes;
    unit.stateBytesSplit = 2 * unit.paramBytesSplit;
    unit.actBytes = r.logUniform(1e6, 1e9);
    unit.actBytesSplit = r.coin(0.7) ? r.logUniform(1e6, 4e9) : 0;
    p.units.push_back(unit);
    int ops = int(r.pick({1, 2, 3}));
    for (int k = 0; k < ops; ++k) {
      OpCost op;
      op.unit = u;
      op.flops = r.logUniform(1e9, 1e13);
      op.batchBytes = r.logUniform(1e6, 1e9);
      op.fixedBytes = r.logUniform(1e5, 1e8);
      op.perMicroBatch = r.coin(0.85);
      op.tpSplit = r.coin(0.6);
      if (r.coin(0.5))
        op.allReduceBytes = r.logUniform(1e5, 1e9);
      if (r.coin(0.3))
        op.allGatherBytes = r.logUniform(1e5, 1e9);
      op.modelFlops = r.coin(0.7);
      p.ops.push_back(op);
    }
    if (u + 1 < n)
      p.edges.push_back({u, u + 1, r.logUniform(1e5, 1e9)});
    if (u + 2 < n && r.coin(0.3))
      p.edges.push_back({u, u + 2, r.logUniform(1e5, 1e9)});
  }
  p.batch = r.pick({4, 8});
  p.devices = r.pick({1, 2, 4, 8});
  switch (r.gen() % 4) {
  case 0:
    p.tpDegrees = {1};
    break;
  case 1:
    p.tpDegrees = {1, 2};
    break;
  case 2:
    p.tpDegrees = {1, 2, 4};
    break;
  default:
    p.tpDegrees = {2, 4}; // sometimes no mesh at all
    break;
  }
  p.fixedMicroBatches = r.coin(0.2) ? 2 : 0;
  p.deviceSpec = r.coin(0.5) ? "cpu" : "h100";
  p.schedule = r.coin(0.5) ? "1f1b" : "gpipe";
  p.zero1 = r.coin(0.5);
  // Relative to everything on one device with one micro-batch, so that
  // some meshes (or all) do not fit.
  double total = 0;
  for (const Unit &u : p.units)
    total += 2 * (u.paramBytes + u.paramBytesSplit) + u.stateBytes +
             u.stateBytesSplit + u.actBytes + u.actBytesSplit;
  p.memoryBytes = total * r.logUniform(0.03, 1.5);
  return p;
}

struct BruteForce {
  double best = kInf;       ///< least reported step time
  double bestClosed = kInf; ///< least closed-form step time
  size_t plans = 0, fits = 0;
  PlanShape bestChoice;
};

std::string describe(const PlanShape &c) {
  std::string s = "dp " + std::to_string(c.dp) + " tp " + std::to_string(c.tp) +
                  " pp " + std::to_string(c.pp) + " m " +
                  std::to_string(c.microBatches) + " starts";
  for (size_t u : c.stageStarts)
    s += " " + std::to_string(u);
  return s;
}

/// Whether every unit a constrained plan pins lies in its stage.
bool keepsPins(const Problem &p, const PlanShape &c) {
  for (size_t u = 0; u < p.unitStages.size(); ++u) {
    if (p.unitStages[u] < 0)
      continue;
    int64_t stage = 0;
    for (size_t i = 0; i < c.stageStarts.size(); ++i)
      if (c.stageStarts[i] <= u)
        stage = int64_t(i);
    if (stage != p.unitStages[u])
      return false;
  }
  return true;
}

/// Every mesh and micro-batch count the search tries, every cut.
BruteForce bruteForce(const Problem &p) {
  BruteForce out;
  int64_t n = int64_t(p.units.size());
  for (int64_t t : p.tpDegrees) {
    if (p.devices % t != 0 || (p.fixedTp && t != p.fixedTp))
      continue;
    for (int64_t d = 1; d <= p.devices / t; ++d) {
      if ((p.devices / t) % d != 0 || p.batch % d != 0 ||
          (p.fixedDp && d != p.fixedDp) ||
          (!p.dpDegrees.empty() &&
           std::find(p.dpDegrees.begin(), p.dpDegrees.end(), d) ==
               p.dpDegrees.end()))
        continue;
      int64_t pp = p.devices / (t * d);
      if (pp > n || (p.fixedPp && pp != p.fixedPp))
        continue;
      int64_t perReplica = p.batch / d;
      for (int64_t m = 1; m <= perReplica; ++m) {
        if (perReplica % m != 0 ||
            (p.fixedMicroBatches > 0 && m != p.fixedMicroBatches))
          continue;
        // Stage starts: 0 plus a (pp-1)-subset of {1..n-1}, as a bitmask.
        for (uint32_t mask = 0; mask < (1u << (n - 1)); ++mask) {
          if (__builtin_popcount(mask) != pp - 1)
            continue;
          PlanShape c;
          c.dp = d;
          c.tp = t;
          c.pp = pp;
          c.microBatches = m;
          c.stageStarts = {0};
          for (int64_t u = 1; u < n; ++u)
            if (mask & (1u << (u - 1)))
              c.stageStarts.push_back(size_t(u));
          if (!keepsPins(p, c))
            continue;
          StepEvaluation e = evaluatePlan(p, c);
          EXPECT_EQ(e.error, "");
          ++out.plans;
          if (!e.error.empty() || !e.fits)
            continue;
          ++out.fits;
          if (e.stepSeconds < out.best) {
            out.best = e.stepSeconds;
            out.bestChoice = c;
          }
          out.bestClosed = std::min(out.bestClosed, e.closedFormSeconds);
        }
      }
    }
  }
  return out;
}

/// The search against the brute force on 200 seeded random problems: the
/// same feasibility, a plan that re-evaluates to the reported time, and a
/// step time at most (1 + tolerance) times the best.
void checkAgainstBruteForce(bool exactCuts, double kTolerance) {
  constexpr int kInstances = 200;
  double worstGap = 0;
  int worstSeed = -1, feasibleInstances = 0, suboptimal = 0;
  size_t plans = 0;
  for (int seed = 0; seed < kInstances; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Problem p = randomProblem(uint64_t(seed));
    p.exactCuts = exactCuts;
    BruteForce bf = bruteForce(p);
    plans += bf.plans;
    Result r = searchAutoPlan(p);
    bool bruteFeasible = bf.best < kInf;
    ASSERT_EQ(r.error.empty(), bruteFeasible) << r.error;
    if (!bruteFeasible)
      continue;
    ++feasibleInstances;
    // The search's plan, re-evaluated.
    ASSERT_EQ(r.shape.dp * r.shape.tp * r.shape.pp, p.devices);
    ASSERT_EQ(int64_t(r.stages.size()), r.shape.pp);
    const PlanShape &c = r.shape;
    ASSERT_EQ(c.stageStarts.size(), r.stages.size());
    for (size_t i = 0; i < r.stages.size(); ++i)
      EXPECT_EQ(c.stageStarts[i], r.stages[i].firstUnit);
    StepEvaluation e = evaluatePlan(p, c);
    ASSERT_EQ(e.error, "");
    EXPECT_TRUE(e.fits);
    EXPECT_NEAR(e.stepSeconds, r.stepSeconds, 1e-9 * r.stepSeconds);
    EXPECT_NEAR(e.bubble, r.bubble, 1e-12);
    // The schedule replayed with each stage's own times never exceeds the
    // closed form, which charges every block the slowest stage's time.
    EXPECT_LE(e.stepSeconds, e.closedFormSeconds * (1 + 1e-9));
    double gap = r.stepSeconds / bf.best - 1;
    if (gap > 1e-12)
      ++suboptimal;
    if (gap > worstGap) {
      worstGap = gap;
      worstSeed = seed;
    }
    EXPECT_LE(r.stepSeconds, bf.best * (1 + kTolerance + 1e-12))
        << "search " << r.stepSeconds << " s (" << describe(c)
        << "), brute force " << bf.best << " s (" << describe(bf.bestChoice)
        << ")";
  }
  std::printf(
      "[auto-plan] %s cuts: %d instances (%d feasible), %zu plans evaluated; "
      "%d suboptimal, worst gap %.6g (seed %d)\n",
      exactCuts ? "exact" : "planner", kInstances, feasibleInstances, plans,
      suboptimal, worstGap, worstSeed);
  // Both outcomes occur, or the check above proves little.
  EXPECT_GT(feasibleInstances, kInstances / 4);
  EXPECT_LT(feasibleInstances, kInstances);
}

/// A plan file's constraints (some mesh axes, the micro-batches) narrow the
/// search: on random problems with random constraints, the constrained
/// search finds a plan exactly when the brute force over the plans that
/// satisfy them does, its plan satisfies them, and it is as fast as the
/// best of them (exact cuts), so never slower than the unconstrained
/// search's plan when that one satisfies them.
TEST(AutoPlanSearch, ConstraintsAreKeptAndCostNothingElse) {
  constexpr int kInstances = 300;
  int feasible = 0, infeasible = 0, unconstrainedSatisfies = 0;
  for (int seed = 0; seed < kInstances; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Problem free = randomProblem(uint64_t(seed));
    Rng r(uint64_t(seed) + 1000003);
    Problem p = free;
    auto axis = [&]() -> int64_t {
      return r.coin(0.4) ? r.pick({1, 2, 4}) : 0;
    };
    p.fixedDp = axis();
    p.fixedTp = axis();
    p.fixedPp = axis();
    if (p.fixedMicroBatches == 0 && r.coin(0.3))
      p.fixedMicroBatches = r.pick({1, 2, 4});
    p.constraints = "(random)";
    BruteForce bf = bruteForce(p);
    Result c = searchAutoPlan(p);
    if (bf.best == kInf) {
      ++infeasible;
      EXPECT_NE(c.error, "");
      continue;
    }
    ++feasible;
    ASSERT_EQ(c.error, "");
    if (p.fixedDp)
      EXPECT_EQ(c.shape.dp, p.fixedDp);
    if (p.fixedTp)
      EXPECT_EQ(c.shape.tp, p.fixedTp);
    if (p.fixedPp)
      EXPECT_EQ(c.shape.pp, p.fixedPp);
    if (p.fixedMicroBatches)
      EXPECT_EQ(c.shape.microBatches, p.fixedMicroBatches);
    EXPECT_LE(c.stepSeconds, bf.best * (1 + 1e-9));
    // The unconstrained plan, where it satisfies the constraints, is no
    // faster.
    Result u = searchAutoPlan(free);
    if (u.error.empty() && (!p.fixedDp || u.shape.dp == p.fixedDp) &&
        (!p.fixedTp || u.shape.tp == p.fixedTp) &&
        (!p.fixedPp || u.shape.pp == p.fixedPp) &&
        (!p.fixedMicroBatches || u.shape.microBatches == p.fixedMicroBatches)) {
      ++unconstrainedSatisfies;
      EXPECT_LE(c.stepSeconds, u.stepSeconds * (1 + 1e-9));
    }
  }
  std::printf("[auto-plan] constraints: %d instances, %d feasible, %d "
              "infeasible, %d where the free plan satisfies them\n",
              kInstances, feasible, infeasible, unconstrainedSatisfies);
  // Both outcomes occur, or the checks above prove little.
  EXPECT_GT(feasible, kInstances / 10);
  EXPECT_GT(infeasible, kInstances / 10);
  EXPECT_GT(unconstrainedSatisfies, 0);
}

/// A constrained plan file's assign entries pin layer groups to stages and
/// its trans entries narrow the tp and dp degrees: on random problems with
/// random pins (monotone or not) and degrees, the search finds a plan
/// exactly when the brute force over the plans that keep them does, its
/// plan keeps them, it is as fast as the best of them (exact cuts; the
/// planner library's cuts, which know no pins, fall back to a cut that
/// keeps them and are checked for that alone), and the unconstrained
/// plan, where it keeps them, is no faster.
TEST(AutoPlanSearch, PinnedStagesAndSplitDegreesAreKept) {
  constexpr int kInstances = 300;
  int feasible = 0, infeasible = 0, unconstrainedKeeps = 0, pinned = 0;
  for (int seed = 0; seed < kInstances; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Problem free = randomProblem(uint64_t(seed));
    Rng r(uint64_t(seed) + 7000001);
    Problem p = free;
    size_t n = p.units.size();
    p.unitStages.assign(n, -1);
    // Mostly pins some cut could keep: units pinned to their stage in a
    // random cut into 1-4 stages; else any stage (often a conflict).
    bool anyStage = r.coin(0.2);
    int64_t stages = std::min<int64_t>(int64_t(n), r.pick({1, 2, 3, 4}));
    std::vector<int64_t> stageOf(n, 0);
    for (size_t u = 1, s = 0; u < n; ++u) {
      if (int64_t(s) + 1 < stages &&
          (r.coin(0.5) || int64_t(n - u) == stages - int64_t(s) - 1))
        ++s;
      stageOf[u] = int64_t(s);
    }
    for (size_t u = 0; u < n; ++u)
      if (r.coin(0.35)) {
        p.unitStages[u] = anyStage ? r.pick({0, 1, 2, 3}) : stageOf[u];
        ++pinned;
      }
    if (r.coin(0.3)) {
      p.dpDegrees = {r.pick({1, 2}), r.pick({2, 4})};
      p.transConstrained = true;
    }
    if (r.coin(0.3)) {
      std::vector<int64_t> tps;
      for (int64_t t : p.tpDegrees)
        if (t > 1)
          tps.push_back(t);
      p.tpDegrees = tps;
      p.transConstrained = true;
    }
    p.constraints = "(random)";
    BruteForce bf = bruteForce(p);
    for (bool exact : {true, false}) {
      SCOPED_TRACE(exact ? "exact cuts" : "planner cuts");
      p.exactCuts = exact;
      Result c = searchAutoPlan(p);
      if (bf.best == kInf) {
        EXPECT_NE(c.error, "");
        continue;
      }
      ASSERT_EQ(c.error, "");
      EXPECT_TRUE(keepsPins(p, c.shape)) << describe(c.shape);
      EXPECT_NE(std::find(p.tpDegrees.begin(), p.tpDegrees.end(), c.shape.tp),
                p.tpDegrees.end());
      if (!p.dpDegrees.empty())
        EXPECT_NE(std::find(p.dpDegrees.begin(), p.dpDegrees.end(), c.shape.dp),
                  p.dpDegrees.end());
      StepEvaluation e = evaluatePlan(p, c.shape);
      ASSERT_EQ(e.error, "");
      EXPECT_TRUE(e.fits);
      if (exact)
        EXPECT_LE(c.stepSeconds, bf.best * (1 + 1e-9))
            << "search " << describe(c.shape) << ", brute force "
            << describe(bf.bestChoice);
    }
    (bf.best == kInf ? infeasible : feasible) += 1;
    if (bf.best == kInf)
      continue;
    p.exactCuts = true;
    Result c = searchAutoPlan(p);
    Result u = searchAutoPlan(free);
    if (u.error.empty() && keepsPins(p, u.shape) &&
        std::count(p.tpDegrees.begin(), p.tpDegrees.end(), u.shape.tp) &&
        (p.dpDegrees.empty() ||
         std::count(p.dpDegrees.begin(), p.dpDegrees.end(), u.shape.dp))) {
      ++unconstrainedKeeps;
      EXPECT_LE(c.stepSeconds, u.stepSeconds * (1 + 1e-9));
    }
  }
  std::printf("[auto-plan] pins: %d instances (%d units pinned), %d feasible, "
              "%d infeasible, %d where the free plan keeps them\n",
              kInstances, pinned, feasible, infeasible, unconstrainedKeeps);
  EXPECT_GT(feasible, kInstances / 10);
  EXPECT_GT(infeasible, kInstances / 10);
  EXPECT_GT(unconstrainedKeeps, 0);
}

TEST(AutoPlanSearch, ConstraintsThatExcludeEveryMeshAreNamed) {
  Problem p = randomProblem(1);
  p.devices = 4;
  p.tpDegrees = {1, 2};
  p.fixedTp = 4;
  p.constraints = "mesh.tp = 4";
  Result r = searchAutoPlan(p);
  EXPECT_NE(r.error.find("no plan satisfies the constraints mesh.tp = 4 on 4 "
                         "device(s): tp must be one of 1, 2"),
            std::string::npos)
      << r.error;
}

TEST(AutoPlanSearch, ExactCutsMatchBruteForce) {
  // Small unit chains are cut by exactCut's dynamic program: optimal.
  checkAgainstBruteForce(/*exactCuts=*/true, 1e-9);
}

TEST(AutoPlanSearch, PlannerCutsNearBruteForce) {
  // Large chains fall back to the planner's cut, which is not exact. It
  // minimises Piper's objective, the slowest stage's time per micro-batch
  // (plus its updates amortised over m), while the step time is
  // (m + pp - 1) * the slowest stage's micro-batch time + the slowest
  // stage's once-per-step work, which also holds the dp gradient all-reduce
  // the planner is not told about; and when the planner returns fewer than
  // pp stages the search splits them by micro-batch time alone. The search
  // also weighs the fastest cut that fits by its slowest stage ((m + pp -
  // 1) x micro-batch time + once-per-step time, a dynamic program beside
  // the least-memory one) and keeps the faster of the two. Measured on these
  // 200 seeds (deterministic): 1 instance is suboptimal, by 0.18 % (seed 9;
  // with the planner's cut alone, 3 by up to 17 %). The bound sits above
  // that worst gap: a regression guard, not a guarantee.
  checkAgainstBruteForce(/*exactCuts=*/false, 0.01);
}

Problem handProblem() {
  Problem p;
  for (int u = 0; u < 4; ++u) {
    Unit unit;
    unit.name = "layer" + std::to_string(u);
    unit.paramBytesSplit = 1e7;
    unit.stateBytesSplit = 2e7;
    unit.actBytes = 1e6;
    p.units.push_back(unit);
    OpCost op;
    op.unit = u;
    op.flops = 1e11;
    op.batchBytes = 1e6;
    op.perMicroBatch = true;
    op.tpSplit = true;
    op.allReduceBytes = 1e8; // tp is expensive
    p.ops.push_back(op);
    if (u + 1 < 4)
      p.edges.push_back({u, u + 1, 1e8}); // and so is pp
  }
  p.batch = 8;
  p.tpDegrees = {1, 2, 4};
  p.deviceSpec = "h100";
  p.memoryBytes = 80e9;
  return p;
}

TEST(AutoPlanSearch, OneDeviceIsOneStage) {
  Problem p = handProblem();
  p.devices = 1;
  Result r = searchAutoPlan(p);
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.shape.dp, 1);
  EXPECT_EQ(r.shape.tp, 1);
  EXPECT_EQ(r.shape.pp, 1);
  ASSERT_EQ(r.stages.size(), 1u);
  EXPECT_EQ(r.stages[0].firstUnit, 0u);
  EXPECT_EQ(r.stages[0].lastUnit, 3u);
  EXPECT_EQ(r.bubble, 0);
}

TEST(AutoPlanSearch, PureDataParallelWhenMemoryIsAmple) {
  Problem p = handProblem();
  p.devices = 8;
  Result r = searchAutoPlan(p);
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.shape.dp, 8);
  EXPECT_EQ(r.shape.tp, 1);
  EXPECT_EQ(r.shape.pp, 1);
  EXPECT_EQ(r.shape.microBatches, 1);
  EXPECT_EQ(r.bubble, 0);
}

TEST(AutoPlanSearch, TooLittleMemoryIsAnError) {
  Problem p = handProblem();
  p.devices = 8;
  p.memoryBytes = 1e6;
  Result r = searchAutoPlan(p);
  EXPECT_NE(r.error.find("no plan fits"), std::string::npos) << r.error;
}

TEST(AutoPlanSearch, NoMeshIsAnError) {
  Problem p = handProblem();
  p.devices = 3;
  p.tpDegrees = {2};
  Result r = searchAutoPlan(p);
  EXPECT_NE(r.error.find("no mesh"), std::string::npos) << r.error;
}

TEST(AutoPlanSearch, EvaluatePlanRejectsMalformedCuts) {
  Problem p = handProblem();
  PlanShape c;
  c.pp = 2;
  c.stageStarts = {0};
  EXPECT_NE(evaluatePlan(p, c).error, "");
  c.stageStarts = {0, 4};
  EXPECT_NE(evaluatePlan(p, c).error, "");
  c.stageStarts = {1, 2};
  EXPECT_NE(evaluatePlan(p, c).error, "");
  c.stageStarts = {0, 2};
  StepEvaluation e = evaluatePlan(p, c);
  EXPECT_EQ(e.error, "");
  ASSERT_EQ(e.stages.size(), 2u);
  EXPECT_EQ(e.stages[1].firstUnit, 2u);
  EXPECT_EQ(e.stages[1].lastUnit, 3u);
}

// Ranks sharing compute slots (DeviceSpec::computeSlots): a plan that keeps
// all its ranks busy waits r x its average rank's work (ops, collectives,
// sends) minus what its schedule already spans; one whose stages take turns
// does not.
TEST(AutoPlanSearch, SharedComputeSlotsSlowPlansThatKeepEveryRankBusy) {
  std::string dir = ::testing::TempDir();
  std::string spec = dir + "/shared-spec.json";
  {
    std::ofstream f(spec);
    f << R"({"name": "shared", "peak_flops": {"fp32": 1e11},
      "memory_bandwidth": 1e12, "memory_bytes": 1e12, "devices_per_node": 4,
      "intra_node": {"bandwidth": 1e12, "latency": 0},
      "inter_node": {"bandwidth": 1e12, "latency": 0},
      "op_overhead": 1e-6, "compute_slots": 2})";
  }
  Problem p = handProblem();
  p.deviceSpec = spec;
  p.devices = 4;
  for (OpCost &op : p.ops) {
    op.tpSplit = false;
    op.allReduceBytes = 0;
  }
  for (Edge &e : p.edges)
    e.bytes = 0;
  for (Unit &u : p.units) {
    u.paramBytesSplit = u.stateBytesSplit = 0;
  }
  // Each op: 1e-6 + 1e11 flops / 1e11 FLOP/s at the full batch.
  PlanShape dp{4, 1, 1, 1, {0}};
  StepEvaluation e = evaluatePlan(p, dp);
  ASSERT_EQ(e.error, "");
  double perRank = 4 * (1e-6 + 1.0 / 4); // four ops on a quarter batch
  // 4 ranks on 2 slots: twice the rank's compute.
  EXPECT_NEAR(e.stepSeconds, 2 * perRank, 1e-12);
  EXPECT_NEAR(e.sharedComputeSeconds, perRank, 1e-12);
  // One stage per device, one micro-batch: the stages run one after
  // another (the schedule spans 4 x a stage's work, more than the 2 x the
  // average rank's that the slots need), so no wait.
  PlanShape pp{1, 1, 4, 1, {0, 1, 2, 3}};
  e = evaluatePlan(p, pp);
  ASSERT_EQ(e.error, "");
  EXPECT_EQ(e.sharedComputeSeconds, 0);
  EXPECT_NEAR(e.stepSeconds, 4 * (1e-6 + 1.0), 1e-9);
  // Without sharing (slots = devices per node), no wait either.
  {
    std::ofstream f(spec);
    f << R"({"name": "shared", "peak_flops": {"fp32": 1e11},
      "memory_bandwidth": 1e12, "memory_bytes": 1e12, "devices_per_node": 4,
      "intra_node": {"bandwidth": 1e12, "latency": 0},
      "inter_node": {"bandwidth": 1e12, "latency": 0},
      "op_overhead": 1e-6})";
  }
  e = evaluatePlan(p, dp);
  EXPECT_EQ(e.sharedComputeSeconds, 0);
  EXPECT_NEAR(e.stepSeconds, perRank, 1e-12);
  // A host rank's collectives run on its own core too: with a link of
  // 1 ms latency, dp4 on 2 slots takes twice its unshared step, the
  // gradients' all-reduces included (every rank does the same work).
  auto withLatency = [&](const char *slots) {
    std::ofstream f(spec);
    f << R"({"name": "shared", "peak_flops": {"fp32": 1e11},
      "memory_bandwidth": 1e12, "memory_bytes": 1e12, "devices_per_node": 4,
      "intra_node": {"bandwidth": 1e12, "latency": 1e-3},
      "inter_node": {"bandwidth": 1e12, "latency": 1e-3},
      "op_overhead": 1e-6)"
      << slots << "}";
  };
  for (Unit &u : p.units) { // two small gradients each, all-reduced over dp
    u.paramBytes = 1e3;
    u.params = 2;
  }
  withLatency("");
  StepEvaluation alone = evaluatePlan(p, dp);
  ASSERT_EQ(alone.error, "");
  EXPECT_GT(alone.stepSeconds, perRank + 1e-3); // the all-reduces
  withLatency(R"(, "compute_slots": 2)");
  e = evaluatePlan(p, dp);
  EXPECT_NEAR(e.stepSeconds, 2 * alone.stepSeconds, 1e-12);
  EXPECT_NEAR(e.sharedComputeSeconds, alone.stepSeconds, 1e-12);
  // A measured contention replaces the slots: dp4 keeps all 4 ranks busy
  // (the 4th entry), pp4 with one micro-batch one at a time (the 1st).
  withLatency(R"(, "compute_slots": 2, "contention": [1.25, 1.5, 2, 3])");
  e = evaluatePlan(p, dp);
  EXPECT_NEAR(e.stepSeconds, 3 * alone.stepSeconds, 1e-12);
  withLatency("");
  StepEvaluation ppAlone = evaluatePlan(p, pp);
  withLatency(R"(, "contention": [1.25, 1.5, 2, 3])");
  e = evaluatePlan(p, pp);
  // Busy ranks on average: 4 x (the average rank's work) / the span; each
  // stage works a quarter of the span, so 1 (plus the step's own work).
  EXPECT_NEAR(e.stepSeconds, 1.25 * ppAlone.stepSeconds,
              1e-3 * ppAlone.stepSeconds);
}

/// A device spec file (in the test's temporary folder) with 1e11 fp32
/// FLOP/s, 2 devices per node, links of unbounded bandwidth and the given
/// memory bandwidth, link latency and op overhead; returns its path.
std::string writeSpec(const std::string &name, double memoryBandwidth,
                      double latency, double opOverhead) {
  std::string path = ::testing::TempDir() + "/" + name + "-spec.json";
  std::ofstream f(path);
  f << "{\"name\": \"" << name << "\", \"peak_flops\": {\"fp32\": 1e11}, "
    << "\"memory_bandwidth\": " << memoryBandwidth
    << ", \"memory_bytes\": 1e12, \"devices_per_node\": 2, "
    << "\"intra_node\": {\"bandwidth\": 1e30, \"latency\": " << latency
    << "}, \"inter_node\": {\"bandwidth\": 1e30, \"latency\": " << latency
    << "}, \"op_overhead\": " << opOverhead << "}";
  return path;
}

/// The tests' small problem: 2 devices of 1e12 bytes each, `batch`
/// samples, the given tp degrees, priced by `spec`; the test adds its units
/// and ops.
Problem smallProblem(const std::string &spec, int64_t batch,
                     std::vector<int64_t> tpDegrees = {1}) {
  Problem p;
  p.deviceSpec = spec;
  p.devices = 2;
  p.batch = batch;
  p.tpDegrees = std::move(tpDegrees);
  p.memoryBytes = 1e12;
  return p;
}

// A profile database times ops at the shapes one-device runs see; a tp
// piece is not one of them: its time is the op's own measurement at the
// whole shape, scaled by the estimate's ratio between piece and whole.
TEST(AutoPlanSearch, TpPiecesScaleTheirWholeMeasurement) {
  std::string spec = writeSpec("tppiece", 1e12, 0, 1e-6);
  std::string db = ::testing::TempDir() + "/tppiece-profile.json";
  {
    std::ofstream f(db);
    f << R"({"entries": [{"op": "matmul", "dtype": "fp32",
                          "shapes": [[2, 16]], "seconds": 0.5}]})";
  }
  Problem p = smallProblem(spec, 2, {1, 2});
  p.profileDatabase = db;
  Unit u;
  u.name = "u";
  p.units.push_back(u);
  OpCost op;
  op.op = "matmul";
  op.perMicroBatch = true;
  op.tpSplit = true;
  op.flops = 2e11;
  op.operands.push_back({{2, 16}, /*batchDim=*/0, /*tpDim=*/1});
  p.ops.push_back(op);
  // tp2: the piece [2, 8]; the roofline (1e-6 s + FLOPs / 1e11) halves
  // nearly, and so does the measured 0.5 s.
  StepEvaluation e = evaluatePlan(p, PlanShape{1, 2, 1, 1, {0}});
  ASSERT_EQ(e.error, "");
  EXPECT_EQ(e.profiledOps, 1u);
  EXPECT_NEAR(e.stepSeconds, 0.5 * (1e-6 + 1.0) / (1e-6 + 2.0), 1e-12);
  // dp2: the batch piece [1, 16] was not measured, and the whole shape is
  // only a guide for tp pieces: the roofline.
  e = evaluatePlan(p, PlanShape{2, 1, 1, 1, {0}});
  ASSERT_EQ(e.error, "");
  EXPECT_EQ(e.profiledOps, 0u);
  EXPECT_NEAR(e.stepSeconds, 1e-6 + 1.0, 1e-12);
  // One device: the whole shape, measured.
  e = evaluatePlan(p, PlanShape{1, 1, 1, 1, {0}});
  ASSERT_EQ(e.error, "");
  EXPECT_NEAR(e.stepSeconds, 0.5, 1e-12);
}

// The driver's measured time per step outside the step function (the
// profile database's "driver" entry) joins every plan's step once: less
// what the units already price for the driver (each step value passed in
// and out, the finiteness read of the parameters on one device), and with
// several ranks the step report's gather to rank 0 (2 ranks: one latency).
// One device then predicts its step function and the measured driver time.
TEST(AutoPlanSearch, TheDriversMeasuredTimeJoinsEveryStepOnce) {
  std::string spec = writeSpec("driver", 1e12, 1e-3, 1e-6);
  std::string db = ::testing::TempDir() + "/driver-profile.json";
  auto writeDriver = [&](double seconds) {
    std::ofstream f(db);
    f << R"({"entries": [{"op": "driver", "dtype": "", "shapes": [],
                          "seconds": )"
      << seconds << "}]}";
  };
  Problem p = smallProblem(spec, 4);
  for (const char *name : {"a", "b"}) {
    Unit u;
    u.name = name;
    u.paramBytes = 4e3;
    u.params = 2;
    u.stepValues = 6;
    p.units.push_back(u);
    OpCost op;
    op.unit = int(p.units.size() - 1);
    op.perMicroBatch = true;
    op.flops = 2e11;
    p.ops.push_back(op);
  }
  // What the units price for the driver on one device.
  double priced = 2 * (2 * 6 * 1e-6 + 4e3 / 1e12);
  const std::vector<PlanShape> shapes = {PlanShape{2, 1, 1, 1, {0}},
                                         PlanShape{1, 1, 2, 1, {0, 1}},
                                         PlanShape{1, 1, 2, 2, {0, 1}}};
  std::vector<double> plain;
  for (const PlanShape &s : shapes) {
    StepEvaluation e = evaluatePlan(p, s);
    ASSERT_EQ(e.error, "");
    EXPECT_EQ(e.driverSeconds, 0);
    plain.push_back(e.stepSeconds);
  }
  Result before = searchAutoPlan(p);
  ASSERT_EQ(before.error, "");
  ASSERT_FALSE(before.runnersUp.empty());

  writeDriver(0.25);
  p.profileDatabase = db;
  double added = 0.25 - priced + 1e-3;
  for (size_t i = 0; i < shapes.size(); ++i) {
    StepEvaluation e = evaluatePlan(p, shapes[i]);
    ASSERT_EQ(e.error, "");
    EXPECT_NEAR(e.driverSeconds, added, 1e-12);
    EXPECT_NEAR(e.stepSeconds, plain[i] + added, 1e-12);
  }
  // The search ranks the same plans alike and reports them with it.
  Result after = searchAutoPlan(p);
  ASSERT_EQ(after.error, "");
  EXPECT_EQ(after.shape.dp, before.shape.dp);
  EXPECT_EQ(after.shape.pp, before.shape.pp);
  EXPECT_EQ(after.shape.microBatches, before.shape.microBatches);
  EXPECT_NEAR(after.driverSeconds, added, 1e-12);
  EXPECT_NEAR(after.stepSeconds, before.stepSeconds + added, 1e-12);
  EXPECT_NEAR(after.mfu * after.stepSeconds, before.mfu * before.stepSeconds,
              1e-9 * before.mfu * before.stepSeconds);
  ASSERT_EQ(after.runnersUp.size(), before.runnersUp.size());
  for (size_t i = 0; i < after.runnersUp.size(); ++i)
    EXPECT_NEAR(after.runnersUp[i].stepSeconds,
                before.runnersUp[i].stepSeconds + added, 1e-12);

  // A measurement below what the units price adds the gather alone.
  writeDriver(priced / 2);
  StepEvaluation low = evaluatePlan(p, shapes[0]);
  ASSERT_EQ(low.error, "");
  EXPECT_NEAR(low.stepSeconds, plain[0] + 1e-3, 1e-12);

  // One device: the step function and the measured driver time, no
  // gather.
  Problem one = p;
  one.devices = 1;
  one.profileDatabase.clear();
  StepEvaluation bare = evaluatePlan(one, PlanShape{1, 1, 1, 1, {0}});
  ASSERT_EQ(bare.error, "");
  writeDriver(0.25);
  one.profileDatabase = db;
  StepEvaluation measured = evaluatePlan(one, PlanShape{1, 1, 1, 1, {0}});
  ASSERT_EQ(measured.error, "");
  EXPECT_NEAR(measured.stepSeconds, bare.stepSeconds - priced + 0.25, 1e-12);
}

// A view (a reshape) costs nothing, not even the op overhead.
TEST(AutoPlanSearch, ViewsAreFree) {
  std::string spec = writeSpec("view", 1e12, 1e-3, 1e-6);
  Problem p = smallProblem(spec, 2);
  Unit u;
  u.name = "u";
  u.paramBytes = 4e3;
  p.units.push_back(u);
  OpCost op;
  op.perMicroBatch = true;
  op.flops = 2e11;
  p.ops.push_back(op);
  OpCost view = op;
  view.view = true;
  p.ops.push_back(view);
  StepEvaluation e = evaluatePlan(p, PlanShape{2, 1, 1, 1, {0}});
  ASSERT_EQ(e.error, "");
  // One op on half the batch, the gradients' all-reduce over 2 ranks (the
  // tree's 2 x log2(2) = 2 latencies, no cheaper ring at this size), and
  // the driver's finite check of the updated parameter (4e3 bytes read).
  EXPECT_NEAR(e.stepSeconds, 1e-6 + 1.0 + 2e-3 + 4e3 / 1e12, 1e-12);
}

// The runtime reduces each gradient with a collective of its own, and the
// training driver hands every step argument in and takes it back: a unit
// of 5 parameters pays the link's latency 5 times, and its 15 step values
// (parameters and AdamW's m and v) two op overheads each.
TEST(AutoPlanSearch, OneCollectivePerParameterAndTheDriversWork) {
  std::string spec = writeSpec("perparam", 1e12, 1e-3, 1e-6);
  Problem p = smallProblem(spec, 2);
  Unit u;
  u.name = "u";
  u.paramBytes = 5e3;
  u.params = 5;
  u.stepValues = 15;
  p.units.push_back(u);
  OpCost op;
  op.perMicroBatch = true;
  op.flops = 2e11;
  p.ops.push_back(op);
  StepEvaluation e = evaluatePlan(p, PlanShape{2, 1, 1, 1, {0}});
  ASSERT_EQ(e.error, "");
  double compute = 1e-6 + 1.0;          // the op on half the batch
  double reduce = 5 * 2e-3;             // 5 all-reduces, 2 latencies each
  double driver = 2 * 15 * 1e-6 + 5e-9; // values in and out, finite check
  EXPECT_NEAR(e.stepSeconds, compute + reduce + driver, 1e-12);
  // ZeRO-3 also gathers each parameter twice (forward and backward): 10
  // all-gathers of one latency each over 2 ranks; the finite check reads
  // half of each parameter.
  p.zero1 = p.zero3 = true;
  e = evaluatePlan(p, PlanShape{2, 1, 1, 1, {0}});
  ASSERT_EQ(e.error, "");
  EXPECT_NEAR(e.stepSeconds,
              compute + reduce + 10 * 1e-3 + 2 * 15 * 1e-6 + 2.5e-9, 1e-12);
  // A unit whose parameters ZeRO-3 leaves whole (the auto policy's
  // per-stage choice) beside one it shards, in one stage: only the
  // sharded unit's 5 parameters are gathered; the whole unit's 3 are
  // all-reduced and read whole by the finite check.
  Unit whole;
  whole.name = "whole";
  whole.paramBytes = 3e3;
  whole.params = 3;
  whole.stepValues = 9;
  whole.paramsWhole = true;
  p.units.push_back(whole);
  e = evaluatePlan(p, PlanShape{2, 1, 1, 1, {0}});
  ASSERT_EQ(e.error, "");
  EXPECT_NEAR(e.stepSeconds,
              compute + 8 * 2e-3 + 10 * 1e-3 + 2 * 24 * 1e-6 + 2.5e-9 + 3e-9,
              1e-12);
  p.units.pop_back();
  // ZeRO-2 reduce-scatters each gradient and all-gathers each updated
  // parameter: over 2 ranks one latency each, the all-reduce's two.
  p.zero3 = false;
  p.zero2 = true;
  e = evaluatePlan(p, PlanShape{2, 1, 1, 1, {0}});
  ASSERT_EQ(e.error, "");
  EXPECT_NEAR(e.stepSeconds, compute + 5 * 1e-3 + 5 * 1e-3 + driver, 1e-12);
}

// With the interleaved schedule the search cuts the units into two virtual
// stages per device (for time) and reports the plan evaluateVirtualPlan
// predicts: every device holds two stages, placed round robin.
TEST(AutoPlanSearch, InterleavedPlansHaveTwoStagesPerDevice) {
  Problem p = handProblem();
  p.devices = 2;
  p.schedule = "interleaved";
  Result r = searchAutoPlan(p);
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.shape.pp, 2);
  ASSERT_EQ(r.shape.stageStarts.size(), 4u);
  EXPECT_EQ(r.shape.stageStarts.front(), 0u);
  PlanShape virtualShape = r.shape;
  virtualShape.pp = 4;
  StepEvaluation e = evaluateVirtualPlan(p, virtualShape, {0, 1, 0, 1});
  ASSERT_EQ(e.error, "");
  EXPECT_DOUBLE_EQ(r.stepSeconds, e.stepSeconds);
  EXPECT_TRUE(e.fits);
  // One device: no pipeline to interleave.
  p.devices = 1;
  EXPECT_NE(searchAutoPlan(p).error, "");
}

// With a device that reduces gradients beside the backward (a GPU's
// communication stream, DeviceSpec::overlapDpReduction), a unit's
// reduction starts once the last micro-batch's backward made its
// gradients: unit 1's (5 all-reduces of 2 latencies: 10 ms) runs during
// unit 0's 1 s backward, and only unit 0's, after the backward ends, is
// waited for.
TEST(AutoPlanSearch, OverlappedDpReductionWaitsOnlyForTheTail) {
  std::string plain = writeSpec("nooverlap", 1e12, 1e-3, 0);
  std::string overlapped = ::testing::TempDir() + "/overlap-spec.json";
  {
    std::ifstream in(plain);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    text.insert(text.rfind('}'), ", \"overlap_dp_reduction\": true");
    std::ofstream(overlapped) << text;
  }
  Problem p = smallProblem(plain, 2);
  for (int i = 0; i < 2; ++i) {
    Unit u;
    u.name = "u" + std::to_string(i);
    u.paramBytes = 5e3;
    u.params = 5;
    p.units.push_back(u);
    OpCost f;
    f.unit = i;
    f.perMicroBatch = true;
    f.flops = 2e11;
    p.ops.push_back(f);
    OpCost b = f;
    b.backward = true;
    b.reach = i;
    p.ops.push_back(b);
  }
  p.deviceSpec = plain;
  StepEvaluation e = evaluatePlan(p, PlanShape{2, 1, 1, 1, {0}});
  ASSERT_EQ(e.error, "");
  p.deviceSpec = overlapped;
  StepEvaluation o = evaluatePlan(p, PlanShape{2, 1, 1, 1, {0}});
  ASSERT_EQ(o.error, "");
  EXPECT_NEAR(e.stepSeconds - o.stepSeconds, 10e-3, 1e-9);
}

// The savers' memory on dp2: ZeRO-1 shards the optimizer state, ZeRO-2 the
// gradients too (held whole only while micro-batches add into them),
// ZeRO-3 the parameters too. A unit of 4 MB of parameters and 8 MB of
// state: the step's peak is the update, which holds every gradient.
TEST(AutoPlanSearch, ZeroStagesShardWhatTheySay) {
  Problem p = smallProblem(writeSpec("zero", 1e12, 1e-6, 1e-9), 2);
  Unit u;
  u.name = "u";
  u.paramBytes = 4e6;
  u.stateBytes = 8e6;
  u.params = 2;
  u.largestParamBytes = 2e6;
  p.units.push_back(u);
  OpCost op;
  op.perMicroBatch = true;
  op.flops = 1e6;
  p.ops.push_back(op);
  auto memory = [&](bool z1, bool z2, bool z3, int64_t m) {
    p.zero1 = z1 || z2 || z3;
    p.zero2 = z2;
    p.zero3 = z3;
    StepEvaluation e = evaluatePlan(p, PlanShape{2, 1, 1, m, {0}});
    EXPECT_EQ(e.error, "");
    return e.stages.empty() ? 0.0 : e.stages[0].memoryBytes;
  };
  double plain = memory(false, false, false, 1);
  double z1 = memory(true, false, false, 1);
  double z2 = memory(false, true, false, 1);
  double z3 = memory(false, false, true, 1);
  // ZeRO-1: half the state (the update's share of it too: the largest
  // parameter's new state is half as large).
  EXPECT_NEAR(plain - z1, 4e6 + 2e6 * 2 - 2e6 * 1, 1);
  // ZeRO-2: half the gradients besides.
  EXPECT_NEAR(z1 - z2, 2e6, 1);
  EXPECT_LT(z3, z2);
  // ZeRO-3 that leaves the unit's parameters whole holds what ZeRO-1 does.
  p.units[0].paramsWhole = true;
  EXPECT_DOUBLE_EQ(memory(false, false, true, 1), z1);
  p.units[0].paramsWhole = false;
  // With micro-batches the running totals are whole through the backward,
  // but the update still holds only the shards.
  EXPECT_LE(memory(false, true, false, 2), memory(true, false, false, 2));
}

} // namespace

// zb-h1 splits each stage's backward as dist-schedule does: B is what an
// earlier stage waits for (an op whose reach is a unit before the stage),
// W the rest, and on the first stage all of it. Two units of 1 s forward
// per micro-batch: unit 0 has a 2 s weight gradient; unit 1 a 1 s input
// gradient (read by unit 0's backward) and a 1 s weight gradient. As one
// stage each, stage 0 is F 1 + W 2 and stage 1 F 1 + B 1 + W 1; zero bubble
// hides part of the fill and drain that 1F1B pays, and with one stage the
// two are the same.
// Virtual stages: each device's memory is one peak, reported on each of
// its stages; a shape the devices do not fit is an error, not a guess.
TEST(AutoPlanSearch, VirtualStagesArePredictedByDevice) {
  Problem p = handProblem();
  p.devices = 2;
  p.schedule = "interleaved";
  PlanShape c;
  c.dp = 1;
  c.tp = 1;
  c.pp = 4; // virtual stages
  c.microBatches = 4;
  c.stageStarts = {0, 1, 2, 3};
  StepEvaluation e = evaluateVirtualPlan(p, c, {0, 1, 0, 1});
  ASSERT_EQ(e.error, "");
  ASSERT_EQ(e.stages.size(), 4u);
  EXPECT_EQ(e.stages[0].memoryBytes, e.stages[2].memoryBytes);
  EXPECT_EQ(e.stages[1].memoryBytes, e.stages[3].memoryBytes);
  // A device holds at least its two stages' parameters and state.
  EXPECT_GE(e.stages[0].memoryBytes, 2 * (1e7 + 2e7));
  EXPECT_GT(e.stepSeconds, 0);
  EXPECT_GT(e.bubble, 0);
  EXPECT_LT(e.bubble, 1);
  EXPECT_NE(evaluateVirtualPlan(p, c, {0, 1, 0}).error, "");
  EXPECT_NE(evaluateVirtualPlan(p, c, {0, 1, 2, 2}).error, "");
  c.stageStarts = {0, 2, 1, 3};
  EXPECT_NE(evaluateVirtualPlan(p, c, {0, 1, 0, 1}).error, "");
}

// An interlaced pipeline: the embedding and the head (units 0 and 3) on
// every device, the two layers pipelined. It is predicted as the pipeline
// of the layers alone in which each stage also does half of each
// micro-batch's embedding and head work and holds their parameters, and
// communicates over pp what dist-partition makes it (gathers, sends, the
// weight gradients' reduction; reductions for a vocabulary split): the
// same figures as that pipeline written out by hand.
TEST(AutoPlanSearch, InterlacedPlansFoldTheOpsOnEveryDeviceIntoEachStage) {
  std::string spec = writeSpec("interlaced", 1e12, 1e-6, 1e-6);
  auto unit = [](const char *name, double params, double act) {
    Unit u;
    u.name = name;
    u.paramBytes = params;
    u.stateBytes = 2 * params;
    u.params = 1;
    u.largestParamBytes = params;
    u.actBytes = act;
    return u;
  };
  auto op = [](int u, double flops) {
    OpCost c;
    c.unit = u;
    c.perMicroBatch = true;
    c.flops = flops;
    c.batchBytes = 1e3;
    return c;
  };
  // The communication over pp, written out: on unit u, per micro-batch
  // (or once a step), in the backward or not, over 2 devices.
  enum Kind { Gather, Reduce, Send };
  auto comm = [](int u, Kind kind, double bytes, bool backward,
                 bool perMicroBatch = true) {
    OpCost c;
    c.unit = u;
    c.commOnly = true;
    c.perMicroBatch = perMicroBatch;
    c.backward = backward;
    c.reach = -1;
    c.ppRanks = 2;
    (kind == Gather   ? c.ppAllGatherBytes
     : kind == Reduce ? c.ppAllReduceBytes
                      : c.ppSendBytes) = bytes;
    return c;
  };
  Problem p = smallProblem(spec, 4);
  p.units = {unit("embed", 4e5, 8e3), unit("h.0", 1e5, 2e3),
             unit("h.1", 1e5, 2e3), unit("head", 6e5, 4e3)};
  p.ops = {op(0, 2e9), op(1, 1e10), op(2, 1e10), op(3, 6e9)};
  // The embedding's output to h.0 (3e3 bytes), h.1's to the head (7e3).
  p.edges = {{0, 1, 3e3}, {1, 2, 5e3}, {2, 3, 7e3}};
  PlanShape shape{1, 1, 2, 2, {1, 2}};
  StepEvaluation e =
      evaluateInterlacedPlan(p, shape, {true, false, false, true});
  ASSERT_EQ(e.error, "");
  Problem hand = smallProblem(spec, 4);
  for (int i = 1; i <= 2; ++i) {
    Unit u = p.units[i];
    u.paramBytes += 4e5 + 6e5;
    u.stateBytes += 2 * (4e5 + 6e5);
    u.params += 2;
    u.largestParamBytes = 6e5;
    u.actBytes += (8e3 + 4e3) / 2;
    hand.units.push_back(u);
    hand.ops.push_back(op(i - 1, 1e10));
    for (OpCost c : {op(i - 1, 2e9 / 2), op(i - 1, 6e9 / 2)}) {
      c.batchBytes /= 2;
      hand.ops.push_back(c);
    }
  }
  hand.edges = {{0, 1, 5e3}};
  // Per micro-batch on both devices: the embedding's output gathered over
  // pp (forward), the head's input gradient too (backward); stage 0 sends
  // h.0's input gradient to device 1 (backward), stage 1 its output to
  // device 0 (forward), each received there; once a step the embedding's
  // and head's weight gradients all-reduced over pp.
  std::vector<OpCost> spoken = hand.ops;
  for (int s = 0; s < 2; ++s) {
    hand.ops.push_back(comm(s, Gather, 3e3, false));
    hand.ops.push_back(comm(s, Send, 3e3, true));
    hand.ops.push_back(comm(s, Gather, 7e3, true));
    hand.ops.push_back(comm(s, Send, 7e3, false));
    hand.ops.push_back(comm(s, Reduce, 4e5 + 6e5, false, false));
  }
  StepEvaluation h = evaluatePlan(hand, PlanShape{1, 1, 2, 2, {0, 1}});
  ASSERT_EQ(h.error, "");
  EXPECT_DOUBLE_EQ(e.stepSeconds, h.stepSeconds);
  // The ops priced (the report's "N of M op(s) timed by measurement"): the
  // two pipelined ones and the two on every device once per stage; the
  // communication is not an op the profile times.
  EXPECT_EQ(e.pricedOps, 6u);
  EXPECT_EQ(h.pricedOps, 6u);
  ASSERT_EQ(e.stages.size(), 2u);
  for (int s = 0; s < 2; ++s)
    EXPECT_DOUBLE_EQ(e.stages[s].memoryBytes, h.stages[s].memoryBytes);
  // They cost time (1 us of latency each here).
  Problem silent = hand;
  silent.ops = spoken;
  EXPECT_GT(h.stepSeconds,
            evaluatePlan(silent, PlanShape{1, 1, 2, 2, {0, 1}}).stepSeconds +
                8e-6);
  // A vocabulary split of the embedding (each device holds half of its
  // 4e5 bytes): the values at both ends of the pipeline are partial sums
  // over pp, all-reduced, and its gradient stays in pieces.
  // Each device also updates half of the split table (once a step) and
  // reads half of it per micro-batch; the head's parameters (not split)
  // stay whole.
  Problem vocab = p;
  vocab.units[0].ppSplitParamBytes = 4e5;
  vocab.units[0].ppSplitStateBytes = 8e5;
  OpCost update;
  update.unit = 0;
  update.perMicroBatch = false;
  update.flops = 8e9;
  update.fixedBytes = 1.2e6;
  OpCost reads = op(0, 1e9);
  reads.fixedBytes = 4e5;
  OpCost headUpdate = update;
  headUpdate.unit = 3;
  vocab.ops.push_back(update);
  vocab.ops.push_back(reads);
  vocab.ops.push_back(headUpdate);
  StepEvaluation ev =
      evaluateInterlacedPlan(vocab, shape, {true, false, false, true});
  ASSERT_EQ(ev.error, "");
  Problem handVocab = hand;
  handVocab.ops = spoken;
  for (int s = 0; s < 2; ++s) {
    OpCost half = update;
    half.unit = s;
    half.flops /= 2;
    half.fixedBytes /= 2;
    OpCost halfReads = reads;
    halfReads.unit = s;
    halfReads.flops /= 2;
    halfReads.batchBytes /= 2;
    halfReads.fixedBytes /= 2;
    OpCost whole = headUpdate;
    whole.unit = s;
    handVocab.ops.push_back(half);
    handVocab.ops.push_back(halfReads);
    handVocab.ops.push_back(whole);
  }
  for (int s = 0; s < 2; ++s) {
    handVocab.units[size_t(s)].paramBytes -= 2e5;
    handVocab.units[size_t(s)].stateBytes -= 4e5;
    handVocab.ops.push_back(comm(s, Reduce, 3e3, false));
    handVocab.ops.push_back(comm(s, Send, 3e3, true));
    handVocab.ops.push_back(comm(s, Reduce, 7e3, true));
    handVocab.ops.push_back(comm(s, Send, 7e3, false));
    handVocab.ops.push_back(comm(s, Reduce, 6e5, false, false));
  }
  StepEvaluation hv = evaluatePlan(handVocab, PlanShape{1, 1, 2, 2, {0, 1}});
  ASSERT_EQ(hv.error, "");
  EXPECT_DOUBLE_EQ(ev.stepSeconds, hv.stepSeconds);
  // A stage cannot start on every device, nor can everything run there.
  EXPECT_NE(evaluateInterlacedPlan(p, PlanShape{1, 1, 2, 2, {0, 2}},
                                   {true, false, false, true})
                .error,
            "");
  EXPECT_NE(evaluateInterlacedPlan(p, shape, {true, true, true, true}).error,
            "");
  EXPECT_NE(evaluateInterlacedPlan(p, shape, {true}).error, "");

  // Four layers in two virtual stages per device (interleaved, round
  // robin): each virtual stage does a quarter of the embedding and head
  // work, and each device's first stage holds their parameters.
  Problem v = smallProblem(spec, 4);
  v.schedule = "interleaved";
  v.units = {unit("embed", 4e5, 8e3), unit("h.0", 1e5, 2e3),
             unit("h.1", 1e5, 2e3),   unit("h.2", 1e5, 2e3),
             unit("h.3", 1e5, 2e3),   unit("head", 6e5, 4e3)};
  v.ops = {op(0, 2e9),  op(1, 1e10), op(2, 1e10),
           op(3, 1e10), op(4, 1e10), op(5, 6e9)};
  PlanShape vs{1, 1, 4, 4, {1, 2, 3, 4}};
  std::vector<int64_t> devices = {0, 1, 0, 1};
  StepEvaluation ve = evaluateInterlacedPlan(
      v, vs, {true, false, false, false, false, true}, devices);
  ASSERT_EQ(ve.error, "");
  Problem vh = smallProblem(spec, 4);
  vh.schedule = "interleaved";
  for (int i = 1; i <= 4; ++i) {
    Unit u = v.units[i];
    if (i <= 2) { // the first stage of devices 0 and 1
      u.paramBytes += 4e5 + 6e5;
      u.stateBytes += 2 * (4e5 + 6e5);
      u.params += 2;
      u.largestParamBytes = 6e5;
    }
    u.actBytes += (8e3 + 4e3) / 4;
    vh.units.push_back(u);
    vh.ops.push_back(op(i - 1, 1e10));
    for (OpCost c : {op(i - 1, 2e9 / 4), op(i - 1, 6e9 / 4)}) {
      c.batchBytes /= 4;
      vh.ops.push_back(c);
    }
  }
  // Once a step each device (its first stage) all-reduces the embedding's
  // and head's weight gradients over pp.
  for (int s = 0; s < 2; ++s)
    vh.ops.push_back(comm(s, Reduce, 4e5 + 6e5, false, false));
  StepEvaluation vhe =
      evaluateVirtualPlan(vh, PlanShape{1, 1, 4, 4, {0, 1, 2, 3}}, devices);
  ASSERT_EQ(vhe.error, "");
  EXPECT_DOUBLE_EQ(ve.stepSeconds, vhe.stepSeconds);
  ASSERT_EQ(ve.stages.size(), 4u);
  for (int s = 0; s < 4; ++s)
    EXPECT_DOUBLE_EQ(ve.stages[s].memoryBytes, vhe.stages[s].memoryBytes);
}

// The step is the schedule replayed with each stage's own F and B: stage
// 0 (F 1 s, B 2 s per micro-batch) and stage 1 (F 1 s, B 5 s). One
// micro-batch runs through both, 1 + 1 + 5 + 2 = 9 s; two under 1F1B:
// stage 0's F0 and F1 (0-1, 1-2), stage 1's F0 (1-2), B0 (2-7), F1 (7-8)
// and B1 (8-13), stage 0's B0 (7-9) and B1 (13-15): 15 s. The closed form
// charges every block the slower stage's time: (m + 1) x 6 s.
TEST(AutoPlanSearch, UnequalStagesCostWhatTheyTake) {
  std::string spec = writeSpec("unequal", 1e30, 1e-30, 1e-30);
  for (int64_t m : {1, 2}) {
    SCOPED_TRACE("micro-batches " + std::to_string(m));
    Problem p = smallProblem(spec, 2);
    for (int u = 0; u < 2; ++u) {
      Unit unit;
      unit.name = "u" + std::to_string(u);
      p.units.push_back(unit);
    }
    // 1e11 FLOPs is 1 s; a micro-batch is 1/m of the batch.
    auto op = [&](int unit, double seconds, bool backward) {
      OpCost c;
      c.unit = unit;
      c.perMicroBatch = true;
      c.flops = 1e11 * seconds * double(m);
      c.backward = backward;
      p.ops.push_back(c);
    };
    op(0, 1, false);
    op(0, 2, true);
    op(1, 1, false);
    op(1, 5, true);
    StepEvaluation e = evaluatePlan(p, PlanShape{1, 1, 2, m, {0, 1}});
    ASSERT_EQ(e.error, "");
    EXPECT_NEAR(e.stepSeconds, m == 1 ? 9 : 15, 1e-6);
    EXPECT_NEAR(e.closedFormSeconds, double(m + 1) * 6, 1e-6);
  }
}

// Two ranks on one core (compute_slots 1): a stage that waits for a message
// while the other stage computes gets its core when that block ends, or
// after core_wait. pp2, two micro-batches under 1F1B, F 1 s and B 2 s on
// each stage, free sends: stage 1's F0 arrives at 1 s while stage 0 runs
// F1 (until 2 s), stage 0's B0 at 4 s while stage 1 runs F1 (until 5 s);
// stage 0's B1 arrives as stage 1 finishes (no wait). The contention list
// of ones leaves the slots' own slowdown out (but in the last case). The
// virtual-stage evaluation, given one stage per device, predicts each
// case alike.
TEST(AutoPlanSearch, WaitingStagesWaitForTheCoreAComputingStageHolds) {
  std::string spec = ::testing::TempDir() + "/corewait-spec.json";
  auto withWait = [&](const std::string &extra, const std::string &contention) {
    std::ofstream f(spec);
    f << R"({"name": "corewait", "peak_flops": {"fp32": 1e11},
      "memory_bandwidth": 1e30, "memory_bytes": 1e12, "devices_per_node": 2,
      "intra_node": {"bandwidth": 1e30, "latency": 0},
      "inter_node": {"bandwidth": 1e30, "latency": 0},
      "contention": )"
      << contention << extra << "}";
  };
  Problem p = smallProblem(spec, 2);
  for (int u = 0; u < 2; ++u) {
    Unit unit;
    unit.name = "u" + std::to_string(u);
    p.units.push_back(unit);
    // 1e11 FLOPs is 1 s; a micro-batch is half the batch.
    for (double seconds : {1.0, 2.0}) {
      OpCost c;
      c.unit = u;
      c.perMicroBatch = true;
      c.flops = 1e11 * seconds * 2;
      c.backward = seconds > 1;
      c.modelFlops = true;
      p.ops.push_back(c);
    }
  }
  PlanShape shape{1, 1, 2, 2, {0, 1}};
  struct Case {
    std::string extra;
    double step;
    std::string contention = "[1, 1]";
  };
  for (const Case &c : std::vector<Case>{
           // No measured wait, or a core per rank: the replay alone.
           {"", 9},
           {R"(, "compute_slots": 2, "core_wait": 10)", 9},
           // Each waiting block waits for the rest of the other's block.
           {R"(, "compute_slots": 1, "core_wait": 10)", 10},
           // At most core_wait each.
           {R"(, "compute_slots": 1, "core_wait": 0.5)", 9.5},
           // A measured chance replaces the placement's (1 here): half of
           // each wait.
           {R"(, "compute_slots": 1, "core_wait": 10, "core_chance": 0.5)",
            9.5},
           // And the slowdown of busy ranks on top: each stage works 6 s
           // of the 10, so 1.2 ranks are busy on average, 1.1 x slower
           // with 2 busy ranks 1.5 x: 1 s more.
           {R"(, "compute_slots": 1, "core_wait": 10)", 11, "[1, 1.5]"},
           // Each F and B block starts 0.25 s late after its receive: a
           // micro-batch of a stage takes 3.5 s, the three of 1F1B's
           // critical path 10.5 s.
           {R"(, "block_start": 0.25)", 10.5}}) {
    SCOPED_TRACE(c.extra + " " + c.contention);
    withWait(c.extra, c.contention);
    StepEvaluation e = evaluatePlan(p, shape);
    ASSERT_EQ(e.error, "");
    EXPECT_NEAR(e.stepSeconds, c.step, 1e-9);
    // The virtual-stage evaluation (interleaved, ZB-V) prices one stage
    // per device the same way: the same replay, waits and slowdown.
    StepEvaluation v = evaluateVirtualPlan(p, shape, {0, 1});
    ASSERT_EQ(v.error, "");
    EXPECT_NEAR(v.stepSeconds, c.step, 1e-9);
    EXPECT_NEAR(v.sharedComputeSeconds, e.sharedComputeSeconds, 1e-9);
  }
  // Without a pipeline no block waits for another rank: dp2 pays no block
  // start.
  withWait(R"(, "block_start": 0.25)", "[1, 1]");
  StepEvaluation dpStarted = evaluatePlan(p, PlanShape{2, 1, 1, 2, {0}});
  withWait("", "[1, 1]");
  StepEvaluation dp = evaluatePlan(p, PlanShape{2, 1, 1, 2, {0}});
  ASSERT_EQ(dp.error, "");
  EXPECT_NEAR(dpStarted.stepSeconds, dp.stepSeconds, 1e-12);
}

// Under zb-h1 stage i defers each W by i micro-batches: the gradients
// exist once the first W ran, and after its last backward the last stage
// of two, with two micro-batches, holds both W's values (W0 waited for
// B1, W1 has no later backward to wait for) while W0 writes the
// gradients. Two units of 1e6 bytes of parameters (2e6 of state), no
// activations, 8e6 bytes a W reads at the full batch (4e6 a micro-batch).
TEST(AutoPlanSearch, ZeroBubbleDeferredWsHoldTheirValuesBesideTheGradients) {
  std::string spec = writeSpec("zbmem", 1e12, 1e-6, 1e-6);
  Problem p = smallProblem(spec, 4);
  for (int u = 0; u < 2; ++u) {
    Unit unit;
    unit.name = "u" + std::to_string(u);
    unit.paramBytes = 1e6;
    unit.stateBytes = 2e6;
    unit.params = 1;
    unit.largestParamBytes = 1e6;
    unit.weightBytes = 8e6;
    p.units.push_back(unit);
    OpCost c;
    c.unit = u;
    c.perMicroBatch = true;
    c.flops = 1e9;
    p.ops.push_back(c);
  }
  PlanShape shape{1, 1, 2, 2, {0, 1}};
  p.schedule = "1f1b";
  StepEvaluation ofob = evaluatePlan(p, shape);
  p.schedule = "zb-h1";
  StepEvaluation zb = evaluatePlan(p, shape);
  ASSERT_EQ(ofob.error, "");
  ASSERT_EQ(zb.error, "");
  // 1F1B: parameters and state (3e6), then the update's peak: the
  // gradients (1e6) and the largest parameter's new value and state (3e6).
  EXPECT_DOUBLE_EQ(ofob.stages[1].memoryBytes, 3e6 + 1e6 + 3e6);
  // Stage 0 defers nothing.
  EXPECT_DOUBLE_EQ(zb.stages[0].memoryBytes, ofob.stages[0].memoryBytes);
  // Stage 1: the gradients beside two W's values, above the update.
  EXPECT_DOUBLE_EQ(zb.stages[1].memoryBytes, 3e6 + 1e6 + 2 * 4e6);
}

TEST(AutoPlanSearch, ZeroBubbleSplitsTheBackwardLikeTheSchedule) {
  std::string spec = writeSpec("zb", 1e30, 1e-30, 1e-30);
  Problem p = smallProblem(spec, 4);
  for (int u = 0; u < 2; ++u) {
    Unit unit;
    unit.name = "u" + std::to_string(u);
    p.units.push_back(unit);
  }
  // Per micro-batch (a quarter of the batch with 4 of them), 1e11 FLOPs
  // is 1 s.
  auto op = [&](int unit, double seconds, bool backward, int reach) {
    OpCost c;
    c.unit = unit;
    c.perMicroBatch = true;
    c.flops = 4e11 * seconds;
    c.backward = backward;
    if (backward)
      c.reach = reach;
    p.ops.push_back(c);
  };
  constexpr int kNone = 2147483647;
  op(0, 1, false, 0);
  op(1, 1, false, 0);
  op(1, 1, true, 0);     // input gradient, read by unit 0's backward
  op(1, 1, true, kNone); // weight gradient
  op(0, 2, true, kNone); // weight gradient
  PlanShape shape{1, 1, 2, 4, {0, 1}};
  p.schedule = "zb-h1";
  StepEvaluation zb = evaluatePlan(p, shape);
  ASSERT_EQ(zb.error, "");
  ASSERT_EQ(zb.stages.size(), 2u);
  EXPECT_NEAR(zb.stages[0].microForward, 1, 1e-9);
  EXPECT_NEAR(zb.stages[0].microWeight, 2, 1e-9);
  EXPECT_NEAR(zb.stages[1].microForward, 1, 1e-9);
  EXPECT_NEAR(zb.stages[1].microWeight, 1, 1e-9);
  EXPECT_NEAR(zb.stages[1].microSeconds, 3, 1e-9);
  p.schedule = "1f1b";
  StepEvaluation ofob = evaluatePlan(p, shape);
  ASSERT_EQ(ofob.error, "");
  // 1F1B: (4 + 2 - 1) micro-batches of the slowest stage's 3 s.
  EXPECT_NEAR(ofob.stepSeconds, 15, 1e-6);
  EXPECT_LT(zb.stepSeconds, ofob.stepSeconds);
  EXPECT_LT(zb.bubble, ofob.bubble);
  // Never below the stages' own work: 4 micro-batches of 3 s.
  EXPECT_GE(zb.stepSeconds, 12 - 1e-6);
  // One stage: nothing to hide.
  p.devices = 1;
  PlanShape one{1, 1, 1, 4, {0}};
  p.schedule = "zb-h1";
  double zbOne = evaluatePlan(p, one).stepSeconds;
  p.schedule = "1f1b";
  EXPECT_NEAR(zbOne, evaluatePlan(p, one).stepSeconds, 1e-9);
  // The search under zb-h1 reports what evaluatePlan says of its choice.
  p.devices = 2;
  p.schedule = "zb-h1";
  Result r = searchAutoPlan(p);
  ASSERT_EQ(r.error, "");
  EXPECT_NEAR(evaluatePlan(p, r.shape).stepSeconds, r.stepSeconds,
              1e-9 * r.stepSeconds);
}

// searchMixedStages against a brute force over every cut and every stage's
// choice of variant: random steps of 4-6 units cut into 2-3 stages under
// 1F1B with 1, 2 or 4 micro-batches, each unit as is (variant 0) or with
// its activations recomputed (variant 1: a quarter of the kept
// activations, the forward run again in the backward), the memory the
// median peak over all those plans. The search keeps the fastest plan that
// fits; it beats the fastest plan that recomputes every stage (on all 48
// instances here), and its cut is not that plan's on a third of them.
TEST(AutoPlanSearch, MixedStagesMatchABruteForceOverCutsAndVariants) {
  std::string spec = writeSpec("mixed", 1e12, 1e-6, 1e-6);
  int faster = 0, moved = 0, fitted = 0;
  for (unsigned seed = 0; seed < 48; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> draw(1, 10);
    size_t n = 4 + seed % 3;
    int64_t pp = 2 + seed % 2, m = int64_t(1) << (seed % 3);
    Problem plain = smallProblem(spec, 8);
    plain.devices = pp;
    Problem saver = plain;
    for (size_t u = 0; u < n; ++u) {
      Unit unit;
      unit.name = "h." + std::to_string(u);
      unit.paramBytes = 1e5 * draw(rng);
      unit.stateBytes = 2 * unit.paramBytes;
      unit.largestParamBytes = unit.paramBytes;
      unit.params = 1;
      unit.actBytes = 1e5 * draw(rng) * draw(rng);
      plain.units.push_back(unit);
      unit.actBytes /= 4;
      saver.units.push_back(unit);
      double flops = 1e9 * draw(rng);
      for (bool backward : {false, true}) {
        OpCost c;
        c.unit = int(u);
        c.perMicroBatch = true;
        c.flops = backward ? 2 * flops : flops;
        c.backward = backward;
        plain.ops.push_back(c);
        saver.ops.push_back(c);
      }
      OpCost again = saver.ops.back();
      again.flops = flops;
      saver.ops.push_back(again);
    }
    std::vector<Problem> variants = {plain, saver};
    // Every cut, and every stage's variant.
    struct Plan {
      std::vector<size_t> starts;
      std::vector<int> unitVariant;
    };
    std::vector<Plan> plans;
    std::vector<size_t> starts(size_t(pp), 0);
    std::function<void(int64_t, size_t)> each = [&](int64_t i, size_t from) {
      if (i == pp) {
        for (int mask = 0; mask < (1 << pp); ++mask) {
          Plan plan{starts, std::vector<int>(n)};
          for (int64_t s = 0; s < pp; ++s)
            for (size_t u = starts[size_t(s)];
                 u < (s + 1 < pp ? starts[size_t(s + 1)] : n); ++u)
              plan.unitVariant[u] = (mask >> s) & 1;
          plans.push_back(plan);
        }
        return;
      }
      for (size_t u = from; u + size_t(pp - i) <= n; ++u) {
        starts[size_t(i)] = u;
        each(i + 1, u + 1);
      }
    };
    each(1, 1);
    auto mix = [&](const std::vector<int> &unitVariant) {
      Problem p = plain;
      p.ops.clear();
      for (size_t u = 0; u < n; ++u)
        p.units[u] = variants[size_t(unitVariant[u])].units[u];
      for (const Problem &v : variants)
        for (const OpCost &c : v.ops)
          if (&v == &variants[size_t(unitVariant[size_t(c.unit)])])
            p.ops.push_back(c);
      return p;
    };
    std::vector<double> peaks;
    for (const Plan &plan : plans) {
      StepEvaluation e = evaluatePlan(mix(plan.unitVariant),
                                      PlanShape{1, 1, pp, m, plan.starts});
      ASSERT_EQ(e.error, "");
      double peak = 0;
      for (const StagePrediction &st : e.stages)
        peak = std::max(peak, st.memoryBytes);
      peaks.push_back(peak);
    }
    std::vector<double> sorted = peaks;
    std::sort(sorted.begin(), sorted.end());
    double memory = sorted[sorted.size() / 2];
    for (Problem &v : variants)
      v.memoryBytes = memory;
    double best = std::numeric_limits<double>::infinity(), bestSaver = best;
    std::vector<size_t> saverCut;
    for (const Plan &plan : plans) {
      Problem p = mix(plan.unitVariant);
      p.memoryBytes = memory;
      StepEvaluation e = evaluatePlan(p, PlanShape{1, 1, pp, m, plan.starts});
      if (!e.fits)
        continue;
      best = std::min(best, e.stepSeconds);
      if (std::count(plan.unitVariant.begin(), plan.unitVariant.end(), 1) ==
              int64_t(n) &&
          e.stepSeconds < bestSaver) {
        bestSaver = e.stepSeconds;
        saverCut = plan.starts;
      }
    }
    MixedPlan mixed = searchMixedStages(variants, PlanShape{1, 1, pp, m, {}});
    if (best == std::numeric_limits<double>::infinity()) {
      EXPECT_NE(mixed.error, "");
      continue;
    }
    ASSERT_EQ(mixed.error, "");
    ++fitted;
    EXPECT_NEAR(mixed.evaluation.stepSeconds, best, 1e-12 * best);
    EXPECT_TRUE(mixed.evaluation.fits);
    // What it reports is the mix evaluated as any plan.
    StepEvaluation again = evaluatePlan(mixed.problem, mixed.shape);
    EXPECT_DOUBLE_EQ(again.stepSeconds, mixed.evaluation.stepSeconds);
    EXPECT_EQ(mixed.problem.ops.size(),
              plain.ops.size() +
                  size_t(std::count(mixed.unitVariant.begin(),
                                    mixed.unitVariant.end(), 1)));
    faster += mixed.evaluation.stepSeconds < bestSaver * (1 - 1e-9);
    moved += !saverCut.empty() && mixed.shape.stageStarts != saverCut;
  }
  EXPECT_GT(fitted, 24);
  EXPECT_GT(faster, 24);
  EXPECT_GT(moved, 8);
  // The variants must be the same step.
  Problem a = smallProblem(spec, 8), b = a;
  a.units.resize(2);
  b.units.resize(3);
  EXPECT_EQ(searchMixedStages({}, PlanShape{1, 1, 1, 1, {0}}).error,
            "no variants of the step to mix");
  EXPECT_EQ(searchMixedStages({a, b}, PlanShape{1, 1, 1, 1, {0}}).error,
            "the variants of the step have different units");
  EXPECT_EQ(searchMixedStages({a}, PlanShape{1, 1, 3, 1, {0}}).error,
            "need 1 to 2 stages");
  a.schedule = "zb-v";
  EXPECT_EQ(searchMixedStages({a}, PlanShape{1, 1, 2, 1, {0, 1}}).error,
            "stages are mixed one per device, not virtual (zb-v)");
}

// A constraint that puts the embedding and the head on every device (an
// interlaced pipeline): the search plans pipelines (pp >= 2) of the three
// layers only and keeps the fastest plan that fits by
// evaluateInterlacedPlan, the same as a brute force over every mesh,
// micro-batch count and cut, with and without the table split over pp;
// its stages name the layers. On every device pp splits each micro-batch's
// piece of the batch too, so dp x micro-batches x pp divides the batch.
TEST(AutoPlanSearch, ConstrainedSearchPlansInterlacedPipelines) {
  std::string spec = writeSpec("everysearch", 1e12, 1e-6, 1e-6);
  Problem p = smallProblem(spec, 8);
  p.devices = 4;
  const char *names[] = {"(before the layers)", "h.0", "h.1", "h.2",
                         "(after the layers)"};
  double work[] = {2e9, 1e10, 1.4e10, 8e9, 6e9};
  for (int u = 0; u < 5; ++u) {
    Unit unit;
    unit.name = names[u];
    unit.paramBytes = u == 0 || u == 4 ? 4e5 : 1e5;
    unit.stateBytes = 2 * unit.paramBytes;
    unit.largestParamBytes = unit.paramBytes;
    unit.params = 1;
    unit.actBytes = 4e3;
    p.units.push_back(unit);
    OpCost c;
    c.unit = u;
    c.perMicroBatch = true;
    c.flops = work[u];
    c.batchBytes = 1e3;
    p.ops.push_back(c);
    if (u > 0)
      p.edges.push_back({u - 1, u, 3e3});
  }
  p.everyDevice = {true, false, false, false, true};
  // As is, and with the embedding's table split over pp (a vocabulary
  // split: each plan's pp divides it).
  for (bool vocab : {false, true}) {
    SCOPED_TRACE(vocab ? "vocabulary split" : "batch split");
    p.units[0].ppSplitParamBytes = vocab ? 4e5 : 0;
    p.units[0].ppSplitStateBytes = vocab ? 8e5 : 0;
    Result r = searchAutoPlan(p);
    ASSERT_EQ(r.error, "");
    EXPECT_GE(r.shape.pp, 2);
    ASSERT_EQ(r.stages.size(), size_t(r.shape.pp));
    EXPECT_EQ(8 % (r.shape.dp * r.shape.microBatches * r.shape.pp), 0);
    EXPECT_EQ(r.stages.front().firstUnit, 1u);
    EXPECT_EQ(r.stages.back().lastUnit, 3u);
    StepEvaluation again = evaluateInterlacedPlan(p, r.shape, p.everyDevice);
    ASSERT_EQ(again.error, "");
    EXPECT_DOUBLE_EQ(again.stepSeconds, r.stepSeconds);
    double best = std::numeric_limits<double>::infinity();
    for (int64_t d : {1, 2}) {
      int64_t pp = 4 / d;
      for (int64_t m = 1; m <= 8 / d; ++m) {
        if ((8 / d) % m != 0 || (8 / d / m) % pp != 0)
          continue;
        std::vector<std::vector<size_t>> cuts =
            pp == 2 ? std::vector<std::vector<size_t>>{{1, 2}, {1, 3}}
                    : std::vector<std::vector<size_t>>{};
        for (const std::vector<size_t> &cut : cuts) {
          StepEvaluation e = evaluateInterlacedPlan(
              p, PlanShape{d, 1, pp, m, cut}, p.everyDevice);
          ASSERT_EQ(e.error, "");
          if (e.fits)
            best = std::min(best, e.stepSeconds);
        }
      }
    }
    EXPECT_DOUBLE_EQ(r.stepSeconds, best);
  }
  // A batch of 2: dp2 x pp2 leaves one row per replica, which pp cannot
  // split on every device; pp4 needs four pipelined units.
  p.batch = 2;
  EXPECT_NE(searchAutoPlan(p).error, "");
  p.batch = 8;
  // pp = 4 needs four pipelined units: there are three.
  p.fixedPp = 4;
  EXPECT_NE(searchAutoPlan(p).error, "");
}
