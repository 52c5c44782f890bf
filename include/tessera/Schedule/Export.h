//===- Export.h - Schedule output: JSON, Chrome trace, ASCII -*- C++ -*-===//
//
// The formats a user reads a schedule in: the SCHEDULE.json of the CLI, a
// Chrome/Perfetto trace (one track per device) and an ASCII timeline.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_SCHEDULE_EXPORT_H
#define TESSERA_SCHEDULE_EXPORT_H

#include "tessera/Schedule/Placement.h"
#include "tessera/Schedule/Schedule.h"

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace tessera::schedule {

/// The summary written beside a schedule.
struct ScheduleSummary {
  int64_t period = 0;
  int64_t lowerBound = 0;
  int64_t makespan = 0;
  std::vector<int64_t> peakMemory;
};

/// {"period", "lower_bound", "makespan", "peak_memory", "micro_batches",
///  "blocks": [{"micro", "id", "start"}]} with blocks sorted by start time,
/// then micro-batch, then id; start times relative to the first start.
nlohmann::ordered_json scheduleToJson(const PlacementGraph &graph,
                                      const Schedule &schedule,
                                      const ScheduleSummary &summary);

/// Chrome trace event format (chrome://tracing, ui.perfetto.dev): one
/// complete event per block and device, one thread per device; one time step
/// is shown as one microsecond.
nlohmann::ordered_json chromeTrace(const PlacementGraph &graph,
                                   const Schedule &schedule);

/// JSON text with one array element per line (schedules and traces have
/// thousands of small objects: one per line stays readable and diffable).
std::string dumpJsonLines(const nlohmann::ordered_json &json);

/// One line per device, one character per time step, over the first `width`
/// steps: a digit d is a forward of a micro-batch = d (mod 10), a letter a-j
/// a backward (a = 0 ... j = 9, mod 10), A-J a weight gradient, '.' idle.
std::string asciiTimeline(const PlacementGraph &graph, const Schedule &schedule,
                          int64_t width);

/// The median start-to-start distance of consecutive micro-batches of the
/// first block: the steady-state period of a schedule that was not built
/// from a repetend (built-ins, greedy rules).
int64_t observedPeriod(const PlacementGraph &graph, const Schedule &schedule);

} // namespace tessera::schedule

#endif // TESSERA_SCHEDULE_EXPORT_H
