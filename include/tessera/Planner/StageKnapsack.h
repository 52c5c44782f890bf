//===- StageKnapsack.h - Per-stage choice of node configurations -*- C++ -*-=//
//
// Inside one stage every node picks one of (at most) two configurations,
// typically "vanilla" (fast, keeps activations) or "activation recomp"
// (slower, keeps almost none), so that the stage fits in device memory at
// its in-flight count y at the least total time. That is a covering 0/1
// knapsack: start from the fastest choice everywhere and buy memory savings
// at the least extra time. Piper answers it with a greedy; this solver is
// exact (branch and bound with the LP bound, identical nodes grouped) and
// always starts from Piper's greedy answer, so it is never worse.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_PLANNER_STAGEKNAPSACK_H
#define TESSERA_PLANNER_STAGEKNAPSACK_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessera::planner {

enum class KnapsackMode {
  Exact,      ///< branch and bound seeded with Piper's greedy
  PiperGreedy ///< Piper's heuristic, kept to reproduce its numbers
};

/// One node's options: cost (any additive time unit) and memory a*y + b.
struct NodeOptions {
  int count = 1; ///< 1 or 2
  double cost[2] = {0, 0};
  double memA[2] = {0, 0};
  double memB[2] = {0, 0};
};

struct StageChoice {
  bool feasible = false;
  double cost = 0;             ///< sum of the chosen options' costs
  double memory = 0;           ///< at the y asked for
  bool exact = true;           ///< false when branch and bound hit its limit
  std::vector<uint8_t> choice; ///< per node: 0 or 1
};

/// Least-cost choice with sum of (memA*y + memB) <= \p memoryLimit.
StageChoice chooseStageConfigs(const std::vector<NodeOptions> &nodes, double y,
                               double memoryLimit, KnapsackMode mode,
                               size_t nodeLimit = 1u << 16);

/// An item of the covering knapsack: switching a node costs \p cost and
/// saves \p weight bytes.
struct CoverItem {
  double cost = 0;
  double weight = 0;
};

struct CoverResult {
  bool feasible = false;
  double cost = 0;
  bool exact = true;
  std::vector<uint8_t> taken;
};

/// min sum cost over subsets with sum weight >= need (need > 0, weights > 0,
/// costs >= 0).
CoverResult solveCoverExact(const std::vector<CoverItem> &items, double need,
                            size_t nodeLimit = 1u << 16);
/// Piper's greedy: best cost per byte first until covered.
CoverResult solveCoverGreedy(const std::vector<CoverItem> &items, double need);

} // namespace tessera::planner

#endif // TESSERA_PLANNER_STAGEKNAPSACK_H
