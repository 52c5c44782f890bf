//===- Placement.cpp - Placement parsing and graph checks -----------------===//

#include "tessera/Schedule/Placement.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <queue>
#include <sstream>

using nlohmann::json;

namespace tessera::schedule {

const char *kindName(BlockKind kind) {
  switch (kind) {
  case BlockKind::Forward:
    return "F";
  case BlockKind::Backward:
    return "B";
  case BlockKind::WeightGrad:
    return "W";
  }
  return "?";
}

namespace {

// Fetches an integer field, with a message that names the block and field
// because the user has to find it in a hand-written file.
int64_t getInt(const json &obj, const char *field, const std::string &where,
               bool required = true, int64_t fallback = 0) {
  auto it = obj.find(field);
  if (it == obj.end()) {
    if (!required)
      return fallback;
    throw ScheduleError(where + ": missing field '" + field + "'");
  }
  if (!it->is_number_integer())
    throw ScheduleError(where + ": field '" + field + "' must be an integer");
  return it->get<int64_t>();
}

std::vector<int> getIntList(const json &obj, const char *field,
                            const std::string &where) {
  auto it = obj.find(field);
  if (it == obj.end())
    return {};
  if (!it->is_array())
    throw ScheduleError(where + ": field '" + field + "' must be an array");
  std::vector<int> out;
  for (const json &v : *it) {
    if (!v.is_number_integer())
      throw ScheduleError(where + ": field '" + field + "' must hold integers");
    out.push_back(v.get<int>());
  }
  return out;
}

} // namespace

Placement parsePlacement(const json &root) {
  if (!root.is_object())
    throw ScheduleError("placement: expected a JSON object");
  Placement p;
  if (auto it = root.find("name"); it != root.end() && it->is_string())
    p.name = it->get<std::string>();
  int64_t ndevs = getInt(root, "ndevs", "placement");
  if (ndevs < 1 || ndevs > 4096)
    throw ScheduleError("placement: 'ndevs' must be in [1, 4096], got " +
                        std::to_string(ndevs));
  p.numDevices = static_cast<int>(ndevs);
  auto blocks = root.find("blocks");
  if (blocks == root.end() || !blocks->is_array())
    throw ScheduleError("placement: missing array 'blocks'");
  int pos = 0;
  for (const json &jb : *blocks) {
    std::string where = "block #" + std::to_string(pos++);
    if (!jb.is_object())
      throw ScheduleError(where + ": expected an object");
    Block b;
    b.id = static_cast<int>(getInt(jb, "id", where));
    where = "block " + std::to_string(b.id);
    auto kind = jb.find("kind");
    if (kind == jb.end() || !kind->is_string())
      throw ScheduleError(where + ": missing string field 'kind'");
    std::string k = kind->get<std::string>();
    if (k == "F")
      b.kind = BlockKind::Forward;
    else if (k == "B")
      b.kind = BlockKind::Backward;
    else if (k == "W")
      b.kind = BlockKind::WeightGrad;
    else
      throw ScheduleError(where + ": unknown kind '" + k +
                          "' (expected F, B or W)");
    b.span = getInt(jb, "span", where);
    b.memory = getInt(jb, "memory", where, /*required=*/false, 0);
    b.devices = getIntList(jb, "devices", where);
    b.deps = getIntList(jb, "deps", where);
    p.blocks.push_back(std::move(b));
  }
  // Check now so that a file error is reported with the file, not later.
  (void)PlacementGraph(p);
  return p;
}

Placement loadPlacement(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw ScheduleError("cannot open placement file '" + path + "'");
  json root;
  try {
    root = json::parse(in);
  } catch (const json::parse_error &e) {
    throw ScheduleError("malformed JSON in '" + path + "': " + e.what());
  }
  try {
    return parsePlacement(root);
  } catch (const ScheduleError &e) {
    throw ScheduleError(path + ": " + e.what());
  }
}

json placementToJson(const Placement &p) {
  json blocks = json::array();
  for (const Block &b : p.blocks)
    blocks.push_back({{"id", b.id},
                      {"kind", kindName(b.kind)},
                      {"span", b.span},
                      {"memory", b.memory},
                      {"devices", b.devices},
                      {"deps", b.deps}});
  return {{"name", p.name}, {"ndevs", p.numDevices}, {"blocks", blocks}};
}

PlacementGraph::PlacementGraph(Placement placement)
    : placement_(std::move(placement)) {
  const int n = numBlocks();
  const int ndevs = placement_.numDevices;
  if (ndevs < 1)
    throw ScheduleError("placement: 'ndevs' must be >= 1");
  if (n == 0)
    throw ScheduleError("placement: no blocks");
  for (int i = 0; i < n; ++i)
    idToIndex_.push_back({placement_.blocks[i].id, i});
  std::sort(idToIndex_.begin(), idToIndex_.end());
  for (size_t i = 1; i < idToIndex_.size(); ++i)
    if (idToIndex_[i].first == idToIndex_[i - 1].first)
      throw ScheduleError("placement: duplicate block id " +
                          std::to_string(idToIndex_[i].first));

  preds_.assign(n, {});
  succs_.assign(n, {});
  onDevice_.assign(ndevs, {});
  busy_.assign(ndevs, 0);
  net_.assign(ndevs, 0);
  for (int i = 0; i < n; ++i) {
    const Block &b = placement_.blocks[i];
    std::string where = "block " + std::to_string(b.id);
    if (b.span < 1)
      throw ScheduleError(where + ": span must be >= 1, got " +
                          std::to_string(b.span));
    if (b.devices.empty())
      throw ScheduleError(where + ": occupies no device");
    std::vector<int> devs = b.devices;
    std::sort(devs.begin(), devs.end());
    if (std::adjacent_find(devs.begin(), devs.end()) != devs.end())
      throw ScheduleError(where + ": a device is listed twice");
    for (int d : devs) {
      if (d < 0 || d >= ndevs)
        throw ScheduleError(where + ": device " + std::to_string(d) +
                            " out of range [0, " + std::to_string(ndevs) + ")");
      onDevice_[d].push_back(i);
      busy_[d] += b.span;
      net_[d] += b.memory;
    }
    for (int dep : b.deps) {
      int j = indexOf(dep);
      if (j < 0)
        throw ScheduleError(where + ": unknown dependency " +
                            std::to_string(dep));
      if (j == i)
        throw ScheduleError(where + ": depends on itself");
      if (std::find(preds_[i].begin(), preds_[i].end(), j) != preds_[i].end())
        continue;
      preds_[i].push_back(j);
      succs_[j].push_back(i);
    }
  }

  // Kahn's algorithm with a min-heap keeps the order stable (by index).
  std::vector<int> indeg(n);
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i)
    if ((indeg[i] = static_cast<int>(preds_[i].size())) == 0)
      ready.push(i);
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    topo_.push_back(i);
    for (int s : succs_[i])
      if (--indeg[s] == 0)
        ready.push(s);
  }
  if (static_cast<int>(topo_.size()) != n) {
    std::ostringstream os;
    os << "placement: dependency cycle among blocks";
    for (int i = 0; i < n; ++i)
      if (indeg[i] > 0)
        os << " " << placement_.blocks[i].id;
    throw ScheduleError(os.str());
  }

  lowerBound_ = *std::max_element(busy_.begin(), busy_.end());

  // Longest paths from every block: the minimal start-to-start separation
  // that any schedule must respect (used for pruning by the search).
  distance_.assign(static_cast<size_t>(n) * n, kNoPath);
  for (int a = 0; a < n; ++a) {
    int64_t *row = &distance_[static_cast<size_t>(a) * n];
    row[a] = 0;
    for (int x : topo_) {
      if (row[x] == kNoPath)
        continue;
      for (int s : succs_[x])
        row[s] = std::max(row[s], row[x] + placement_.blocks[x].span);
    }
  }
}

int PlacementGraph::indexOf(int id) const {
  auto it = std::lower_bound(idToIndex_.begin(), idToIndex_.end(),
                             std::make_pair(id, INT32_MIN));
  if (it == idToIndex_.end() || it->first != id)
    return -1;
  return it->second;
}

} // namespace tessera::schedule
