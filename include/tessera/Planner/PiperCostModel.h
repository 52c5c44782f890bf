//===- PiperCostModel.h - Piper's stage time and memory ---------*- C++ -*-===//
//
// Scores a pipeline plan exactly as Piper does: per stage, compute divided by
// the data-parallel degree, boundary activations (and their gradients) sent
// over one bandwidth, and the data-parallel gradient resync amortised over
// the batch; memory a*y + b per node with y in-flight micro-batches. The
// planner's search and this evaluator must agree, so both live on the same
// compiled view of the instance.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_PLANNER_PIPERCOSTMODEL_H
#define TESSERA_PLANNER_PIPERCOSTMODEL_H

#include "tessera/Planner/PiperInstance.h"

#include <string>
#include <unordered_map>
#include <vector>

namespace tessera::planner {

/// Which micro-batch schedule the plan runs; it decides how many
/// micro-batches' activations a stage holds (y).
enum class Schedule {
  OneFOneB, ///< y = ceil(sum of d from this stage to the last / d) (Piper)
  GPipe     ///< y = N / d: every micro-batch of the replica is in flight
};

/// A stage as the search produces it; nodes are internal indices (the
/// position of the node in PiperInstance::nodes).
struct StageAssignment {
  std::vector<int> nodes;
  int t = 1;
  int d = 1;
  std::vector<int> config; ///< per node: index into its configs for t
};

struct StageEvaluation {
  double timePerSample = 0;
  double computeSeconds = 0; ///< sum of p, before dividing by d
  double edgeBytes = 0;      ///< boundary bytes, before dividing by d
  double resyncBytes = 0;    ///< data-parallel resync bytes per sample
  double memoryBytes = 0;
  int inFlight = 0; ///< y
};

struct PlanEvaluation {
  double timePerSample = 0; ///< Piper's objective: the slowest stage
  double iterationTime = 0; ///< timePerSample * (N + sum d - min d)
  int devicesUsed = 0;
  int sumD = 0;
  bool fitsMemory = true;
  std::vector<StageEvaluation> stages;
};

/// Iteration time of a plan whose slowest stage takes \p timePerSample per
/// sample: N samples at the bottleneck's rate, plus the fill and drain of
/// the pipeline, (sum d - min d) slots (see docs/planner.md for why).
double iterationTime(double timePerSample, int microBatches, int sumD,
                     int minD);

class PiperCostModel {
public:
  /// Validates \p instance (throws Exception) and compiles it.
  explicit PiperCostModel(PiperInstance instance);

  const PiperInstance &instance() const { return ins; }
  int numNodes() const { return static_cast<int>(ins.nodes.size()); }
  /// Internal index of the node with file id \p id; throws when unknown.
  int indexOf(int id) const;

  /// Edges as (other endpoint's index, bytes), per node.
  const std::vector<std::pair<int, double>> &inEdges(int v) const {
    return in[v];
  }
  const std::vector<std::pair<int, double>> &outEdges(int v) const {
    return out[v];
  }
  /// Configurations of node \p v for degree \p t; nullptr when it has none.
  const std::vector<PiperConfig> *configs(int v, int t) const;
  /// All tensor-parallel degrees that appear in the instance, ascending.
  const std::vector<int> &degrees() const { return allDegrees; }

  /// Sync bytes of config \p c of node \p v at degree \p t, aligned with
  /// inEdges(v) / outEdges(v).
  const std::vector<double> &syncFw(int v, int t, int c) const;
  const std::vector<double> &syncBw(int v, int t, int c) const;

  /// The part of a node's time per sample that is divided by d
  /// (compute plus boundary traffic), given which nodes share its stage.
  double alpha(int v, int t, int c, const std::vector<char> &inStage) const;
  /// The part multiplied by (d-1)/d: the gradient resync, 4 w / (N B).
  double beta(int v, int t, int c) const;

  /// Scores \p stages (first stage first). Throws Exception when the plan
  /// breaks a rule (node missing or repeated, edge going backwards, d not
  /// dividing N, too many devices, unknown configuration). Memory overflow
  /// is reported in fitsMemory, not thrown, so callers can inspect it.
  PlanEvaluation evaluate(const std::vector<StageAssignment> &stages,
                          Schedule schedule = Schedule::OneFOneB) const;

private:
  PiperInstance ins;
  std::unordered_map<int, int> index;
  std::vector<std::vector<std::pair<int, double>>> in, out;
  std::vector<int> allDegrees;
  // syncFwAligned[v][t][c]: bytes per incoming edge in inEdges(v) order.
  std::vector<std::unordered_map<int, std::vector<std::vector<double>>>>
      syncFwAligned, syncBwAligned;
};

} // namespace tessera::planner

#endif // TESSERA_PLANNER_PIPERCOSTMODEL_H
