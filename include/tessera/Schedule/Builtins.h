//===- Builtins.h - Published pipeline schedules -------------*- C++ -*-===//
//
// The classic schedules for p pipeline stages and m micro-batches, built on
// the standard pipeline placement: GPipe, 1F1B, interleaved 1F1B (v chunks
// per device) and the zero-bubble family (ZB-H1, ZB-H2, ZB-V) that splits
// the backward pass into B (input gradient) and W (weight gradient). They are
// the baselines the search is compared against.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_SCHEDULE_BUILTINS_H
#define TESSERA_SCHEDULE_BUILTINS_H

#include "tessera/Schedule/Placement.h"
#include "tessera/Schedule/Schedule.h"

#include <optional>
#include <string>
#include <vector>

namespace tessera::schedule {

/// The standard pipeline placement: `stages * chunks` model stages in a
/// chain. Stage j runs on device j mod stages (interleaved), or in a V
/// (stage j on device j, then back: 2p-1-j) when vShape is set (2 chunks).
/// Forward +1 memory (activations kept); backward -1, or, when the weight
/// gradient is split out (weightSpan > 0), B 0 and W -1: the activations are
/// needed until W.
struct PipelineSpec {
  int stages = 4;
  int chunks = 1;
  bool vShape = false;
  int64_t forwardSpan = 1;
  int64_t backwardSpan = 2;
  /// 0: no separate weight-gradient block.
  int64_t weightSpan = 0;
};

Placement makePipelinePlacement(const PipelineSpec &spec);

/// Block indices of stage j's forward, backward and weight-gradient blocks in
/// makePipelinePlacement (W is -1 when not split).
int forwardIndex(const PipelineSpec &spec, int stage);
int backwardIndex(const PipelineSpec &spec, int stage);
int weightIndex(const PipelineSpec &spec, int stage);
/// Device of a stage.
int stageDevice(const PipelineSpec &spec, int stage);

enum class BuiltinMethod { GPipe, OneFOneB, Interleaved, ZBH1, ZBH2, ZBV };

/// "gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "zb-v".
const char *builtinName(BuiltinMethod method);
std::optional<BuiltinMethod> parseBuiltinMethod(const std::string &name);

struct BuiltinSchedule {
  Placement placement;
  Schedule schedule;
};

/// Builds a built-in schedule. The spec is adjusted to what the method needs
/// (chunks = 1 for GPipe/1F1B/ZB-H*, vShape and 2 chunks for ZB-V, a split
/// weight gradient for ZB-*); throws Exception on impossible requests
/// (interleaved needs m to be a multiple of p).
BuiltinSchedule buildBuiltin(BuiltinMethod method, PipelineSpec spec,
                             int numMicroBatches);

/// The spec buildBuiltin actually uses for a method.
PipelineSpec normalizeSpec(BuiltinMethod method, PipelineSpec spec);

/// List scheduling of any placement by a priority rule: at every time step,
/// each free device starts the ready block (dependencies done, all its
/// devices free, memory cap respected) that the rule ranks first; one block's
/// micro-batches start in order.
struct GreedyPolicy {
  enum class Order {
    /// Forward before backward (GPipe-like: all forwards stream first).
    ForwardFirst,
    /// Backward before forward, weight gradient last (1F1B-like; W fills
    /// bubbles as in the zero-bubble schedules).
    BackwardFirst,
  };
  Order order = Order::BackwardFirst;
  /// Per-device cap on memory; empty: none. A forward that would exceed it
  /// waits.
  std::vector<int64_t> memoryCap;
  /// Per-device cap on forwards whose backward (B) has not started; empty:
  /// none. This is 1F1B's warm-up rule; it leaves W free to be deferred.
  std::vector<int64_t> forwardCap;
  /// Among ready forwards, prefer the later stage (deeper in the chain), so
  /// that the second chunk of a V starts early.
  bool preferDeepForward = false;
};

/// Throws Exception when the rule deadlocks (for example when the memory
/// cap blocks every device).
Schedule greedyListSchedule(const PlacementGraph &graph, int numMicroBatches,
                            const GreedyPolicy &policy);

} // namespace tessera::schedule

#endif // TESSERA_SCHEDULE_BUILTINS_H
