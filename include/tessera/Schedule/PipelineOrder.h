//===- PipelineOrder.h - block order of a pipeline schedule -----*- C++ -*-===//
//
// The compiler's entry into the schedule library: for a pipeline of
// `spec.stages` devices (and `spec.chunks` virtual stages per device), the
// order in which the blocks (virtual stage, F/B/W, micro-batch) of all
// micro-batches start under a built-in schedule or the search. It never
// throws (the compiler is built without exceptions): errors are messages.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_SCHEDULE_PIPELINEORDER_H
#define TESSERA_SCHEDULE_PIPELINEORDER_H

#include "tessera/Schedule/Builtins.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessera::schedule {

struct OrderedBlock {
  int stage = 0; ///< virtual stage
  BlockKind kind = BlockKind::Forward;
  int micro = 0;
  int64_t start = 0;
};

struct PipelineOrder {
  std::string error;                ///< empty on success
  std::vector<OrderedBlock> blocks; ///< by start time, then stage
  int64_t makespan = 0;
  int64_t period = 0;     ///< for the search: the steady-state period P
  int64_t lowerBound = 0; ///< W
  std::vector<int64_t> peakMemory; ///< per device
};

/// `method`: gpipe, 1f1b, interleaved, zb-h1, zb-h2, zb-v or search. The
/// spec's spans weight the blocks; `memoryLimit` bounds the search (per
/// device, in units of the placement's memory deltas).
PipelineOrder pipelineOrder(const std::string &method, PipelineSpec spec,
                            int numMicroBatches,
                            std::optional<int64_t> memoryLimit);

} // namespace tessera::schedule

#endif // TESSERA_SCHEDULE_PIPELINEORDER_H
