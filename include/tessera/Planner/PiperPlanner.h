//===- PiperPlanner.h - Piper-style multidimensional planner ----*- C++ -*-===//
//
// Splits a layer graph into pipeline stages, each with a tensor-parallel
// degree t, a data-parallel degree d and a per-node choice of activation
// recomputation, under a per-device memory limit. Two objectives:
//
//  - Objective::Piper: the time per sample of the slowest stage, exactly
//    Piper's objective, memory and communication terms (numbers comparable
//    with Piper's; the per-stage configuration choice is exact where Piper's
//    is greedy, so results are never worse).
//  - Objective::Iteration (default): the time of one iteration, the slowest
//    stage's time per sample times (N + sum d - min d), i.e. including the
//    fill and drain of the pipeline that Piper's objective ignores.
//
// The search is a feasibility dynamic program over downsets driven by a
// search on the objective value; see docs/planner.md for the algorithm.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_PLANNER_PIPERPLANNER_H
#define TESSERA_PLANNER_PIPERPLANNER_H

#include "tessera/Planner/PiperCostModel.h"
#include "tessera/Planner/PiperInstance.h"
#include "tessera/Planner/StageKnapsack.h"

#include <cstddef>
#include <string>
#include <vector>

namespace tessera::planner {

enum class Objective { Iteration, Piper };

const char *objectiveName(Objective objective);
const char *scheduleName(Schedule schedule);

struct PlannerOptions {
  Objective objective = Objective::Iteration;
  Schedule schedule = Schedule::OneFOneB;
  KnapsackMode knapsack = KnapsackMode::Exact;
  /// Refuse graphs with more downsets than this (the lattice is quadratic).
  size_t maxDownsets = 50000;
  /// Bound on the planner's tables, in bytes: the lattice's pairs of nested
  /// downsets, one 32-byte record per pair and tensor-parallel degree, and
  /// the frontiers at their largest are counted up front and an input that
  /// needs more is refused (Exception) before they are allocated; the caches
  /// filled during the search (knapsack costs, per-d curves) stop growing at
  /// the bound and are recomputed instead. See docs/planner.md.
  size_t maxTableBytes = size_t(2) << 30;
  /// Branch-and-bound nodes per stage knapsack before settling for the best
  /// answer found so far (never worse than Piper's greedy).
  size_t knapsackNodeLimit = 1u << 16;
  /// Cap on feasibility runs of the iteration objective's search.
  size_t maxFeasibilityRuns = 20000;
};

struct PlannedStage {
  std::vector<int> nodeIds;           ///< the file's node ids, ascending
  std::vector<std::string> configIds; ///< chosen configuration per node
  std::vector<int> recomputeIds;      ///< nodes that recompute activations
  int t = 1;
  int d = 1;
  int inFlight = 0; ///< y: micro-batches whose activations the stage holds
  double timePerSample = 0;
  double memoryBytes = 0;
};

struct PlannerStats {
  size_t downsets = 0;
  size_t stagePairs = 0;      ///< nested downset pairs = candidate stages
  size_t feasibilityRuns = 0; ///< dynamic-program passes
  size_t knapsackSolves = 0;
  size_t inexactKnapsacks = 0; ///< solves that hit the node limit
  size_t tableBytes = 0;       ///< tables counted up front (the estimate)
  size_t cacheBytes = 0;       ///< caches filled during the search
  bool cacheFull = false;      ///< the caches reached maxTableBytes
  bool chain = false;
  double cpuSeconds = 0; ///< planning only, not parsing
};

struct Plan {
  Objective objective = Objective::Iteration;
  Schedule schedule = Schedule::OneFOneB;
  std::vector<PlannedStage> stages;        ///< first stage first
  std::vector<StageAssignment> assignment; ///< same plan, internal indices
  double timePerSample = 0;                ///< Piper's cost model
  double iterationTime = 0;
  int devicesUsed = 0;
  int sumD = 0;
  PlannerStats stats;
};

/// Plans \p instance with the limits it carries (maxDevices, memory,
/// bandwidth, mbsInBatch). Throws Exception when the input is invalid or no
/// plan fits in memory.
Plan planPiper(const PiperInstance &instance,
               const PlannerOptions &options = {});

} // namespace tessera::planner

#endif // TESSERA_PLANNER_PIPERPLANNER_H
