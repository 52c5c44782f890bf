//===- DeviceSpec.h - Hardware description for the cost model ---*- C++ -*-===//
//
// A device spec is the small set of numbers the analytical cost model needs:
// peak arithmetic rate per element type, memory bandwidth and size, and the
// two link classes (inside a node, across nodes) with bandwidth and latency,
// and two terms for hosts where ranks are CPU processes: the fixed cost of an
// op call and how many of a node's ranks compute at full speed at once.
// Specs are JSON so that a user can describe a machine without rebuilding;
// a few are bundled into the library so tools work without any file.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_COST_DEVICESPEC_H
#define TESSERA_COST_DEVICESPEC_H

#include "tessera/Support/Result.h"

#include <map>
#include <string>
#include <vector>

namespace tessera::cost {

/// One class of link: alpha (latency, seconds) and beta's inverse (bytes/s).
struct LinkSpec {
  double bandwidth = 0; ///< bytes per second, one direction
  double latency = 0;   ///< seconds per message
};

struct DeviceSpec {
  std::string name;
  std::string description;
  /// Peak FLOP/s per element type name ("fp32", "bf16", ...).
  std::map<std::string, double> peakFlops;
  double memoryBandwidth = 0; ///< bytes per second
  double memoryBytes = 0;     ///< usable device memory
  int devicesPerNode = 1;
  LinkSpec intraNode;
  LinkSpec interNode;
  /// Seconds every op call costs beyond its roofline time (dispatch,
  /// allocation, loop setup): what dominates small ops on a CPU; 0 unless
  /// given (a GPU's launch overlaps the previous kernel).
  double opOverhead = 0;
  /// How many of a node's devices compute at full speed at the same time:
  /// devicesPerNode unless given; fewer when ranks share cores (4 ranks on
  /// 2 cores: about 2), so that plans keeping every rank busy slow down.
  double computeSlots = 1;
  /// Measured sharing of a node's cores (tessera-calibrate): entry k - 1 is
  /// how much slower an op runs while k of the node's devicesPerNode ranks
  /// compute at once and the others wait in a blocking call (which polls,
  /// and takes turns on the cores), than on an otherwise idle host. Empty
  /// unless given; given, it replaces computeSlots' bound (the planner
  /// slows a plan by the entry of its average count of busy ranks).
  std::vector<double> contention;
  /// How long a rank waiting for a message waits for its core while a
  /// computing rank holds it (the scheduler's slice; tessera-calibrate pins
  /// two ranks to one CPU). 0 unless given; given, with ranks beyond
  /// computeSlots, the planner's pipeline replay delays a block that waits
  /// for another stage's message: each rank computing when the message
  /// arrives shares the receiver's core with the chance a balanced
  /// placement gives, and holds it for the rest of its block, at most this.
  double coreWait = 0;
  /// The chance that a rank computing when a waiting stage's message
  /// arrives holds that stage's core (tessera-calibrate: from a synthetic
  /// pipeline's measured step, replayed as the planner does). 0 unless
  /// given; then the chance a balanced placement gives.
  double coreChance = 0;
  /// What a pipeline block loses when it starts right after its rank
  /// waited for another's message, beyond the same ops run back to back:
  /// seconds, 0 unless given. Ranks sharing cores run in turns, and a
  /// stage that waited finds its caches refilled with the others' data
  /// (tessera-calibrate: a token passed round the ranks, each running a
  /// pass of small layers when it holds it, against the pass alone). The
  /// planner charges it to every forward and backward block of a pipeline.
  double blockStart = 0;
  /// Whether the data-parallel gradient reductions run beside the backward
  /// (a GPU's communication stream): a gradient's collective starts once
  /// the last micro-batch's backward made it, and only what outlasts the
  /// backward adds to the step. false (CPU ranks, whose collectives block)
  /// unless given.
  bool overlapDpReduction = false;

  /// Peak rate for \p dtype; throws Exception when the spec lacks it
  /// (silently falling back to another type would hide a wrong spec).
  double peakFlopsFor(const std::string &dtype) const;
};

/// The largest devices_per_node a spec may give.
constexpr int kMaxDevicesPerNode = 1 << 20;

/// Parses a spec from JSON text: every key known, every number finite and in
/// its range (docs/planner.md); \p origin names it in error messages, with
/// the key path of the offending value.
DeviceSpec parseDeviceSpec(const std::string &jsonText,
                           const std::string &origin = "<spec>");

/// Loads a spec: a bundled name ("h100-sxm", "a100-sxm", "cpu") or a path to
/// a JSON file (a regular file of at most 64 MiB).
DeviceSpec loadDeviceSpec(const std::string &nameOrPath);

/// Names of the specs compiled into the library.
std::vector<std::string> bundledDeviceSpecNames();

/// The JSON text of a bundled spec, or an empty string.
std::string bundledDeviceSpecText(const std::string &name);

} // namespace tessera::cost

#endif // TESSERA_COST_DEVICESPEC_H
