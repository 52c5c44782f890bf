//===- MemoryModelTest.cpp - Per-device memory ----------------------------===//

#include "tessera/Cost/MemoryModel.h"
#include "tessera/Cost/DeviceSpec.h"

#include <gtest/gtest.h>

using namespace tessera::cost;
using tessera::Exception;

namespace {

TEST(MemoryModel, SumsTheParts) {
  MemoryModelInputs in;
  in.parameterBytes = 2e9;
  in.gradientBytes = 2e9;
  in.optimizerStateBytes = 12e9;
  in.dataParallel = 4;
  in.activationBytesPerMicroBatch = 1e9;
  in.inFlightMicroBatches = 3;
  in.workspaceBytes = 5e8;
  MemoryBreakdown m = deviceMemory(in);
  EXPECT_DOUBLE_EQ(m.optimizerState, 12e9);
  EXPECT_DOUBLE_EQ(m.activations, 3e9);
  EXPECT_DOUBLE_EQ(m.total(), 2e9 + 2e9 + 12e9 + 3e9 + 5e8);
  in.zero1 = true; // optimizer state sharded over the 4 replicas
  m = deviceMemory(in);
  EXPECT_DOUBLE_EQ(m.optimizerState, 3e9);
  EXPECT_DOUBLE_EQ(m.total(), 2e9 + 2e9 + 3e9 + 3e9 + 5e8);
  in.dataParallel = 0;
  EXPECT_THROW(deviceMemory(in), Exception);
}

TEST(MemoryModel, InFlightPerSchedule) {
  // 4 stages, 8 micro-batches.
  EXPECT_EQ(inFlightMicroBatches(PipelineSchedule::OneFOneB, 0, 4, 8), 4);
  EXPECT_EQ(inFlightMicroBatches(PipelineSchedule::OneFOneB, 3, 4, 8), 1);
  EXPECT_EQ(inFlightMicroBatches(PipelineSchedule::OneFOneB, 0, 4, 2), 2);
  EXPECT_EQ(inFlightMicroBatches(PipelineSchedule::GPipe, 2, 4, 8), 8);
  // Interleaved, 2 chunks: first device warms up 2*3 + 1*4 + 1 = 11 chunk
  // forwards = 5.5 full micro-batches, rounded up.
  EXPECT_EQ(
      inFlightMicroBatches(PipelineSchedule::Interleaved1F1B, 0, 4, 16, 2), 6);
  EXPECT_THROW(inFlightMicroBatches(PipelineSchedule::OneFOneB, 4, 4, 8),
               Exception);
  // Piper: stage with d=4 followed by stages summing to 6: ceil(10/4) = 3.
  EXPECT_EQ(piperInFlightMicroBatches(10, 4), 3);
  EXPECT_EQ(piperInFlightMicroBatches(4, 4), 1);
  EXPECT_THROW(piperInFlightMicroBatches(3, 4), Exception);
}

} // namespace
