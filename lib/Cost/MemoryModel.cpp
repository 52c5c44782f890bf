//===- MemoryModel.cpp - Per-device memory of a training stage ------------===//

#include "tessera/Cost/MemoryModel.h"
#include "tessera/Cost/DeviceSpec.h"

#include <algorithm>

namespace tessera::cost {

MemoryBreakdown deviceMemory(const MemoryModelInputs &in) {
  if (in.dataParallel < 1 || in.inFlightMicroBatches < 0)
    throw Exception("memory model: data-parallel degree must be >= 1 "
                    "and in-flight micro-batches >= 0");
  if (in.parameterBytes < 0 || in.gradientBytes < 0 ||
      in.optimizerStateBytes < 0 || in.activationBytesPerMicroBatch < 0 ||
      in.workspaceBytes < 0)
    throw Exception("memory model: sizes must be non-negative");
  MemoryBreakdown m;
  m.parameters = in.parameterBytes;
  m.gradients = in.gradientBytes;
  // ZeRO-1 keeps only this replica's slice of the optimizer state; the
  // parameters and gradients stay replicated.
  m.optimizerState = in.zero1 ? in.optimizerStateBytes / in.dataParallel
                              : in.optimizerStateBytes;
  m.activations = in.activationBytesPerMicroBatch * in.inFlightMicroBatches;
  m.workspace = in.workspaceBytes;
  return m;
}

int inFlightMicroBatches(PipelineSchedule schedule, int stage, int stages,
                         int microBatches, int chunks) {
  if (stages < 1 || stage < 0 || stage >= stages || microBatches < 1 ||
      chunks < 1)
    throw Exception("in-flight micro-batches: bad stage, stage count, "
                    "micro-batch count or chunk count");
  switch (schedule) {
  case PipelineSchedule::GPipe:
    // All forwards run before any backward.
    return microBatches;
  case PipelineSchedule::OneFOneB:
    // Stage i starts its first backward after (stages - i) forwards.
    return std::min(stages - stage, microBatches);
  case PipelineSchedule::Interleaved1F1B: {
    // Megatron's warm-up: 2*(p-i-1) + (v-1)*p chunk-forwards, plus the one
    // in steady state; each chunk holds 1/v of the device's layers.
    int chunkForwards = 2 * (stages - stage - 1) + (chunks - 1) * stages + 1;
    int full = (chunkForwards + chunks - 1) / chunks;
    return std::min(full, microBatches);
  }
  }
  return microBatches;
}

int piperInFlightMicroBatches(int suffixSumOfDataParallel, int dataParallel) {
  if (dataParallel < 1 || suffixSumOfDataParallel < dataParallel)
    throw Exception("in-flight micro-batches: the suffix sum of "
                    "data-parallel degrees must include this stage's");
  return (suffixSumOfDataParallel + dataParallel - 1) / dataParallel;
}

} // namespace tessera::cost
