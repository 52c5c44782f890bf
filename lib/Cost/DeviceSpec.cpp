//===- DeviceSpec.cpp - Device spec parsing and bundled specs -------------===//

#include "tessera/Cost/DeviceSpec.h"

#include "tessera/Support/StrictJson.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>

namespace tessera::cost {

// Generated from specs/*.json by CMake (BundledSpecs.cpp.in), so the JSON
// files stay the single source of truth and tools need no install path.
struct BundledSpec {
  const char *name;
  const char *text;
};
extern const BundledSpec kBundledSpecs[];
extern const unsigned kNumBundledSpecs;

double DeviceSpec::peakFlopsFor(const std::string &dtype) const {
  auto it = peakFlops.find(dtype);
  if (it == peakFlops.end())
    throw Exception("device spec '" + name + "' has no peak FLOP/s for '" +
                    dtype + "'");
  return it->second;
}

namespace {

using support::JsonObject;
using support::JsonValue;

LinkSpec parseLink(const JsonObject &spec, const char *field) {
  JsonObject l = spec.get(field).getObject({"bandwidth", "latency"}, "a link");
  return LinkSpec{
      l.get("bandwidth")
          .getNumber(JsonValue::Range::Positive, "bytes per second"),
      l.get("latency").getNumber(JsonValue::Range::NonNegative, "seconds")};
}

std::string formatNumber(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

} // namespace

DeviceSpec parseDeviceSpec(const std::string &jsonText,
                           const std::string &origin) {
  using Range = JsonValue::Range;
  nlohmann::json j = support::parseJson(jsonText, origin);
  JsonObject o = JsonValue(j, origin).getObject(
      {"name", "description", "peak_flops", "memory_bandwidth", "memory_bytes",
       "devices_per_node", "intra_node", "inter_node", "op_overhead",
       "compute_slots", "contention", "core_wait", "core_chance", "block_start",
       "overlap_dp_reduction"},
      "a device spec");
  DeviceSpec spec;
  spec.name = o.get("name").getString("the spec's name");
  if (auto d = o.find("description"))
    spec.description = d->getString("a description");
  JsonObject peaks = o.get("peak_flops").getMap("a map from dtype to FLOP/s");
  if (peaks.empty())
    peaks.fail("expected at least one dtype (e.g. \"fp32\": 6.7e13)");
  for (const auto &[dtype, value] : peaks.entries())
    spec.peakFlops[dtype] = value.getNumber(Range::Positive, "FLOP/s");
  spec.memoryBandwidth =
      o.get("memory_bandwidth").getNumber(Range::Positive, "bytes per second");
  spec.memoryBytes = o.get("memory_bytes").getNumber(Range::Positive, "bytes");
  spec.devicesPerNode =
      static_cast<int>(o.get("devices_per_node")
                           .getInt(1, kMaxDevicesPerNode, "a device count"));
  spec.intraNode = parseLink(o, "intra_node");
  spec.interNode = parseLink(o, "inter_node");
  if (auto overhead = o.find("op_overhead"))
    spec.opOverhead = overhead->getNumber(Range::NonNegative, "seconds");
  spec.computeSlots = spec.devicesPerNode;
  if (auto slots = o.find("compute_slots")) {
    spec.computeSlots = slots->getNumber(Range::Positive, "a device count");
    if (spec.computeSlots < 1 || spec.computeSlots > spec.devicesPerNode)
      slots->fail("expected a number in [1, devices_per_node = " +
                  std::to_string(spec.devicesPerNode) + "], got " +
                  formatNumber(spec.computeSlots));
  }
  if (auto contention = o.find("contention")) {
    size_t n = size_t(spec.devicesPerNode);
    for (const JsonValue &v : contention->getArray(
             "one slowdown per count of ranks computing at once", n, n))
      spec.contention.push_back(
          v.getNumber(Range::Positive, "a slowdown (time over alone)"));
  }
  if (auto wait = o.find("core_wait"))
    spec.coreWait = wait->getNumber(Range::NonNegative, "seconds");
  if (auto chance = o.find("core_chance")) {
    spec.coreChance = chance->getNumber(Range::NonNegative, "a probability");
    if (spec.coreChance > 1)
      chance->fail("expected a probability in [0, 1], got " +
                   formatNumber(spec.coreChance));
  }
  if (auto start = o.find("block_start"))
    spec.blockStart = start->getNumber(Range::NonNegative, "seconds");
  if (auto overlap = o.find("overlap_dp_reduction"))
    spec.overlapDpReduction =
        overlap->getBool("whether the dp reduction overlaps the backward");
  return spec;
}

std::vector<std::string> bundledDeviceSpecNames() {
  std::vector<std::string> names;
  for (unsigned i = 0; i < kNumBundledSpecs; ++i)
    names.push_back(kBundledSpecs[i].name);
  return names;
}

std::string bundledDeviceSpecText(const std::string &name) {
  for (unsigned i = 0; i < kNumBundledSpecs; ++i)
    if (name == kBundledSpecs[i].name)
      return kBundledSpecs[i].text;
  return {};
}

DeviceSpec loadDeviceSpec(const std::string &nameOrPath) {
  std::string bundled = bundledDeviceSpecText(nameOrPath);
  if (!bundled.empty())
    return parseDeviceSpec(bundled, nameOrPath);
  std::error_code ec;
  if (!std::filesystem::exists(nameOrPath, ec)) {
    std::string known;
    for (const std::string &n : bundledDeviceSpecNames())
      known += (known.empty() ? "" : ", ") + n;
    throw Exception("unknown device spec '" + nameOrPath +
                    "' (not a bundled spec: " + known +
                    "; not an existing file)");
  }
  return parseDeviceSpec(support::readJsonFileText(nameOrPath, "device spec"),
                         nameOrPath);
}

} // namespace tessera::cost
