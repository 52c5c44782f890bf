//===- PiperInstance.cpp - Parsing and validating Piper's input -----------===//

#include "tessera/Planner/PiperInstance.h"

#include "tessera/Support/StrictJson.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <set>
#include <unordered_map>

using json = nlohmann::json;

namespace tessera::planner {

bool PiperConfig::recomputes() const {
  return id != "vanilla" && id.find("recomp") != std::string::npos;
}

namespace {

using support::JsonObject;
using support::JsonValue;
constexpr int64_t kIntMin = std::numeric_limits<int>::min();
constexpr int64_t kIntMax = std::numeric_limits<int>::max();

/// Keys of Piper's maps are decimal integers written as strings ("4").
int integerKey(const JsonObject &map, const std::string &key) {
  size_t digits = key.size() > 0 && key[0] == '-' ? 1 : 0;
  bool ok = key.size() > digits && key.size() - digits <= 10;
  for (size_t i = digits; ok && i < key.size(); ++i)
    ok = std::isdigit(static_cast<unsigned char>(key[i]));
  long long value = ok ? std::stoll(key) : 0;
  if (!ok || value < kIntMin || value > kIntMax)
    map.fail("key '" + key + "' is not an integer in [" +
             std::to_string(kIntMin) + ", " + std::to_string(kIntMax) + "]");
  return static_cast<int>(value);
}

std::map<int, double> syncMap(const JsonObject &config, const char *name) {
  JsonObject m = config.get(name).getMap("a map from node id to bytes");
  std::map<int, double> out;
  for (const auto &[key, value] : m.entries())
    out[integerKey(m, key)] = value.getNumber(JsonValue::Range::NonNegative,
                                              "extra bytes on the edge");
  return out;
}

PiperConfig parseConfig(const JsonValue &j) {
  JsonObject o =
      j.getObject({"id", "timePerSample", "parameterSize", "memoryUsageA",
                   "memoryUsageB", "syncTimeFw", "syncTimeBw"},
                  "a configuration (TMPC)");
  using Range = JsonValue::Range;
  PiperConfig c;
  c.id = o.get("id").getString("a configuration id");
  c.timePerSample =
      o.get("timePerSample").getNumber(Range::NonNegative, "a time");
  c.parameterSize =
      o.get("parameterSize").getNumber(Range::NonNegative, "a size in bytes");
  c.memoryA =
      o.get("memoryUsageA").getNumber(Range::NonNegative, "a size in bytes");
  c.memoryB =
      o.get("memoryUsageB").getNumber(Range::NonNegative, "a size in bytes");
  c.syncFw = syncMap(o, "syncTimeFw");
  c.syncBw = syncMap(o, "syncTimeBw");
  return c;
}

} // namespace

void PiperInstance::validate() const {
  if (!(maxMemoryPerDevice > 0) || !std::isfinite(maxMemoryPerDevice))
    throw Exception("maxMemoryPerDevice must be a finite number > 0");
  if (maxDevices < 1 || maxDevices > kMaxPiperDevices)
    throw Exception("maxDevices must be in [1, " +
                    std::to_string(kMaxPiperDevices) + "]");
  if (!(bandwidth > 0) || !std::isfinite(bandwidth))
    throw Exception("bandwidth must be a finite number > 0");
  if (mbsInBatch < 1 || mbsInBatch > kMaxPiperMicroBatches)
    throw Exception("mbsInBatch must be in [1, " +
                    std::to_string(kMaxPiperMicroBatches) + "]");
  if (nodes.empty())
    throw Exception("the graph has no nodes");

  std::unordered_map<int, size_t> index;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (!index.emplace(nodes[i].id, i).second)
      throw Exception("duplicate node id " + std::to_string(nodes[i].id));

  std::vector<std::set<int>> in(nodes.size()), out(nodes.size());
  for (const PiperEdge &e : edges) {
    std::string where =
        "edge " + std::to_string(e.source) + "->" + std::to_string(e.dest);
    if (!index.count(e.source) || !index.count(e.dest))
      throw Exception(where + ": endpoint is not a node");
    if (e.source == e.dest)
      throw Exception(where + ": self loop");
    if (!(e.bytes >= 0))
      throw Exception(where + ": negative communicationCost");
    if (!out[index[e.source]].insert(e.dest).second)
      throw Exception(where + ": duplicate edge");
    in[index[e.dest]].insert(e.source);
  }

  // Kahn's algorithm: a cycle leaves nodes with positive in-degree.
  std::vector<size_t> indegree(nodes.size());
  std::vector<size_t> ready;
  for (size_t i = 0; i < nodes.size(); ++i)
    if ((indegree[i] = in[i].size()) == 0)
      ready.push_back(i);
  size_t seen = 0;
  while (!ready.empty()) {
    size_t v = ready.back();
    ready.pop_back();
    ++seen;
    for (int w : out[v])
      if (--indegree[index[w]] == 0)
        ready.push_back(index[w]);
  }
  if (seen != nodes.size())
    throw Exception("the graph has a cycle");

  for (size_t i = 0; i < nodes.size(); ++i) {
    const PiperNode &n = nodes[i];
    std::string nodeWhere = "node " + std::to_string(n.id);
    if (n.configs.empty())
      throw Exception(nodeWhere + ": no TMPCs");
    for (const auto &[t, configs] : n.configs) {
      std::string tWhere = nodeWhere + ", t=" + std::to_string(t);
      if (t < 1)
        throw Exception(tWhere + ": tensor-parallel degree must be >= 1");
      // The planner counts devices in int: t times a data-parallel degree
      // (at most min(N, K)) plus the devices already used (at most K).
      int64_t devices =
          int64_t(t) * std::min(mbsInBatch, maxDevices) + int64_t(maxDevices);
      if (devices > std::numeric_limits<int>::max())
        throw Exception(tWhere + ": tensor-parallel degree too large: t x "
                                 "min(mbsInBatch, maxDevices) + maxDevices "
                                 "exceeds 2^31 - 1");
      if (configs.empty())
        throw Exception(tWhere + ": empty list of configurations");
      // The exact stage solver is a two-choice knapsack, as in Piper.
      if (configs.size() > 2)
        throw Exception(tWhere + ": more than two configurations per degree "
                                 "are not supported");
      std::set<std::string> ids;
      for (const PiperConfig &c : configs) {
        std::string where = tWhere + ", config '" + c.id + "'";
        if (c.id.empty())
          throw Exception(tWhere + ": empty configuration id");
        if (!ids.insert(c.id).second)
          throw Exception(where + ": duplicate configuration id");
        if (!(c.timePerSample >= 0) || !(c.parameterSize >= 0) ||
            !(c.memoryA >= 0) || !(c.memoryB >= 0))
          throw Exception(where + ": times and sizes must be non-negative");
        // syncTimeFw has one entry per incoming edge, syncTimeBw one per
        // outgoing edge.
        auto checkSync = [&](const std::map<int, double> &sync,
                             const std::set<int> &edges, const char *key,
                             const char *direction, const char *edge) {
          for (const auto &[node, bytes] : sync) {
            if (!edges.count(node))
              throw Exception(where + ": " + key + " names " +
                              std::to_string(node) + ", which has no edge " +
                              direction + " this node");
            if (!(bytes >= 0))
              throw Exception(where + ": negative " + key);
          }
          for (int node : edges)
            if (!sync.count(node))
              throw Exception(where + ": " + key + " lacks " + edge + " " +
                              std::to_string(node));
        };
        checkSync(c.syncFw, in[i], "syncTimeFw", "into", "incoming edge from");
        checkSync(c.syncBw, out[i], "syncTimeBw", "from", "outgoing edge to");
      }
    }
  }
}

PiperInstance parsePiperInstance(const std::string &jsonText,
                                 const std::string &origin) {
  using Range = JsonValue::Range;
  json j = support::parseJson(jsonText, origin);
  JsonObject top = JsonValue(j, origin).getObject(
      {"maxMemoryPerDevice", "maxDevices", "bandwidth", "mbsInBatch",
       "maxBatchSize", "nodes", "edges"},
      "a Piper input");
  // Piper's README calls it maxBatchSize; its code and files use
  // mbsInBatch, and so do we.
  if (top.has("maxBatchSize"))
    top.fail("unknown key 'maxBatchSize' (Piper's README name; its files "
             "and code, and this reader, use 'mbsInBatch')");
  PiperInstance ins;
  // Piper's files write integers; 8.0 is accepted, 8.5 is not.
  ins.maxMemoryPerDevice =
      top.get("maxMemoryPerDevice").getNumber(Range::Positive, "bytes");
  ins.maxDevices = static_cast<int>(
      top.get("maxDevices").getIntegral(1, kMaxPiperDevices, "a device count"));
  ins.bandwidth =
      top.get("bandwidth").getNumber(Range::Positive, "bytes per second");
  ins.mbsInBatch = static_cast<int>(
      top.get("mbsInBatch")
          .getIntegral(1, kMaxPiperMicroBatches, "a micro-batch count"));

  for (const JsonValue &jn : top.get("nodes").getArray("a list of nodes")) {
    JsonObject o = jn.getObject({"id", "name", "TMPCs"}, "a node");
    PiperNode n;
    n.id = static_cast<int>(
        o.get("id").getIntegral(kIntMin, kIntMax, "a node id"));
    if (auto name = o.find("name"))
      n.name = name->getString("a node name");
    JsonObject tmpcs =
        o.get("TMPCs").getMap("a map from tensor-parallel degree to "
                              "configurations");
    for (const auto &[key, value] : tmpcs.entries()) {
      int t = integerKey(tmpcs, key);
      std::vector<PiperConfig> configs;
      for (const JsonValue &c : value.getArray("a list of configurations"))
        configs.push_back(parseConfig(c));
      n.configs[t] = std::move(configs);
    }
    ins.nodes.push_back(std::move(n));
  }

  for (const JsonValue &je : top.get("edges").getArray("a list of edges")) {
    JsonObject o =
        je.getObject({"sourceId", "destId", "communicationCost"}, "an edge");
    PiperEdge e;
    e.source = static_cast<int>(
        o.get("sourceId").getIntegral(kIntMin, kIntMax, "a node id"));
    e.dest = static_cast<int>(
        o.get("destId").getIntegral(kIntMin, kIntMax, "a node id"));
    e.bytes = o.get("communicationCost").getNumber(Range::NonNegative, "bytes");
    ins.edges.push_back(e);
  }

  try {
    ins.validate();
  } catch (const Exception &e) {
    throw Exception(origin + ": " + e.what());
  }
  return ins;
}

PiperInstance loadPiperInstance(const std::string &path) {
  return parsePiperInstance(support::readJsonFileText(path, "Piper input"),
                            path);
}

} // namespace tessera::planner
