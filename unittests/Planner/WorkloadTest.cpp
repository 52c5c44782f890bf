//===- WorkloadTest.cpp - Piper's own inputs ------------------------------===//
//
// BERT-32 on A100s with 8 GiB, N = 1920 and 25 GiB/s: Piper's published
// plans take 0.02020 s per sample at k = 64. Our Piper-compatible optimum
// must be at most that, and our reimplementation of Piper's greedy must
// land on the same value.
//
//===----------------------------------------------------------------------===//

#include "tessera/Planner/PiperPlanner.h"

#include <gtest/gtest.h>

#include <fstream>

using namespace tessera::planner;

namespace {

std::string workload(const std::string &name) {
  return std::string(TESSERA_WORKLOADS_DIR) + "/piper/" + name;
}

bool exists(const std::string &path) { return std::ifstream(path).good(); }

TEST(Workload, BertAt64DevicesMatchesPiper) {
  std::string path = workload("bert32a100.json");
  if (!exists(path))
    FAIL() << "missing " << path << " (bench/workloads is part of the repository)";
  PiperInstance ins = loadPiperInstance(path);
  ins.maxDevices = 64;
  ins.maxMemoryPerDevice = 8.0 * (1ull << 30);
  ins.mbsInBatch = 1920;
  ins.bandwidth = 25.0 * (1ull << 30);
  PlannerOptions opts;
  opts.objective = Objective::Piper;
  Plan exact = planPiper(ins, opts);
  EXPECT_LE(exact.timePerSample, 0.02020 + 5e-6);
  EXPECT_GE(exact.timePerSample, 0.02020 - 5e-6);
  EXPECT_LE(exact.devicesUsed, 64);
  opts.knapsack = KnapsackMode::PiperGreedy;
  Plan greedy = planPiper(ins, opts);
  EXPECT_LE(exact.timePerSample, greedy.timePerSample * (1 + 1e-12));
  EXPECT_NEAR(greedy.timePerSample, 0.02020, 5e-6);
  // The README's bandwidth 2.5e10 (decimal) gives a different figure; the
  // published numbers need 25 * 2^30.
  ins.bandwidth = 2.5e10;
  opts.knapsack = KnapsackMode::Exact;
  Plan decimal = planPiper(ins, opts);
  EXPECT_GT(std::abs(decimal.timePerSample - 0.02020), 5e-6);
}

TEST(Workload, IterationObjectiveNeverLosesOnItsOwnMeasure) {
  std::string path = workload("bert32a100.json");
  if (!exists(path))
    FAIL() << "missing " << path << " (bench/workloads is part of the repository)";
  PiperInstance ins = loadPiperInstance(path);
  ins.maxDevices = 32;
  ins.maxMemoryPerDevice = 8.0 * (1ull << 30);
  ins.mbsInBatch = 1920;
  ins.bandwidth = 25.0 * (1ull << 30);
  PlannerOptions opts;
  opts.objective = Objective::Piper;
  Plan piper = planPiper(ins, opts);
  opts.objective = Objective::Iteration;
  Plan iter = planPiper(ins, opts);
  EXPECT_LE(iter.iterationTime, piper.iterationTime * (1 + 1e-12));
  EXPECT_GE(iter.timePerSample, piper.timePerSample * (1 - 1e-12));
}

} // namespace
