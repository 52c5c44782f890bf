//===- BoundsTest.cpp - The planner's memory is bounded -------------------===//
//
// The planner's tables grow with the pairs of nested downsets (GNMT: 15.5
// million). They are counted before they are allocated and refused above
// PlannerOptions::maxTableBytes; the caches filled during the search stop
// at the same bound and are recomputed beyond it. Sizes here are bytes
// counted by the planner, never seconds or the process's RSS, so the tests
// are deterministic.
//
//===----------------------------------------------------------------------===//

#include "tessera/Planner/Downsets.h"
#include "tessera/Planner/PiperPlanner.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>

using namespace tessera::planner;
using tessera::Exception;

namespace {

PiperInstance workload(const std::string &name, int devices, double memoryGiB,
                       int microBatches) {
  std::string path = std::string(TESSERA_WORKLOADS_DIR) + "/piper/" + name;
  if (!std::ifstream(path))
    throw Exception("missing " + path +
                    " (bench/workloads is part of the repository)");
  PiperInstance ins = loadPiperInstance(path);
  ins.maxDevices = devices;
  ins.maxMemoryPerDevice = memoryGiB * double(1ull << 30);
  if (microBatches > 0)
    ins.mbsInBatch = microBatches;
  ins.bandwidth = 25.0 * double(1ull << 30);
  return ins;
}

/// Tensor-parallel degrees of the instance that fit in its devices.
size_t degreesUpTo(const PiperInstance &ins) {
  std::set<int> ts;
  for (const PiperNode &n : ins.nodes)
    for (const auto &[t, cs] : n.configs)
      if (t <= ins.maxDevices)
        ts.insert(t);
  return ts.size();
}

std::string refusal(const PiperInstance &ins, const PlannerOptions &opts) {
  try {
    planPiper(ins, opts);
  } catch (const Exception &e) {
    return e.what();
  }
  return "";
}

// The tables counted up front are at least one 32-byte record per pair and
// degree plus the pair's index, and with the caches they stay within the
// limit.
TEST(PlannerBounds, TablesAreCountedAndStayWithinTheLimit) {
  struct Case {
    const char *file;
    int devices;
    double memory;
    int micro;
  };
  for (const Case &c : {Case{"bert32a100.json", 64, 8, 1920},
                        Case{"bert32a100.json", 2048, 8, 1920},
                        Case{"resnet.json", 32, 4, 7680}}) {
    for (Objective objective : {Objective::Piper, Objective::Iteration}) {
      SCOPED_TRACE(std::string(c.file) + " k=" + std::to_string(c.devices) +
                   " " + objectiveName(objective));
      PiperInstance ins = workload(c.file, c.devices, c.memory, c.micro);
      PlannerOptions opts;
      opts.objective = objective;
      Plan plan = planPiper(ins, opts);
      EXPECT_GE(plan.stats.tableBytes,
                plan.stats.stagePairs * (4 + 32 * degreesUpTo(ins)));
      EXPECT_LE(plan.stats.tableBytes + plan.stats.cacheBytes,
                opts.maxTableBytes);
      EXPECT_FALSE(plan.stats.cacheFull);
    }
  }
}

// With no room left for caches, the knapsack costs are recomputed: more
// solves, the same plan, and nothing allocated beyond the limit.
TEST(PlannerBounds, FullCachesRecomputeToTheSamePlan) {
  PiperInstance ins = workload("resnet.json", 32, 4, 7680);
  PlannerOptions opts;
  opts.objective = Objective::Piper;
  Plan roomy = planPiper(ins, opts);
  ASSERT_GT(roomy.stats.cacheBytes, 0u);
  opts.maxTableBytes = roomy.stats.tableBytes + 1;
  Plan tight = planPiper(ins, opts);
  EXPECT_TRUE(tight.stats.cacheFull);
  EXPECT_EQ(tight.stats.cacheBytes, 0u);
  EXPECT_GT(tight.stats.knapsackSolves, roomy.stats.knapsackSolves);
  EXPECT_EQ(tight.timePerSample, roomy.timePerSample);
  EXPECT_EQ(tight.iterationTime, roomy.iterationTime);
  ASSERT_EQ(tight.stages.size(), roomy.stages.size());
  for (size_t i = 0; i < roomy.stages.size(); ++i) {
    EXPECT_EQ(tight.stages[i].nodeIds, roomy.stages[i].nodeIds);
    EXPECT_EQ(tight.stages[i].configIds, roomy.stages[i].configIds);
    EXPECT_EQ(tight.stages[i].t, roomy.stages[i].t);
    EXPECT_EQ(tight.stages[i].d, roomy.stages[i].d);
  }
}

// GNMT's 17,914 downsets nest in 15,488,764 pairs: its tables need about
// 540 MiB. Below that it is refused while its lattice is built, with the
// reason and what to do (it used to allocate until the kernel killed it).
TEST(PlannerBounds, GnmtIsRefusedBelowItsTables) {
  PiperInstance ins = workload("gnmt.json", 8, 8, 0);
  PlannerOptions opts;
  opts.maxTableBytes = size_t(256) << 20;
  std::string message = refusal(ins, opts);
  EXPECT_NE(message.find("pairs of nested downsets (17914 downsets)"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("memory limit of 256 MiB"), std::string::npos)
      << message;
  EXPECT_NE(message.find("--max-table-gib"), std::string::npos) << message;
}

// The lattice bounds its own storage as it enumerates: a chain of a million
// nodes has bitsets of 125 KB per downset, so 50,000 downsets (the count
// limit) would be 19 GB of bitsets alone.
TEST(PlannerBounds, LatticeStorageIsBoundedBeforeItIsAllocated) {
  const int n = 1'000'000;
  std::vector<std::vector<int>> chain(n);
  for (int v = 0; v + 1 < n; ++v)
    chain[v].push_back(v + 1);
  const size_t limit = size_t(64) << 20;
  try {
    DownsetLattice lattice(n, chain, 50000, SIZE_MAX, limit, "(test)");
    ADD_FAILURE() << "no error";
  } catch (const Exception &e) {
    std::string m = e.what();
    EXPECT_NE(m.find("downsets of 1000000 nodes; (test)"), std::string::npos)
        << m;
  }
  EXPECT_GE(limit / DownsetLattice::bytesPerDownset(n), 1u);

  // And the nesting lists: a chain of 20 nodes has 21 * 20 / 2 pairs.
  std::vector<std::vector<int>> small(20);
  for (int v = 0; v + 1 < 20; ++v)
    small[v].push_back(v + 1);
  EXPECT_EQ(DownsetLattice(20, small).numPairs(), 210u);
  EXPECT_THROW(DownsetLattice(20, small, 50000, 209), Exception);
  EXPECT_NO_THROW(DownsetLattice(20, small, 50000, 210));
}

} // namespace
