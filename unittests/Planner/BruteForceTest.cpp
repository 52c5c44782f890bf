//===- BruteForceTest.cpp - The planner's optimum equals enumeration ------===//
//
// On small random chains and DAGs, every plan is enumerated and scored from
// the README's formulas; the planner must find exactly the best value in
// both objectives and both schedules, its plan must fit in memory, and it
// must refuse exactly the instances where nothing fits.
//
//===----------------------------------------------------------------------===//

#include "BruteForce.h"

#include "tessera/Planner/PiperPlanner.h"

#include <gtest/gtest.h>

using namespace tessera::planner;
using tessera::Exception;
using namespace tessera::planner::testing;

namespace {

struct Case {
  int nodes;
  bool chain;
  int K;
  int N;
  bool unequalParams;
  bool gpipe;
};

void checkAgainstBruteForce(const Case &c, unsigned seeds) {
  int feasible = 0, infeasible = 0;
  for (unsigned seed = 0; seed < seeds; ++seed) {
    std::mt19937 rng(seed * 7919 + c.nodes * 31 + c.K);
    PiperInstance ins =
        randomInstance(rng, c.nodes, c.chain, c.K, c.N, c.unequalParams);
    BruteForceResult ref = BruteForce(ins, c.gpipe).run();
    for (Objective obj : {Objective::Piper, Objective::Iteration}) {
      PlannerOptions opts;
      opts.objective = obj;
      opts.schedule = c.gpipe ? Schedule::GPipe : Schedule::OneFOneB;
      SCOPED_TRACE("seed " + std::to_string(seed) + " objective " +
                   objectiveName(obj));
      if (ref.plans == 0) {
        EXPECT_THROW(planPiper(ins, opts), Exception);
        continue;
      }
      Plan plan = planPiper(ins, opts);
      double want = obj == Objective::Piper ? ref.bestPiper : ref.bestIteration;
      double got =
          obj == Objective::Piper ? plan.timePerSample : plan.iterationTime;
      EXPECT_NEAR(got, want, 1e-9 * want);
      // The plan is re-scored by the cost model: valid and within memory.
      PiperCostModel model(ins);
      PlanEvaluation ev = model.evaluate(plan.assignment, opts.schedule);
      EXPECT_TRUE(ev.fitsMemory);
      for (const PlannedStage &s : plan.stages)
        EXPECT_LE(s.memoryBytes, ins.maxMemoryPerDevice + 1e-6);
      EXPECT_LE(plan.devicesUsed, ins.maxDevices);
      EXPECT_NEAR(ev.timePerSample, plan.timePerSample, 1e-12);
    }
    (ref.plans ? feasible : infeasible)++;
  }
  // The generator must exercise both outcomes, or the test proves little.
  EXPECT_GT(feasible, 0);
}

TEST(BruteForce, ChainsPiperAndIteration) {
  checkAgainstBruteForce({4, true, 4, 4, false, false}, 40);
  checkAgainstBruteForce({5, true, 6, 6, false, false}, 15);
}

TEST(BruteForce, DagsPiperAndIteration) {
  checkAgainstBruteForce({4, false, 4, 4, false, false}, 40);
  checkAgainstBruteForce({5, false, 6, 6, false, false}, 15);
}

TEST(BruteForce, DataParallelDegreesMustDivideN) {
  // N = 3: d in {1, 3} only, with up to 5 devices.
  checkAgainstBruteForce({4, false, 5, 3, false, false}, 25);
}

TEST(BruteForce, ChoiceDependentResync) {
  // Configurations with different parameter sizes: the best choice then
  // depends on d, which the planner handles on a slower path.
  checkAgainstBruteForce({4, false, 6, 6, true, false}, 30);
}

TEST(BruteForce, GPipeSchedule) {
  checkAgainstBruteForce({4, false, 4, 4, false, true}, 30);
}

TEST(BruteForce, MemoryLimitsAreHonouredAndCanBind) {
  // Shrinking the memory until nothing fits: the optimum only gets worse,
  // and at the end the planner reports that no plan exists.
  std::mt19937 rng(12345);
  PiperInstance ins = randomInstance(rng, 4, false, 4, 4);
  double previous = 0;
  bool sawInfeasible = false;
  for (double scale = 4; scale > 0.01; scale *= 0.7) {
    PiperInstance shrunk = ins;
    shrunk.maxMemoryPerDevice = ins.maxMemoryPerDevice * scale;
    BruteForceResult ref = BruteForce(shrunk).run();
    PlannerOptions opts;
    opts.objective = Objective::Piper;
    if (ref.plans == 0) {
      EXPECT_THROW(planPiper(shrunk, opts), Exception);
      sawInfeasible = true;
      break;
    }
    Plan plan = planPiper(shrunk, opts);
    EXPECT_NEAR(plan.timePerSample, ref.bestPiper, 1e-9 * ref.bestPiper);
    EXPECT_GE(plan.timePerSample, previous * (1 - 1e-12));
    previous = plan.timePerSample;
    for (const PlannedStage &s : plan.stages)
      EXPECT_LE(s.memoryBytes, shrunk.maxMemoryPerDevice + 1e-6);
  }
  EXPECT_TRUE(sawInfeasible);
}

} // namespace
