//===- fuzz-placement.cpp - Tessel placements, then the schedulers --------===//
//
// Seeds: the Tessel workloads. A placement that parses and checks is
// scheduled by 1F1B and by the search with a small node budget and few
// micro-batches, and the result validated, so the schedulers see every
// shape of valid placement the reader lets through.
//
//===----------------------------------------------------------------------===//

#include "tessera/Schedule/Builtins.h"
#include "tessera/Schedule/Placement.h"
#include "tessera/Schedule/ScheduleSearch.h"
#include "tessera/Support/StrictJson.h"

#include <cstddef>
#include <cstdint>
#include <string>

using namespace tessera::schedule;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  try {
    nlohmann::json json = tessera::support::parseJson(
        std::string_view(reinterpret_cast<const char *>(data), size),
        "fuzz.json");
    PlacementGraph graph(parsePlacement(json, "fuzz.json"));
    if (graph.numBlocks() > 24)
      return 0;
    SearchOptions options;
    options.numMicroBatches = 6;
    options.nodeBudget = 20000;
    options.memoryLimit = 1 << 20;
    SearchResult result = searchSchedule(graph, options);
    (void)result;
    // A list schedule of the same placement, checked by the validator.
    Schedule list = greedyListSchedule(graph, 6, GreedyPolicy{});
    (void)validateSchedule(graph, list, options.memoryLimit);
  } catch (const tessera::Exception &) {
  }
  return 0;
}
