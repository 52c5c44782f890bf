//===- ProfileDatabase.cpp - Measured operator times ----------------------===//

#include "tessera/Cost/ProfileDatabase.h"
#include "tessera/Cost/Roofline.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

using json = nlohmann::json;

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
  if (!(seconds >= 0))
    throw CostModelError("profile entry for '" + op +
                         "' has a negative or NaN time");
  entries[key(op, dtype, shapes)] = seconds;
}

std::optional<double>
ProfileDatabase::lookup(const std::string &op, const std::string &dtype,
                        const std::vector<Shape> &shapes) const {
  auto it = entries.find(key(op, dtype, shapes));
  if (it == entries.end())
    return std::nullopt;
  return it->second;
}

ProfileDatabase ProfileDatabase::parse(const std::string &jsonText,
                                       const std::string &origin) {
  json j;
  try {
    j = json::parse(jsonText);
  } catch (const json::parse_error &e) {
    throw CostModelError(origin + ": malformed JSON: " + e.what());
  }
  if (!j.is_object() || !j.contains("entries") || !j.at("entries").is_array())
    throw CostModelError(origin +
                         ": expected an object with an 'entries' array");
  ProfileDatabase db;
  if (j.contains("device") && j.at("device").is_string())
    db.deviceName = j.at("device").get<std::string>();
  size_t index = 0;
  for (const json &e : j.at("entries")) {
    std::string where = origin + ": entries[" + std::to_string(index++) + "]";
    if (!e.is_object() || !e.contains("op") || !e.at("op").is_string() ||
        !e.contains("dtype") || !e.at("dtype").is_string() ||
        !e.contains("shapes") || !e.at("shapes").is_array() ||
        !e.contains("seconds") || !e.at("seconds").is_number())
      throw CostModelError(where + ": needs string 'op', string 'dtype', array "
                                   "'shapes' and number 'seconds'");
    std::vector<Shape> shapes;
    for (const json &s : e.at("shapes")) {
      if (!s.is_array())
        throw CostModelError(where + ": each shape must be an array");
      Shape shape;
      for (const json &d : s) {
        if (!d.is_number_integer())
          throw CostModelError(where + ": dimensions must be integers");
        shape.push_back(d.get<int64_t>());
      }
      shapes.push_back(std::move(shape));
    }
    double seconds = e.at("seconds").get<double>();
    if (seconds < 0)
      throw CostModelError(where + ": 'seconds' must be non-negative");
    db.add(e.at("op").get<std::string>(), e.at("dtype").get<std::string>(),
           shapes, seconds);
  }
  return db;
}

ProfileDatabase ProfileDatabase::load(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw CostModelError("cannot read profile database '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path);
}

double estimateOpTime(const DeviceSpec &spec, const ProfileDatabase *profile,
                      const std::string &op, const std::string &dtype,
                      const std::vector<Shape> &shapes, double flops,
                      double bytes) {
  if (profile)
    if (std::optional<double> measured = profile->lookup(op, dtype, shapes))
      return *measured;
  return rooflineTime(spec, flops, bytes, dtype);
}

} // namespace tessera::cost
