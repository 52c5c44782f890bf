//===- Placement.cpp - Placement parsing and graph checks -----------------===//

#include "tessera/Schedule/Placement.h"
#include "tessera/Support/EnumNames.h"

#include "tessera/Support/StrictJson.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <queue>
#include <sstream>

using nlohmann::json;

namespace tessera::schedule {

namespace {
constexpr support::EnumName<BlockKind> kKindNames[] = {
    {BlockKind::Forward, "F"},
    {BlockKind::Backward, "B"},
    {BlockKind::WeightGrad, "W"}};
} // namespace

const char *kindName(BlockKind kind) {
  return support::enumName(kKindNames, kind);
}

Placement parsePlacement(const json &root, const std::string &origin) {
  using support::JsonValue;
  constexpr int64_t intMin = std::numeric_limits<int>::min();
  constexpr int64_t intMax = std::numeric_limits<int>::max();
  support::JsonObject top =
      JsonValue(root, origin)
          .getObject({"name", "ndevs", "blocks"}, "a placement");
  Placement p;
  if (auto name = top.find("name"))
    p.name = name->getString("the placement's name");
  p.numDevices = static_cast<int>(
      top.get("ndevs").getInt(1, kMaxPlacementDevices, "a device count"));
  std::vector<JsonValue> blocks = top.get("blocks").getArray(
      "the blocks of one micro-batch", 1, kMaxPlacementBlocks);
  for (const JsonValue &jb : blocks) {
    support::JsonObject o = jb.getObject(
        {"id", "kind", "span", "memory", "devices", "deps"}, "a block");
    Block b;
    b.id = static_cast<int>(o.get("id").getInt(intMin, intMax, "a block id"));
    JsonValue kind = o.get("kind");
    std::string k = kind.getString("a block kind");
    if (std::optional<BlockKind> parsed = support::parseEnum(kKindNames, k))
      b.kind = *parsed;
    else
      kind.fail("unknown kind '" + k + "' (expected F, B or W)");
    b.span = o.get("span").getInt(1, kMaxBlockSpan, "a span in time steps");
    if (auto memory = o.find("memory"))
      b.memory =
          memory->getInt(-kMaxBlockMemory, kMaxBlockMemory, "a memory delta");
    for (const JsonValue &d : o.get("devices").getArray("a list of devices"))
      b.devices.push_back(
          static_cast<int>(d.getInt(0, intMax, "a device index")));
    if (auto deps = o.find("deps"))
      for (const JsonValue &d : deps->getArray("a list of block ids"))
        b.deps.push_back(
            static_cast<int>(d.getInt(intMin, intMax, "a block id")));
    p.blocks.push_back(std::move(b));
  }
  // Check now so that a file error is reported with the file, not later.
  try {
    (void)PlacementGraph(p);
  } catch (const Exception &e) {
    throw Exception(origin + ": " + e.what());
  }
  return p;
}

Placement loadPlacement(const std::string &path) {
  return parsePlacement(support::loadJsonFile(path, "placement file"), path);
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
    throw Exception("placement: 'ndevs' must be >= 1");
  if (n == 0)
    throw Exception("placement: no blocks");
  for (int i = 0; i < n; ++i)
    idToIndex_.push_back({placement_.blocks[i].id, i});
  std::sort(idToIndex_.begin(), idToIndex_.end());
  for (size_t i = 1; i < idToIndex_.size(); ++i)
    if (idToIndex_[i].first == idToIndex_[i - 1].first)
      throw Exception("placement: duplicate block id " +
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
      throw Exception(where + ": span must be >= 1, got " +
                      std::to_string(b.span));
    if (b.devices.empty())
      throw Exception(where + ": occupies no device");
    std::vector<int> devs = b.devices;
    std::sort(devs.begin(), devs.end());
    if (std::adjacent_find(devs.begin(), devs.end()) != devs.end())
      throw Exception(where + ": a device is listed twice");
    for (int d : devs) {
      if (d < 0 || d >= ndevs)
        throw Exception(where + ": device " + std::to_string(d) +
                        " out of range [0, " + std::to_string(ndevs) + ")");
      onDevice_[d].push_back(i);
      busy_[d] += b.span;
      net_[d] += b.memory;
    }
    for (int dep : b.deps) {
      int j = indexOf(dep);
      if (j < 0)
        throw Exception(where + ": unknown dependency " + std::to_string(dep));
      if (j == i)
        throw Exception(where + ": depends on itself");
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
    throw Exception(os.str());
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
