//===- PiperInstance.h - Piper's layer-graph input format -------*- C++ -*-===//
//
// The JSON input of Piper (NeurIPS'21): a DAG of layers, each with measured
// configurations per tensor-parallel degree (TMPCs), plus the machine limits.
// The planner reads it so that its plans can be compared with Piper's on the
// same profiles; see docs/planner.md for the field-by-field semantics.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_PLANNER_PIPERINSTANCE_H
#define TESSERA_PLANNER_PIPERINSTANCE_H

#include "tessera/Support/Result.h"

#include <map>
#include <string>
#include <vector>

namespace tessera::planner {

/// One tensor-parallel configuration of a node ("TMPC").
struct PiperConfig {
  std::string id;               ///< "vanilla" or "activation recomp"
  double timePerSample = 0;     ///< p: forward+backward seconds per sample
  double parameterSize = 0;     ///< w: bytes of parameters per device
  double memoryA = 0;           ///< bytes per in-flight micro-batch
  double memoryB = 0;           ///< bytes independent of in-flight count
  std::map<int, double> syncFw; ///< extra bytes on incoming edge from id
  std::map<int, double> syncBw; ///< extra bytes on outgoing edge to id

  /// Whether this configuration recomputes activations in the backward
  /// pass (Piper's "activation recomp"); any id other than "vanilla" that
  /// mentions "recomp" counts.
  bool recomputes() const;
};

struct PiperNode {
  int id = 0;
  std::string name;
  /// Configurations per tensor-parallel degree t.
  std::map<int, std::vector<PiperConfig>> configs;
};

struct PiperEdge {
  int source = 0;
  int dest = 0;
  double bytes = 0; ///< c(u,v): activation bytes (its gradient is as large)
};

/// The largest device count K and micro-batch count N (from the file or the
/// command line): the planner keeps tables of min(N, K) entries and counts
/// devices in int.
constexpr int kMaxPiperDevices = 1000000;
constexpr int kMaxPiperMicroBatches = 1000000;

struct PiperInstance {
  double maxMemoryPerDevice = 0; ///< M, bytes
  int maxDevices = 0;            ///< K
  double bandwidth = 0;          ///< B, bytes per second
  int mbsInBatch = 0;            ///< N, micro-batches per batch
  std::vector<PiperNode> nodes;
  std::vector<PiperEdge> edges;

  /// Checks everything the planner relies on (ids, edges, acyclicity,
  /// non-negative sizes, sync entries for exactly the node's edges, at most
  /// two configurations per degree); throws Exception naming the culprit.
  void validate() const;
};

/// Parses Piper's JSON: every key known, every value of its type and range
/// (docs/planner.md). \p origin names the input in error messages, with the
/// key path of the offending value. Throws Exception.
PiperInstance parsePiperInstance(const std::string &jsonText,
                                 const std::string &origin = "<input>");
/// Reads (a regular file of at most 64 MiB) and parses a Piper input.
PiperInstance loadPiperInstance(const std::string &path);

} // namespace tessera::planner

#endif // TESSERA_PLANNER_PIPERINSTANCE_H
