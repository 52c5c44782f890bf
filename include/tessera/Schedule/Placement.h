//===- Placement.h - Blocks of one micro-batch placed on devices -*- C++
//-*-===//
//
// A placement describes how the blocks of ONE micro-batch (forward, backward,
// weight-gradient pieces of a model) are placed on devices: each block has a
// span, a memory delta applied when it starts, the devices it occupies for its
// whole span and the blocks of the same micro-batch it depends on. It is the
// input of every scheduler in this library (built-ins and the search).
//
// This is a plain C++17 library: no MLIR types, so command-line tools and IR
// passes can share it.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_SCHEDULE_PLACEMENT_H
#define TESSERA_SCHEDULE_PLACEMENT_H

#include "tessera/Support/Result.h"

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace tessera::schedule {

enum class BlockKind { Forward, Backward, WeightGrad };

/// "F", "B" or "W".
const char *kindName(BlockKind kind);

struct Block {
  /// User-visible identifier (the `id` field of the JSON format).
  int id = 0;
  BlockKind kind = BlockKind::Forward;
  /// Time steps the block occupies its devices (>= 1).
  int64_t span = 1;
  /// Change of memory on each of its devices, applied when the block starts.
  int64_t memory = 0;
  /// Devices occupied at once for the whole span (several: tensor parallel).
  std::vector<int> devices;
  /// Ids of blocks of the same micro-batch that must finish before it starts.
  std::vector<int> deps;
};

struct Placement {
  std::string name;
  int numDevices = 0;
  std::vector<Block> blocks;
};

/// Limits of the placement format (docs/schedule.md). Devices and blocks:
/// the graph keeps a blocks x blocks table of path lengths (128 MiB at
/// 4096). Spans and memory deltas: a schedule sums them over at most 2^24
/// block instances (tessera-schedule's limit), which stays far inside
/// int64_t (2^24 x 2^32 = 2^56); the search itself works in a time quantum
/// independent of the spans' magnitude.
constexpr int64_t kMaxPlacementDevices = 4096;
constexpr int64_t kMaxPlacementBlocks = 4096;
constexpr int64_t kMaxBlockSpan = int64_t(1) << 32;
constexpr int64_t kMaxBlockMemory = (int64_t(1) << 31) - 1;

/// Parses the placement format of bench/workloads/tessel (see
/// docs/schedule.md): every key known, every value of its type and range.
/// Throws Exception naming `origin` and the key path of the offending
/// value ("p.json: blocks[3].span: expected ...").
Placement parsePlacement(const nlohmann::json &json,
                         const std::string &origin = "placement");
/// Reads (a regular file of at most 64 MiB) and parses a placement file;
/// throws Exception.
Placement loadPlacement(const std::string &path);
nlohmann::json placementToJson(const Placement &placement);

/// The checked, index-based view of a placement that the schedulers use.
/// Building it verifies the placement: unique ids, known dependencies, an
/// acyclic dependency graph, devices in range, spans >= 1.
class PlacementGraph {
public:
  /// Throws Exception on an invalid placement.
  explicit PlacementGraph(Placement placement);

  const Placement &placement() const { return placement_; }
  int numBlocks() const { return static_cast<int>(placement_.blocks.size()); }
  int numDevices() const { return placement_.numDevices; }
  const Block &block(int index) const { return placement_.blocks[index]; }

  /// Dependencies and dependents as block indices.
  const std::vector<int> &preds(int index) const { return preds_[index]; }
  const std::vector<int> &succs(int index) const { return succs_[index]; }
  /// A topological order of block indices (stable: ties by index).
  const std::vector<int> &topoOrder() const { return topo_; }
  /// Block indices occupying a device.
  const std::vector<int> &blocksOn(int device) const {
    return onDevice_[device];
  }
  /// Busy steps of one micro-batch on a device.
  int64_t busy(int device) const { return busy_[device]; }
  /// Sum of memory deltas of one micro-batch on a device.
  int64_t netMemory(int device) const { return net_[device]; }
  /// W: the largest per-device busy time of one micro-batch, the lower bound
  /// of the steady-state period.
  int64_t lowerBound() const { return lowerBound_; }
  /// Index of the block with the given id, or -1.
  int indexOf(int id) const;
  /// Minimal start-to-start distance from a to b implied by dependency paths
  /// (sum of spans along the longest path, excluding b), or kNoPath.
  int64_t minDistance(int a, int b) const {
    return distance_[static_cast<size_t>(a) * numBlocks() + b];
  }
  static constexpr int64_t kNoPath = INT64_MIN / 4;

private:
  Placement placement_;
  std::vector<std::vector<int>> preds_, succs_, onDevice_;
  std::vector<int> topo_;
  std::vector<int64_t> busy_, net_, distance_;
  std::vector<std::pair<int, int>> idToIndex_;
  int64_t lowerBound_ = 0;
};

} // namespace tessera::schedule

#endif // TESSERA_SCHEDULE_PLACEMENT_H
