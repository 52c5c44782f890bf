//===- PipelineReplay.h - Replay a pipeline's block order -------*- C++ -*-===//
//
// Replays a schedule's block order (PipelineOrder) with each stage's own
// forward, B and W times: every block starts once its stage is free and
// the block it needs is done (the previous stage's forward of the
// micro-batch, the next stage's backward, its own B before a W). With
// ranks sharing cores, a block that waits for another stage's message also
// waits for its core (CoreWaits). Virtual stages (interleaved, ZB-V) share
// their device: its blocks run one after another. The auto planner prices
// pipelines with it and tessera-calibrate measures the waits' chance
// against it.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_SCHEDULE_PIPELINEREPLAY_H
#define TESSERA_SCHEDULE_PIPELINEREPLAY_H

#include "tessera/Schedule/PipelineOrder.h"

#include <string>
#include <vector>

namespace tessera::schedule {

/// Ranks sharing cores: a stage waiting for a message (polling, yielding)
/// whose core a computing rank holds gets it back when that rank's block
/// ends, or after `wait` seconds (the scheduler's slice). Each rank
/// computing when the message arrives holds the receiver's core with
/// probability `chance`; every device (a stage's ranks) has `stageRanks`
/// ranks. `wait` 0: no waits.
struct CoreWaits {
  double wait = 0;
  double chance = 0;
  double stageRanks = 1;
};

struct ReplayedPipeline {
  std::string error; ///< empty on success
  /// When each stage's last block ends.
  std::vector<double> stageEnds;
  /// When each device's last block ends (one per stage without devices).
  std::vector<double> deviceEnds;
  /// The sum of the blocks' times (without waits).
  double busy = 0;
};

/// Replays `order` (`stages` stages, `micro` micro-batches) with stage s's
/// blocks taking forward[s], backward[s] (B) and weight[s] (W) seconds.
/// `devices` places virtual stages (stage s on device devices[s], from 0;
/// empty: every stage its own device): a device runs its blocks in the
/// order's order, and only a message between devices can wait for a core.
/// With waits, the waits come from a replay without them (each waiting
/// block: chance x stageRanks x the rest of every other device's block
/// running when its message arrives, each at most `wait`), and the order
/// is replayed once more with them.
ReplayedPipeline replayPipeline(const PipelineOrder &order, int stages,
                                int micro, const std::vector<double> &forward,
                                const std::vector<double> &backward,
                                const std::vector<double> &weight,
                                const CoreWaits &waits = {},
                                const std::vector<int> &devices = {});

} // namespace tessera::schedule

#endif // TESSERA_SCHEDULE_PIPELINEREPLAY_H
