//===- BuiltinsTest.cpp - Built-ins against their published figures -------===//
//
// Bubble = idle time of the busiest-idle device between its first start and
// its last end; the ideal time is one device's work, m * (per micro-batch
// busy time). Memory is in the units of makePipelinePlacement: 1 per stage
// activation without a split backward; with the split (zero-bubble family),
// a forward holds 2 (M_B), B frees 1 and W frees 1 (M_W = M_B / 2).
//
//===----------------------------------------------------------------------===//

#include "tessera/Schedule/Builtins.h"
#include "tessera/Schedule/Schedule.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace tessera::schedule;
using tessera::Exception;

namespace {

struct Checked {
  ScheduleStats stats;
  int64_t maxBubble = 0;
  int64_t maxPeak = 0;
};

Checked check(BuiltinMethod m, PipelineSpec spec, int micro) {
  BuiltinSchedule b = buildBuiltin(m, spec, micro);
  PlacementGraph g(b.placement);
  ValidationReport r = validateSchedule(g, b.schedule, std::nullopt);
  EXPECT_TRUE(r.ok()) << builtinName(m) << ": " << r.errors.front();
  Checked c;
  c.stats = r.stats;
  c.maxBubble = *std::max_element(r.stats.deviceBubble.begin(),
                                  r.stats.deviceBubble.end());
  c.maxPeak =
      *std::max_element(r.stats.peakMemory.begin(), r.stats.peakMemory.end());
  return c;
}

class PipelineSizes : public ::testing::TestWithParam<std::pair<int, int>> {};

TEST_P(PipelineSizes, GPipeAndOneFOneBBubbleIsPMinus1OverM) {
  auto [p, m] = GetParam();
  PipelineSpec spec;
  spec.stages = p;
  spec.forwardSpan = 1;
  spec.backwardSpan = 2;
  const int64_t unit = spec.forwardSpan + spec.backwardSpan;
  for (BuiltinMethod method : {BuiltinMethod::GPipe, BuiltinMethod::OneFOneB}) {
    Checked c = check(method, spec, m);
    // Bubble (p-1)(F+B) over the ideal m(F+B): the ratio (p-1)/m.
    EXPECT_EQ(c.maxBubble, (p - 1) * unit) << builtinName(method);
    EXPECT_EQ(c.stats.makespan, (m + p - 1) * unit) << builtinName(method);
  }
  // Memory: GPipe keeps all m micro-batches, 1F1B p - d on device d.
  EXPECT_EQ(check(BuiltinMethod::GPipe, spec, m).maxPeak, m);
  Checked one = check(BuiltinMethod::OneFOneB, spec, m);
  for (int d = 0; d < p; ++d)
    EXPECT_EQ(one.stats.peakMemory[d], std::min(m, p - d));
}

TEST_P(PipelineSizes, InterleavedBubbleShrinksByChunks) {
  auto [p, m] = GetParam();
  for (int v : {2, 3}) {
    PipelineSpec spec;
    spec.stages = p;
    spec.chunks = v;
    spec.forwardSpan = 1;
    spec.backwardSpan = 2;
    int mm = m - m % p; // Megatron's requirement: m a multiple of p.
    Checked c = check(BuiltinMethod::Interleaved, spec, mm);
    // Same absolute bubble, v times the work: ratio (p-1)/(v m).
    EXPECT_EQ(c.maxBubble, (p - 1) * 3) << "v=" << v;
    EXPECT_EQ(c.stats.busy[0], int64_t(mm) * v * 3);
    // Device d's warm-up holds 2(p-d-1) + (v-1)p chunk activations, +1.
    for (int d = 0; d < p; ++d)
      EXPECT_EQ(c.stats.peakMemory[d],
                std::min<int64_t>(mm * v, 2 * (p - d - 1) + (v - 1) * p + 1));
  }
}

TEST_P(PipelineSizes, ZeroBubbleFamily) {
  auto [p, m] = GetParam();
  PipelineSpec spec;
  spec.stages = p;
  spec.forwardSpan = spec.backwardSpan = spec.weightSpan = 1; // F = B = W
  // 1F1B with B and W fused (span B + W): bubble (p-1)(F+B+W), memory 2p in
  // the split units.
  PipelineSpec fused = spec;
  fused.backwardSpan = 2;
  fused.weightSpan = 0;
  Checked base = check(BuiltinMethod::OneFOneB, fused, m);
  ASSERT_EQ(base.maxBubble, (p - 1) * 3);

  Checked h1 = check(BuiltinMethod::ZBH1, spec, m);
  EXPECT_EQ(h1.maxBubble, (p - 1) * (1 + 1 - 1)); // (p-1)(F+B-W)
  EXPECT_EQ(3 * h1.maxBubble, base.maxBubble);    // a third of 1F1B's
  EXPECT_EQ(h1.maxPeak, 2 * std::min(p, m));      // 1F1B's peak (2 units)

  Checked h2 = check(BuiltinMethod::ZBH2, spec, m);
  EXPECT_EQ(h2.maxBubble, 0);
  EXPECT_LE(h2.maxPeak, 2 * (2 * p - 1)); // (2p-1) M_B

  Checked zv = check(BuiltinMethod::ZBV, spec, m);
  EXPECT_EQ(zv.maxBubble, 0);
  // Chunks are half a stage: 1F1B's p stage activations are 2p chunks.
  EXPECT_LE(zv.maxPeak, 2 * 2 * p);
  EXPECT_EQ(zv.stats.busy[0], int64_t(m) * 2 * 3);
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, PipelineSizes,
    ::testing::Values(std::make_pair(2, 4), std::make_pair(3, 6),
                      std::make_pair(4, 8), std::make_pair(4, 16),
                      std::make_pair(6, 24), std::make_pair(8, 32)));

TEST(BuiltinsTest, InterleavedNeedsMultipleOfStages) {
  PipelineSpec spec;
  spec.stages = 4;
  spec.chunks = 2;
  EXPECT_THROW(buildBuiltin(BuiltinMethod::Interleaved, spec, 6), Exception);
}

TEST(BuiltinsTest, PlacementShapes) {
  PipelineSpec spec;
  spec.stages = 3;
  spec.chunks = 2;
  spec.vShape = true;
  spec.weightSpan = 1;
  Placement p = makePipelinePlacement(spec);
  PlacementGraph g(p);
  EXPECT_EQ(g.numBlocks(), 18);
  // V: stages 0..5 on devices 0 1 2 2 1 0.
  for (int j = 0; j < 6; ++j)
    EXPECT_EQ(g.block(forwardIndex(spec, j)).devices[0], j < 3 ? j : 5 - j);
  EXPECT_EQ(g.preds(backwardIndex(spec, 5)),
            std::vector<int>{forwardIndex(spec, 5)});
  EXPECT_EQ(g.preds(weightIndex(spec, 2)),
            std::vector<int>{backwardIndex(spec, 2)});
  for (int d = 0; d < 3; ++d)
    EXPECT_EQ(g.netMemory(d), 0);
}

TEST(BuiltinsTest, GreedyDeadlockIsAnError) {
  PipelineSpec spec;
  spec.stages = 2;
  PlacementGraph g(makePipelinePlacement(spec));
  GreedyPolicy policy;
  policy.memoryCap = {0, 0};
  EXPECT_THROW(greedyListSchedule(g, 2, policy), Exception);
}

} // namespace
