//===- PiperInstance.cpp - Parsing and validating Piper's input -----------===//

#include "tessera/Planner/PiperInstance.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <unordered_map>

using json = nlohmann::json;

namespace tessera::planner {

bool PiperConfig::recomputes() const {
  return id != "vanilla" && id.find("recomp") != std::string::npos;
}

namespace {

const json &field(const json &obj, const char *name, const std::string &where) {
  if (!obj.is_object())
    throw PlanError(where + ": expected a JSON object");
  auto it = obj.find(name);
  if (it == obj.end())
    throw PlanError(where + ": missing field '" + name + "'");
  return *it;
}

double number(const json &obj, const char *name, const std::string &where) {
  const json &v = field(obj, name, where);
  if (!v.is_number())
    throw PlanError(where + ": field '" + name + "' must be a number");
  double x = v.get<double>();
  if (!std::isfinite(x))
    throw PlanError(where + ": field '" + name + "' must be finite");
  return x;
}

int integer(const json &obj, const char *name, const std::string &where) {
  const json &v = field(obj, name, where);
  // Piper's files write integers; accept 8.0 but not 8.5.
  if (!v.is_number() || std::floor(v.get<double>()) != v.get<double>() ||
      std::fabs(v.get<double>()) > 2e9)
    throw PlanError(where + ": field '" + name + "' must be an integer");
  return static_cast<int>(v.get<double>());
}

/// Keys of Piper's maps are decimal integers written as strings.
int integerKey(const std::string &key, const std::string &where) {
  size_t pos = 0;
  int value = 0;
  try {
    value = std::stoi(key, &pos);
  } catch (const std::exception &) {
    pos = 0;
  }
  if (pos == 0 || pos != key.size())
    throw PlanError(where + ": key '" + key + "' is not an integer");
  return value;
}

std::map<int, double> syncMap(const json &obj, const char *name,
                              const std::string &where) {
  const json &m = field(obj, name, where);
  if (!m.is_object())
    throw PlanError(where + ": field '" + name + "' must be an object");
  std::map<int, double> out;
  for (auto it = m.begin(); it != m.end(); ++it) {
    if (!it.value().is_number())
      throw PlanError(where + ": " + name + "[" + it.key() +
                      "] must be a number");
    out[integerKey(it.key(), where + ": " + name)] = it.value().get<double>();
  }
  return out;
}

PiperConfig parseConfig(const json &j, const std::string &where) {
  PiperConfig c;
  const json &id = field(j, "id", where);
  if (!id.is_string())
    throw PlanError(where + ": field 'id' must be a string");
  c.id = id.get<std::string>();
  c.timePerSample = number(j, "timePerSample", where);
  c.parameterSize = number(j, "parameterSize", where);
  c.memoryA = number(j, "memoryUsageA", where);
  c.memoryB = number(j, "memoryUsageB", where);
  c.syncFw = syncMap(j, "syncTimeFw", where);
  c.syncBw = syncMap(j, "syncTimeBw", where);
  return c;
}

} // namespace

void PiperInstance::validate() const {
  if (!(maxMemoryPerDevice > 0))
    throw PlanError("maxMemoryPerDevice must be positive");
  if (maxDevices < 1)
    throw PlanError("maxDevices must be at least 1");
  if (!(bandwidth > 0))
    throw PlanError("bandwidth must be positive");
  if (mbsInBatch < 1)
    throw PlanError("mbsInBatch must be at least 1");
  if (nodes.empty())
    throw PlanError("the graph has no nodes");

  std::unordered_map<int, size_t> index;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (!index.emplace(nodes[i].id, i).second)
      throw PlanError("duplicate node id " + std::to_string(nodes[i].id));

  std::vector<std::set<int>> in(nodes.size()), out(nodes.size());
  for (const PiperEdge &e : edges) {
    std::string where =
        "edge " + std::to_string(e.source) + "->" + std::to_string(e.dest);
    if (!index.count(e.source) || !index.count(e.dest))
      throw PlanError(where + ": endpoint is not a node");
    if (e.source == e.dest)
      throw PlanError(where + ": self loop");
    if (!(e.bytes >= 0))
      throw PlanError(where + ": negative communicationCost");
    if (!out[index[e.source]].insert(e.dest).second)
      throw PlanError(where + ": duplicate edge");
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
    throw PlanError("the graph has a cycle");

  for (size_t i = 0; i < nodes.size(); ++i) {
    const PiperNode &n = nodes[i];
    std::string nodeWhere = "node " + std::to_string(n.id);
    if (n.configs.empty())
      throw PlanError(nodeWhere + ": no TMPCs");
    for (const auto &[t, configs] : n.configs) {
      std::string tWhere = nodeWhere + ", t=" + std::to_string(t);
      if (t < 1)
        throw PlanError(tWhere + ": tensor-parallel degree must be >= 1");
      if (configs.empty())
        throw PlanError(tWhere + ": empty list of configurations");
      // The exact stage solver is a two-choice knapsack, as in Piper.
      if (configs.size() > 2)
        throw PlanError(tWhere + ": more than two configurations per degree "
                                 "are not supported");
      std::set<std::string> ids;
      for (const PiperConfig &c : configs) {
        std::string where = tWhere + ", config '" + c.id + "'";
        if (c.id.empty())
          throw PlanError(tWhere + ": empty configuration id");
        if (!ids.insert(c.id).second)
          throw PlanError(where + ": duplicate configuration id");
        if (!(c.timePerSample >= 0) || !(c.parameterSize >= 0) ||
            !(c.memoryA >= 0) || !(c.memoryB >= 0))
          throw PlanError(where + ": times and sizes must be non-negative");
        for (const auto &[u, bytes] : c.syncFw) {
          if (!in[i].count(u))
            throw PlanError(where + ": syncTimeFw names " + std::to_string(u) +
                            ", which has no edge into this node");
          if (!(bytes >= 0))
            throw PlanError(where + ": negative syncTimeFw");
        }
        for (const auto &[w, bytes] : c.syncBw) {
          if (!out[i].count(w))
            throw PlanError(where + ": syncTimeBw names " + std::to_string(w) +
                            ", which has no edge from this node");
          if (!(bytes >= 0))
            throw PlanError(where + ": negative syncTimeBw");
        }
        for (int u : in[i])
          if (!c.syncFw.count(u))
            throw PlanError(where + ": syncTimeFw lacks incoming edge from " +
                            std::to_string(u));
        for (int w : out[i])
          if (!c.syncBw.count(w))
            throw PlanError(where + ": syncTimeBw lacks outgoing edge to " +
                            std::to_string(w));
      }
    }
  }
}

PiperInstance parsePiperInstance(const std::string &jsonText,
                                 const std::string &origin) {
  json j;
  try {
    j = json::parse(jsonText);
  } catch (const json::parse_error &e) {
    throw PlanError(origin + ": malformed JSON: " + e.what());
  }
  if (!j.is_object())
    throw PlanError(origin + ": the top level must be a JSON object");
  PiperInstance ins;
  ins.maxMemoryPerDevice = number(j, "maxMemoryPerDevice", origin);
  ins.maxDevices = integer(j, "maxDevices", origin);
  ins.bandwidth = number(j, "bandwidth", origin);
  // Piper's README calls it maxBatchSize; its code and files use mbsInBatch.
  ins.mbsInBatch = integer(j, "mbsInBatch", origin);

  const json &nodes = field(j, "nodes", origin);
  if (!nodes.is_array())
    throw PlanError(origin + ": 'nodes' must be an array");
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::string where = origin + ": nodes[" + std::to_string(i) + "]";
    PiperNode n;
    n.id = integer(nodes[i], "id", where);
    where = origin + ": node " + std::to_string(n.id);
    if (nodes[i].contains("name") && nodes[i].at("name").is_string())
      n.name = nodes[i].at("name").get<std::string>();
    const json &tmpcs = field(nodes[i], "TMPCs", where);
    if (!tmpcs.is_object())
      throw PlanError(where + ": 'TMPCs' must be an object");
    for (auto it = tmpcs.begin(); it != tmpcs.end(); ++it) {
      int t = integerKey(it.key(), where + ": TMPCs");
      if (!it.value().is_array())
        throw PlanError(where + ": TMPCs[" + it.key() + "] must be an array");
      std::vector<PiperConfig> configs;
      for (size_t c = 0; c < it.value().size(); ++c)
        configs.push_back(
            parseConfig(it.value()[c], where + ": TMPCs[" + it.key() + "][" +
                                           std::to_string(c) + "]"));
      n.configs[t] = std::move(configs);
    }
    ins.nodes.push_back(std::move(n));
  }

  const json &edges = field(j, "edges", origin);
  if (!edges.is_array())
    throw PlanError(origin + ": 'edges' must be an array");
  for (size_t i = 0; i < edges.size(); ++i) {
    std::string where = origin + ": edges[" + std::to_string(i) + "]";
    PiperEdge e;
    e.source = integer(edges[i], "sourceId", where);
    e.dest = integer(edges[i], "destId", where);
    e.bytes = number(edges[i], "communicationCost", where);
    ins.edges.push_back(e);
  }

  try {
    ins.validate();
  } catch (const PlanError &e) {
    throw PlanError(origin + ": " + e.what());
  }
  return ins;
}

PiperInstance loadPiperInstance(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw PlanError("cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return parsePiperInstance(ss.str(), path);
}

} // namespace tessera::planner
