//===- MemoryModel.h - Per-device memory of a training stage ----*- C++ -*-===//
//
// What one device holds while training its share of a model: parameters,
// gradients, optimizer state (sharded across data-parallel replicas under
// ZeRO-1), the activations of every micro-batch still waiting for its
// backward pass, and kernel workspace. The in-flight count is what couples
// memory to the pipeline schedule, so it is computed here per schedule.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_COST_MEMORYMODEL_H
#define TESSERA_COST_MEMORYMODEL_H

namespace tessera::cost {

enum class PipelineSchedule { OneFOneB, GPipe, Interleaved1F1B };

struct MemoryModelInputs {
  double parameterBytes = 0;      ///< this device's parameter shard
  double gradientBytes = 0;       ///< usually equal to parameterBytes
  double optimizerStateBytes = 0; ///< e.g. 2 fp32 moments + fp32 master copy
  bool zero1 = false;             ///< shard optimizer state across replicas
  int dataParallel = 1;
  double activationBytesPerMicroBatch = 0; ///< stashed for the backward
  int inFlightMicroBatches = 1;
  double workspaceBytes = 0;
};

struct MemoryBreakdown {
  double parameters = 0;
  double gradients = 0;
  double optimizerState = 0;
  double activations = 0;
  double workspace = 0;
  double total() const {
    return parameters + gradients + optimizerState + activations + workspace;
  }
};

MemoryBreakdown deviceMemory(const MemoryModelInputs &in);

/// Micro-batches whose activations stage \p stage (0 = first) of \p stages
/// holds at its peak. 1F1B: stages - stage (capped by the micro-batch count);
/// GPipe: all of them; interleaved 1F1B with \p chunks model chunks per
/// device: the 1F1B count plus the extra warm-up of the other chunks.
int inFlightMicroBatches(PipelineSchedule schedule, int stage, int stages,
                         int microBatches, int chunks = 1);

/// Piper's generalisation of the 1F1B count to stages with data-parallel
/// degrees: ceil(sum of d from this stage to the last / this stage's d).
int piperInFlightMicroBatches(int suffixSumOfDataParallel, int dataParallel);

} // namespace tessera::cost

#endif // TESSERA_COST_MEMORYMODEL_H
