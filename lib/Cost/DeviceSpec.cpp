//===- DeviceSpec.cpp - Device spec parsing and bundled specs -------------===//

#include "tessera/Cost/DeviceSpec.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

using json = nlohmann::json;

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
    throw CostModelError("device spec '" + name + "' has no peak FLOP/s for '" +
                         dtype + "'");
  return it->second;
}

namespace {

double positiveNumber(const json &obj, const char *field,
                      const std::string &where) {
  if (!obj.contains(field))
    throw CostModelError(where + ": missing field '" + field + "'");
  const json &v = obj.at(field);
  if (!v.is_number())
    throw CostModelError(where + ": field '" + field + "' must be a number");
  double x = v.get<double>();
  if (!(x > 0))
    throw CostModelError(where + ": field '" + field + "' must be positive");
  return x;
}

double nonNegativeNumber(const json &obj, const char *field,
                         const std::string &where) {
  if (!obj.contains(field))
    throw CostModelError(where + ": missing field '" + field + "'");
  const json &v = obj.at(field);
  if (!v.is_number() || v.get<double>() < 0)
    throw CostModelError(where + ": field '" + field +
                         "' must be a non-negative number");
  return v.get<double>();
}

LinkSpec parseLink(const json &obj, const char *field,
                   const std::string &where) {
  if (!obj.contains(field) || !obj.at(field).is_object())
    throw CostModelError(where + ": missing object '" + field + "'");
  const json &l = obj.at(field);
  std::string w = where + "." + field;
  return LinkSpec{positiveNumber(l, "bandwidth", w),
                  nonNegativeNumber(l, "latency", w)};
}

} // namespace

DeviceSpec parseDeviceSpec(const std::string &jsonText,
                           const std::string &origin) {
  json j;
  try {
    j = json::parse(jsonText);
  } catch (const json::parse_error &e) {
    throw CostModelError(origin + ": malformed JSON: " + e.what());
  }
  if (!j.is_object())
    throw CostModelError(origin + ": a device spec must be a JSON object");
  DeviceSpec spec;
  if (!j.contains("name") || !j.at("name").is_string())
    throw CostModelError(origin + ": missing string field 'name'");
  spec.name = j.at("name").get<std::string>();
  if (j.contains("description") && j.at("description").is_string())
    spec.description = j.at("description").get<std::string>();
  if (!j.contains("peak_flops") || !j.at("peak_flops").is_object() ||
      j.at("peak_flops").empty())
    throw CostModelError(origin + ": missing non-empty object 'peak_flops'");
  for (auto it = j.at("peak_flops").begin(); it != j.at("peak_flops").end();
       ++it) {
    if (!it.value().is_number() || !(it.value().get<double>() > 0))
      throw CostModelError(origin + ": peak_flops." + it.key() +
                           " must be a positive number");
    spec.peakFlops[it.key()] = it.value().get<double>();
  }
  spec.memoryBandwidth = positiveNumber(j, "memory_bandwidth", origin);
  spec.memoryBytes = positiveNumber(j, "memory_bytes", origin);
  spec.devicesPerNode =
      static_cast<int>(positiveNumber(j, "devices_per_node", origin));
  spec.intraNode = parseLink(j, "intra_node", origin);
  spec.interNode = parseLink(j, "inter_node", origin);
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
  std::ifstream in(nameOrPath);
  if (!in) {
    std::string known;
    for (const std::string &n : bundledDeviceSpecNames())
      known += (known.empty() ? "" : ", ") + n;
    throw CostModelError("'" + nameOrPath +
                         "' is neither a bundled device spec (" + known +
                         ") nor a readable file");
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parseDeviceSpec(ss.str(), nameOrPath);
}

} // namespace tessera::cost
