//===- WorkloadsTest.cpp - The Tessel placements reach P = W --------------===//
//
// The README of bench/workloads/tessel states that a schedule with P = W
// exists at these memory limits; the search must find it (the time targets
// are measured by bench/schedule, not here).
//
//===----------------------------------------------------------------------===//

#include "tessera/Schedule/ScheduleSearch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

using namespace tessera::schedule;

namespace {

struct Case {
  const char *file;
  int64_t memory;
  int64_t W;
};

class Workloads : public ::testing::TestWithParam<Case> {};

TEST_P(Workloads, ReachesLowerBoundWithinMemory) {
  const Case &c = GetParam();
  std::string path = std::string(TESSERA_SCHEDULE_WORKLOADS) + "/" + c.file;
  if (!std::ifstream(path))
    FAIL() << "workload not found: " << path
                  << " (bench/workloads is part of the repository)";
  PlacementGraph g(loadPlacement(path));
  SearchOptions o;
  o.memoryLimit = c.memory;
  o.numMicroBatches = 128;
  SearchResult r = searchSchedule(g, o);
  ASSERT_TRUE(r.found) << r.message;
  EXPECT_EQ(r.lowerBound, c.W);
  EXPECT_EQ(r.repetend.period, c.W);
  ValidationReport v = validateSchedule(g, r.schedule, c.memory);
  EXPECT_TRUE(v.ok()) << v.errors.front();
  EXPECT_LE(
      *std::max_element(v.stats.peakMemory.begin(), v.stats.peakMemory.end()),
      c.memory);
  // Near the ideal 128 W plus one micro-batch's fill and drain.
  EXPECT_LE(v.stats.makespan, 128 * c.W + r.repetend.latency);
}

INSTANTIATE_TEST_SUITE_P(
    Tessel, Workloads,
    ::testing::Values(
        Case{"vshape-d4.json", 4, 4}, Case{"vshape-d4.json", 6, 4},
        Case{"xshape-d4.json", 4, 8}, Case{"xshape-d4.json", 7, 8},
        Case{"mshape-d4.json", 6, 6}, Case{"nnshape-d4.json", 6, 8},
        Case{"kshape-d4.json", 6, 6}, Case{"vshape-d8.json", 8, 4},
        Case{"xshape-d8.json", 20, 8}, Case{"mshape-d8.json", 20, 6},
        Case{"nnshape-d8.json", 20, 8}, Case{"kshape-d8.json", 20, 6}));

} // namespace
