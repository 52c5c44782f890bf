//===- PipelineOrder.cpp - block order of a pipeline schedule -------------===//

#include "tessera/Schedule/PipelineOrder.h"
#include "tessera/Schedule/ScheduleSearch.h"

#include <algorithm>
#include <exception>

namespace tessera::schedule {

PipelineOrder pipelineOrder(const std::string &method, PipelineSpec spec,
                            int numMicroBatches,
                            std::optional<int64_t> memoryLimit) {
  PipelineOrder out;
  try {
    Placement placement;
    Schedule schedule;
    if (method == "search") {
      placement = makePipelinePlacement(spec);
      PlacementGraph graph(placement);
      SearchOptions options;
      options.numMicroBatches = numMicroBatches;
      if (memoryLimit)
        options.memoryLimit = *memoryLimit;
      SearchResult found = searchSchedule(graph, options);
      if (!found.found) {
        out.error = found.message;
        return out;
      }
      schedule = found.schedule;
      out.period = found.repetend.period;
      out.lowerBound = found.lowerBound;
    } else {
      auto builtin = parseBuiltinMethod(method);
      if (!builtin) {
        out.error = "unknown schedule '" + method +
                    "' (gpipe, 1f1b, interleaved, zb-h1, zb-h2, zb-v, "
                    "search)";
        return out;
      }
      spec = normalizeSpec(*builtin, spec);
      BuiltinSchedule built = buildBuiltin(*builtin, spec, numMicroBatches);
      placement = built.placement;
      schedule = built.schedule;
    }
    PlacementGraph graph(placement);
    ScheduleStats stats = computeStats(graph, schedule);
    out.makespan = stats.makespan;
    out.peakMemory = stats.peakMemory;
    int virtualStages = spec.stages * spec.chunks;
    for (const Task &t : schedule.tasks) {
      OrderedBlock b;
      b.micro = t.micro;
      b.start = t.start;
      b.kind = placement.blocks[t.block].kind;
      b.stage = -1;
      for (int s = 0; s < virtualStages; ++s)
        if (t.block == forwardIndex(spec, s) ||
            t.block == backwardIndex(spec, s) ||
            t.block == weightIndex(spec, s))
          b.stage = s;
      if (b.stage < 0) {
        out.error = "internal: a block of the pipeline placement has no stage";
        return out;
      }
      out.blocks.push_back(b);
    }
    std::stable_sort(out.blocks.begin(), out.blocks.end(),
                     [](const OrderedBlock &a, const OrderedBlock &b) {
                       return a.start != b.start ? a.start < b.start
                                                 : a.stage < b.stage;
                     });
  } catch (const std::exception &e) {
    out.error = e.what();
    out.blocks.clear();
  }
  return out;
}

} // namespace tessera::schedule
