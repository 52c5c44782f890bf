//===- Schedule.h - Multi-micro-batch schedules and their validator -*- C++
//-*-//
//
// A schedule places every block of every micro-batch at an integer start
// time. The validator is the single judge of correctness for every scheduler
// in this library (built-ins, greedy policies, the search) and for the tests.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_SCHEDULE_SCHEDULE_H
#define TESSERA_SCHEDULE_SCHEDULE_H

#include "tessera/Schedule/Placement.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessera::schedule {

/// One block of one micro-batch at a start time.
struct Task {
  int micro = 0;
  /// Index into the placement's blocks (not the user id).
  int block = 0;
  int64_t start = 0;
};

struct Schedule {
  int numMicroBatches = 0;
  std::vector<Task> tasks;
};

struct ScheduleStats {
  /// Last end minus first start (0 for an empty schedule).
  int64_t makespan = 0;
  int64_t firstStart = 0;
  /// Per device: the highest memory reached (deltas summed from 0).
  std::vector<int64_t> peakMemory;
  /// Per device: busy steps, first start and last end (0/0 if unused).
  std::vector<int64_t> busy, deviceFirstStart, deviceLastEnd;
  /// Per device: idle steps between its first start and its last end.
  std::vector<int64_t> deviceBubble;
};

struct ValidationReport {
  bool ok() const { return errors.empty(); }
  /// Human-readable violations, the first few of each sort.
  std::vector<std::string> errors;
  ScheduleStats stats;
};

/// Checks that every (micro-batch, block) of micro-batches [0, N) appears
/// exactly once, dependencies hold, no device runs two blocks at once, and
/// (when a limit is given) the memory of every device stays <= the limit at
/// every time.
ValidationReport validateSchedule(const PlacementGraph &graph,
                                  const Schedule &schedule,
                                  std::optional<int64_t> memoryLimit);

/// Statistics only (no checks).
ScheduleStats computeStats(const PlacementGraph &graph,
                           const Schedule &schedule);

/// Task indices of each device, ordered by start time (ties by micro-batch,
/// then block index, so the order is deterministic).
std::vector<std::vector<int>> deviceOrders(const PlacementGraph &graph,
                                           const Schedule &schedule);

/// Re-times a schedule as early as possible while keeping the order of blocks
/// on every device. Memory on a device depends only on that order, so the
/// peak memory per device is unchanged; the makespan never grows. Throws
/// Exception if the orders are inconsistent with dependencies.
Schedule retimeAsap(const PlacementGraph &graph, const Schedule &schedule);

/// Builds a schedule from per-device orders of (micro, block index) pairs by
/// starting each block as early as its dependencies and its devices allow.
/// A block occupying several devices must appear in the order of each.
/// Throws Exception if the orders deadlock.
Schedule
scheduleFromOrders(const PlacementGraph &graph, int numMicroBatches,
                   const std::vector<std::vector<std::pair<int, int>>> &orders);

} // namespace tessera::schedule

#endif // TESSERA_SCHEDULE_SCHEDULE_H
