//===- PipelineReplayTest.cpp - replays of a pipeline order ---------------===//
//
// schedule::replayPipeline against the schedule library (blocks at their
// spans give the library's makespan, virtual stages included) and against
// hand-worked cases (virtual stages sharing a device run one after
// another; a message within a device never waits for a core).
//
//===----------------------------------------------------------------------===//

#include "tessera/Schedule/PipelineReplay.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

using namespace tessera::schedule;

namespace {

struct Times {
  std::vector<double> forward, backward, weight;
  std::vector<int> devices;
};

// Each virtual stage's blocks at the spec's spans, placed as the library
// places them.
Times spans(const PipelineSpec &spec) {
  Times t;
  int stages = spec.stages * spec.chunks;
  for (int s = 0; s < stages; ++s) {
    t.forward.push_back(double(spec.forwardSpan));
    t.backward.push_back(double(spec.backwardSpan));
    t.weight.push_back(double(spec.weightSpan));
    t.devices.push_back(stageDevice(spec, s));
  }
  return t;
}

// At their spans, the blocks end when the library's schedule ends them:
// the replay runs each device's blocks in the library's order and starts
// each as soon as it may, which the built-ins do too.
TEST(PipelineReplay, SpansGiveTheLibrarysMakespanForVirtualStages) {
  struct Case {
    const char *method;
    int stages, chunks;
    bool vShape;
    int64_t f, b, w;
    int micro;
  };
  for (const Case &c :
       std::vector<Case>{{"1f1b", 4, 1, false, 1, 2, 0, 8},
                         {"interleaved", 2, 2, false, 1, 2, 0, 4},
                         {"interleaved", 4, 2, false, 1, 2, 0, 8},
                         {"interleaved", 2, 3, false, 2, 3, 0, 6},
                         {"zb-v", 2, 2, true, 1, 1, 1, 4},
                         {"zb-v", 4, 2, true, 1, 1, 1, 8}}) {
    SCOPED_TRACE(std::string(c.method) + " " + std::to_string(c.stages) +
                 " devices x " + std::to_string(c.chunks));
    PipelineSpec spec;
    spec.stages = c.stages;
    spec.chunks = c.chunks;
    spec.vShape = c.vShape;
    spec.forwardSpan = c.f;
    spec.backwardSpan = c.b;
    spec.weightSpan = c.w;
    PipelineOrder order = pipelineOrder(c.method, spec, c.micro, std::nullopt);
    ASSERT_EQ(order.error, "");
    Times t = spans(spec);
    int virtualStages = c.stages * c.chunks;
    ReplayedPipeline r =
        replayPipeline(order, virtualStages, c.micro, t.forward, t.backward,
                       t.weight, {}, t.devices);
    ASSERT_EQ(r.error, "");
    ASSERT_EQ(r.deviceEnds.size(), size_t(c.stages));
    EXPECT_DOUBLE_EQ(
        *std::max_element(r.deviceEnds.begin(), r.deviceEnds.end()),
        double(order.makespan));
    EXPECT_DOUBLE_EQ(r.busy,
                     double(virtualStages * c.micro * (c.f + c.b + c.w)));
  }
}

// Two stages of 1F1B on one device: every block runs after the one before
// it, 2 micro-batches x 2 stages x (1 s + 2 s) = 12 s; the stages' messages
// stay on the device, so no block waits for a core however long the wait.
// On two devices the same order takes 9 s (stage 0 F0 0-1, F1 1-2; stage 1
// F0 1-2, B0 2-4, F1 4-5, B1 5-7; stage 0 B0 4-6, B1 7-9).
TEST(PipelineReplay, VirtualStagesOnOneDeviceRunOneAfterAnother) {
  PipelineSpec spec;
  spec.stages = 2;
  PipelineOrder order = pipelineOrder("1f1b", spec, 2, std::nullopt);
  ASSERT_EQ(order.error, "");
  std::vector<double> f = {1, 1}, b = {2, 2}, w = {0, 0};
  CoreWaits waits;
  waits.wait = 100;
  waits.chance = 1;
  ReplayedPipeline one = replayPipeline(order, 2, 2, f, b, w, waits, {0, 0});
  ASSERT_EQ(one.error, "");
  ASSERT_EQ(one.deviceEnds.size(), 1u);
  EXPECT_DOUBLE_EQ(one.deviceEnds[0], 12);
  EXPECT_DOUBLE_EQ(one.busy, 12);
  ReplayedPipeline two = replayPipeline(order, 2, 2, f, b, w, {}, {0, 1});
  ASSERT_EQ(two.error, "");
  EXPECT_DOUBLE_EQ(std::max(two.deviceEnds[0], two.deviceEnds[1]), 9);
  // Devices named in full are the default placement, waits included.
  ReplayedPipeline plain = replayPipeline(order, 2, 2, f, b, w, waits);
  ReplayedPipeline named = replayPipeline(order, 2, 2, f, b, w, waits, {0, 1});
  EXPECT_EQ(plain.stageEnds, named.stageEnds);
  EXPECT_EQ(plain.deviceEnds, named.deviceEnds);
  // The waits count: stage 1's F0 arrives at 1 while stage 0 runs F1 to
  // 2 (1 s), and everything after it moves by that second.
  EXPECT_DOUBLE_EQ(std::max(plain.deviceEnds[0], plain.deviceEnds[1]), 10);
}

TEST(PipelineReplay, DevicesMustPlaceEveryStage) {
  PipelineSpec spec;
  spec.stages = 2;
  PipelineOrder order = pipelineOrder("1f1b", spec, 2, std::nullopt);
  std::vector<double> f = {1, 1}, b = {2, 2}, w = {0, 0};
  EXPECT_EQ(replayPipeline(order, 2, 2, f, b, w, {}, {0}).error,
            "need one device per stage");
  EXPECT_EQ(replayPipeline(order, 2, 2, f, b, w, {}, {0, -1}).error,
            "a stage's device must be >= 0");
  EXPECT_EQ(replayPipeline(order, 2, 2, f, b, w, {}, {0, 2}).error,
            "every device from 0 to the last needs a stage");
}

} // namespace
