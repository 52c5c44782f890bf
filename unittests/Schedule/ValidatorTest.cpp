//===- ValidatorTest.cpp - The validator catches every violation ----------===//

#include "TestUtil.h"
#include "tessera/Schedule/Schedule.h"

#include <gtest/gtest.h>

using namespace tessera::schedule;
using tessera::Exception;
using namespace tessera::schedule::test;

namespace {

// Two stages, F span 1, B span 2, two micro-batches, run one after another.
Schedule sequential() {
  // Blocks (indices): 0 F dev0, 1 F dev1, 2 B dev1, 3 B dev0.
  Schedule s;
  s.numMicroBatches = 2;
  for (int i = 0; i < 2; ++i) {
    int64_t o = 6 * i;
    s.tasks.push_back({i, 0, o + 0});
    s.tasks.push_back({i, 1, o + 1});
    s.tasks.push_back({i, 2, o + 2});
    s.tasks.push_back({i, 3, o + 4});
  }
  return s;
}

bool mentions(const ValidationReport &r, const std::string &text) {
  for (const std::string &e : r.errors)
    if (e.find(text) != std::string::npos)
      return true;
  return false;
}

TEST(ValidatorTest, AcceptsValidScheduleAndReportsStats) {
  PlacementGraph g(chainPlacement(2, 1, 2));
  ValidationReport r = validateSchedule(g, sequential(), 1);
  EXPECT_TRUE(r.ok()) << r.errors.front();
  EXPECT_EQ(r.stats.makespan, 12);
  EXPECT_EQ(r.stats.peakMemory, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(r.stats.busy, (std::vector<int64_t>{6, 6}));
  // Device 1 runs from 1 to 10 and is busy 6 of those 9 steps.
  EXPECT_EQ(r.stats.deviceBubble[1], 3);
}

TEST(ValidatorTest, CatchesDependencyViolation) {
  PlacementGraph g(chainPlacement(2, 1, 2));
  Schedule s = sequential();
  s.tasks[2].start = 1; // B on dev1 before its forward ends.
  s.tasks[1].start = 2;
  ValidationReport r = validateSchedule(g, s, std::nullopt);
  EXPECT_TRUE(mentions(r, "before its dependency")) << r.errors.size();
}

TEST(ValidatorTest, CatchesOverlap) {
  PlacementGraph g(chainPlacement(2, 1, 2));
  Schedule s = sequential();
  s.tasks[4].start = 5; // micro-batch 1's forward on dev0 during B on dev0.
  ValidationReport r = validateSchedule(g, s, std::nullopt);
  EXPECT_TRUE(mentions(r, "overlaps"));
}

TEST(ValidatorTest, CatchesMemoryOverLimit) {
  PlacementGraph g(chainPlacement(2, 1, 2));
  Schedule s = sequential();
  // Start micro-batch 1's forward before micro-batch 0's backward frees.
  s.tasks[4].start = 1;
  s.tasks[5].start = 4;
  s.tasks[6].start = 5;
  s.tasks[7].start = 7;
  ValidationReport ok = validateSchedule(g, s, 2);
  EXPECT_TRUE(ok.ok()) << ok.errors.front();
  EXPECT_EQ(ok.stats.peakMemory[0], 2);
  ValidationReport r = validateSchedule(g, s, 1);
  EXPECT_TRUE(mentions(r, "memory 2 exceeds the limit 1"));
}

TEST(ValidatorTest, CatchesMissingAndDuplicateTasks) {
  PlacementGraph g(chainPlacement(2, 1, 2));
  Schedule s = sequential();
  s.tasks.pop_back();
  EXPECT_TRUE(mentions(validateSchedule(g, s, std::nullopt), "is missing"));
  s = sequential();
  s.tasks.push_back(s.tasks.front());
  EXPECT_TRUE(
      mentions(validateSchedule(g, s, std::nullopt), "scheduled twice"));
}

TEST(ValidatorTest, MultiDeviceBlockOccupiesAllDevices) {
  Placement p;
  p.numDevices = 2;
  p.blocks.push_back(makeBlock(0, BlockKind::Forward, 2, 1, {0, 1}, {}));
  p.blocks.push_back(makeBlock(1, BlockKind::Backward, 1, -1, {1}, {}));
  PlacementGraph g(p);
  Schedule s;
  s.numMicroBatches = 1;
  s.tasks = {{0, 0, 0}, {0, 1, 1}};
  EXPECT_TRUE(mentions(validateSchedule(g, s, std::nullopt), "overlaps"));
  s.tasks[1].start = 2;
  ValidationReport r = validateSchedule(g, s, 1);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.stats.peakMemory, (std::vector<int64_t>{1, 1}));
}

TEST(ValidatorTest, RetimingKeepsMemoryAndNeverGrowsMakespan) {
  PlacementGraph g(chainPlacement(2, 1, 2));
  Schedule s = sequential();
  for (Task &t : s.tasks)
    t.start = t.start * 3 + 5; // Spread out: still valid, much longer.
  ValidationReport before = validateSchedule(g, s, 1);
  ASSERT_TRUE(before.ok());
  Schedule r = retimeAsap(g, s);
  ValidationReport after = validateSchedule(g, r, 1);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after.stats.peakMemory, before.stats.peakMemory);
  EXPECT_EQ(after.stats.makespan, 12);
  EXPECT_LT(after.stats.makespan, before.stats.makespan);
}

TEST(ValidatorTest, ScheduleFromOrdersDetectsDeadlock) {
  PlacementGraph g(chainPlacement(2, 1, 2));
  // Device 0 runs B before F of the same micro-batch: impossible.
  std::vector<std::vector<std::pair<int, int>>> orders = {{{0, 3}, {0, 0}},
                                                          {{0, 1}, {0, 2}}};
  EXPECT_THROW(scheduleFromOrders(g, 1, orders), Exception);
  orders = {{{0, 0}, {0, 3}}, {{0, 1}, {0, 2}}};
  Schedule s = scheduleFromOrders(g, 1, orders);
  EXPECT_TRUE(validateSchedule(g, s, 1).ok());
  EXPECT_EQ(computeStats(g, s).makespan, 6);
}

} // namespace
