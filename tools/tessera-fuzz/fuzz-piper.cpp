//===- fuzz-piper.cpp - Piper's JSON input, then the planner --------------===//
//
// Seeds: the Piper workloads and the hand-check instance. What parses is
// planned when it is small (a few nodes and devices), so the planner's own
// checks see unusual but valid instances; its tables are capped so that a
// valid but huge instance is refused rather than explored.
//
//===----------------------------------------------------------------------===//

#include "tessera/Planner/PiperInstance.h"
#include "tessera/Planner/PiperPlanner.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

using namespace tessera::planner;
using tessera::Exception;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  PiperInstance instance;
  try {
    instance = parsePiperInstance(
        std::string(reinterpret_cast<const char *>(data), size), "fuzz.json");
  } catch (const Exception &) {
    return 0;
  }
  if (instance.nodes.size() > 12)
    return 0;
  instance.maxDevices = std::min(instance.maxDevices, 8);
  instance.mbsInBatch = std::min(instance.mbsInBatch, 64);
  PlannerOptions options;
  options.maxTableBytes = uint64_t(64) << 20;
  try {
    (void)planPiper(instance, options);
  } catch (const Exception &) {
  }
  return 0;
}
