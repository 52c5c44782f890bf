//===- HandCheckTest.cpp - The README's hand-computed example -------------===//
//
// bench/workloads/piper/README.md: a 3-node chain embed -> layer -> head,
// only the layer has a t=2 configuration, K=4, M=2e9, B=2.5e10, N=8; all
// nodes in one stage with d=4, t=1 takes 0.033/4 + 4*3*5.81e8/(4*8)/B =
// 0.016965 s per sample and uses 1.773e9 bytes at y=1.
//
//===----------------------------------------------------------------------===//

#include "BruteForce.h"

#include "tessera/Planner/PiperPlanner.h"

#include <gtest/gtest.h>

using namespace tessera::planner;

namespace {

PiperConfig config(const std::string &id, double p, double w, double a,
                   double b) {
  PiperConfig c;
  c.id = id;
  c.timePerSample = p;
  c.parameterSize = w;
  c.memoryA = a;
  c.memoryB = b;
  return c;
}

/// The README gives p and w; a and b are chosen so the total at y=1 is its
/// 1.773e9 (b = 3w for weights, gradients and optimizer state; a = 1e7).
PiperInstance handCheckInstance() {
  PiperInstance ins;
  ins.maxDevices = 4;
  ins.maxMemoryPerDevice = 2e9;
  ins.bandwidth = 2.5e10;
  ins.mbsInBatch = 8;
  ins.edges = {{1, 2, 1e7}, {2, 3, 1e7}};
  PiperNode embed{1, "embed", {}}, layer{2, "layer", {}}, head{3, "head", {}};
  embed.configs[1] = {config("vanilla", 0.002, 4e8, 1e7, 1.2e9)};
  embed.configs[1][0].syncBw[2] = 0;
  layer.configs[1] = {config("vanilla", 0.030, 1.8e8, 1e7, 5.4e8)};
  layer.configs[1][0].syncFw[1] = 0;
  layer.configs[1][0].syncBw[3] = 0;
  layer.configs[2] = {config("vanilla", 0.016, 0.9e8, 0.5e7, 2.7e8)};
  layer.configs[2][0].syncFw[1] = 1e6;
  layer.configs[2][0].syncBw[3] = 1e6;
  head.configs[1] = {config("vanilla", 0.001, 1e6, 1e7, 3e6)};
  head.configs[1][0].syncFw[2] = 0;
  ins.nodes = {embed, layer, head};
  return ins;
}

TEST(HandCheck, SingleStageWithFourReplicas) {
  PiperInstance full = handCheckInstance();
  PiperCostModel model(full);
  StageAssignment all;
  all.nodes = {0, 1, 2};
  all.t = 1;
  all.d = 4;
  all.config = {0, 0, 0};
  PlanEvaluation ev = model.evaluate({all});
  ASSERT_EQ(ev.stages.size(), 1u);
  EXPECT_NEAR(ev.stages[0].computeSeconds / 4, 0.00825, 1e-15);
  EXPECT_NEAR(ev.stages[0].resyncBytes / full.bandwidth, 0.008715, 1e-15);
  EXPECT_NEAR(ev.timePerSample, 0.016965, 1e-15);
  EXPECT_EQ(ev.stages[0].inFlight, 1);
  EXPECT_NEAR(ev.stages[0].memoryBytes, 1.773e9, 1e-3);
  EXPECT_TRUE(ev.fitsMemory);
  EXPECT_EQ(ev.devicesUsed, 4);
  // No bubble with one stage: iteration = N * time per sample.
  EXPECT_NEAR(ev.iterationTime, 8 * 0.016965, 1e-14);
}

TEST(HandCheck, PlannerMatchesEnumerationOnTheExample) {
  PiperInstance ins = handCheckInstance();
  tessera::planner::testing::BruteForceResult ref =
      tessera::planner::testing::BruteForce(ins).run();
  ASSERT_GT(ref.plans, 0);
  PlannerOptions opts;
  opts.objective = Objective::Piper;
  Plan plan = planPiper(ins, opts);
  EXPECT_NEAR(plan.timePerSample, ref.bestPiper, 1e-15);
  EXPECT_LE(plan.timePerSample, 0.016965);
  opts.objective = Objective::Iteration;
  plan = planPiper(ins, opts);
  EXPECT_NEAR(plan.iterationTime, ref.bestIteration, 1e-14);
}

} // namespace
