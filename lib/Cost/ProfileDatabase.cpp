//===- ProfileDatabase.cpp - Measured operator times ----------------------===//

#include "tessera/Cost/ProfileDatabase.h"
#include "tessera/Cost/Roofline.h"

#include "tessera/Support/StrictJson.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

namespace tessera::cost {

std::string ProfileDatabase::key(const std::string &op,
                                 const std::string &dtype,
                                 const std::vector<Shape> &shapes) {
  // A canonical textual key: shapes are small and the database is looked up
  // once per distinct op, so clarity beats a custom hash.
  std::string k = op + "|" + dtype + "|";
  for (const Shape &s : shapes) {
    k += "[";
    for (size_t i = 0; i < s.size(); ++i)
      k += (i ? "," : "") + std::to_string(s[i]);
    k += "]";
  }
  return k;
}

void ProfileDatabase::add(const std::string &op, const std::string &dtype,
                          const std::vector<Shape> &shapes, double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds))
    throw Exception("profile entry for '" + op +
                    "' has a negative, infinite or NaN time");
  entries[key(op, dtype, shapes)] = seconds;
}

void ProfileDatabase::addRate(const std::string &op, const std::string &dtype,
                              double seconds, double secondsPerFlop) {
  if (!(seconds >= 0) || !std::isfinite(seconds) || !(secondsPerFlop >= 0) ||
      !std::isfinite(secondsPerFlop))
    throw Exception("profile rate for '" + op +
                    "' has a negative, infinite or NaN time");
  rates[op + "|" + dtype] = {seconds, secondsPerFlop};
}

std::optional<double>
ProfileDatabase::lookup(const std::string &op, const std::string &dtype,
                        const std::vector<Shape> &shapes) const {
  auto it = entries.find(key(op, dtype, shapes));
  if (it == entries.end())
    return std::nullopt;
  return it->second;
}

std::optional<double> ProfileDatabase::lookupRate(const std::string &op,
                                                  const std::string &dtype,
                                                  double flops) const {
  auto it = rates.find(op + "|" + dtype);
  if (it == rates.end())
    return std::nullopt;
  return it->second.seconds + flops * it->second.secondsPerFlop;
}

std::optional<double> ProfileDatabase::lookup(const std::string &op,
                                              const std::string &dtype,
                                              const std::vector<Shape> &shapes,
                                              double flops) const {
  if (std::optional<double> exact = lookup(op, dtype, shapes))
    return exact;
  return lookupRate(op, dtype, flops);
}

ProfileDatabase ProfileDatabase::parse(const std::string &jsonText,
                                       const std::string &origin) {
  using support::JsonObject;
  using support::JsonValue;
  nlohmann::json j = support::parseJson(jsonText, origin);
  JsonObject top = JsonValue(j, origin).getObject({"device", "entries"},
                                                  "a profile database");
  ProfileDatabase db;
  if (auto device = top.find("device"))
    db.deviceName = device->getString("a device spec name");
  for (const JsonValue &e :
       top.get("entries").getArray("a list of measurements")) {
    JsonObject o =
        e.getObject({"op", "dtype", "shapes", "seconds", "seconds_per_flop"},
                    "a measurement");
    std::string op = o.get("op").getString("an op name");
    std::string dtype = o.get("dtype").getString("a dtype");
    if (auto perFlop = o.find("seconds_per_flop")) {
      if (o.find("shapes"))
        o.fail("an entry has either 'shapes' (a measurement) or "
               "'seconds_per_flop' (a rate), not both");
      db.addRate(
          op, dtype,
          o.get("seconds").getNumber(JsonValue::Range::NonNegative, "seconds"),
          perFlop->getNumber(JsonValue::Range::NonNegative,
                             "seconds per FLOP"));
      continue;
    }
    std::vector<Shape> shapes;
    for (const JsonValue &s : o.get("shapes").getArray("operand shapes")) {
      Shape shape;
      for (const JsonValue &d : s.getArray("a shape"))
        shape.push_back(d.getInt(0, std::numeric_limits<int64_t>::max(),
                                 "a dimension size"));
      shapes.push_back(std::move(shape));
    }
    double seconds =
        o.get("seconds").getNumber(JsonValue::Range::NonNegative, "seconds");
    db.add(op, dtype, shapes, seconds);
  }
  return db;
}

ProfileDatabase ProfileDatabase::load(const std::string &path) {
  return parse(support::readJsonFileText(path, "profile database"), path);
}

double estimateOpTime(const DeviceSpec &spec, const ProfileDatabase *profile,
                      const std::string &op, const std::string &dtype,
                      const std::vector<Shape> &shapes, double flops,
                      double bytes) {
  if (profile)
    if (std::optional<double> measured =
            profile->lookup(op, dtype, shapes, flops))
      return *measured;
  return rooflineTime(spec, flops, bytes, dtype);
}

} // namespace tessera::cost
