//===- Downsets.h - Downsets of a DAG and their nesting ---------*- C++ -*-===//
//
// A pipeline cuts a DAG into stages so that every edge goes forward; the
// union of the last few stages is then a downset (closed under successors)
// and each stage is the difference of two nested downsets. A chain has n+1
// downsets (its suffixes); side branches multiply them. The planner's dynamic
// program runs over this lattice.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_PLANNER_DOWNSETS_H
#define TESSERA_PLANNER_DOWNSETS_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::planner {

class DownsetLattice {
public:
  /// Enumerates the downsets of the DAG on nodes 0..n-1 given by
  /// \p successors. Throws Exception when there are more than \p limit, or
  /// more than \p pairLimit pairs of nested downsets, or when its own
  /// storage (bitsets, member lists, nesting lists; see bytesPerDownset)
  /// would exceed \p byteLimit; the message then ends with \p reason. Each
  /// is checked before the lists grow past it.
  DownsetLattice(int n, const std::vector<std::vector<int>> &successors,
                 size_t limit = 50000, size_t pairLimit = SIZE_MAX,
                 size_t byteLimit = SIZE_MAX, const std::string &reason = "");

  /// Bytes counted per downset of a graph on n nodes: three copies of its
  /// bitset while enumerating (the list, the hash set, the sorted list) and
  /// its member list at its largest.
  static size_t bytesPerDownset(int n);

  /// Downsets are numbered by size: 0 is the empty set, size()-1 all nodes.
  size_t size() const { return sets.size(); }
  size_t fullId() const { return sets.size() - 1; }
  const std::vector<int> &members(size_t id) const { return sets[id]; }
  /// The proper sub-downsets of \p id.
  const std::vector<uint32_t> &subsets(size_t id) const { return subs[id]; }
  size_t numPairs() const { return pairs; }
  /// Whether the DAG is one path (then downsets are exactly its suffixes).
  bool isChain() const { return chain; }

private:
  std::vector<std::vector<int>> sets;
  std::vector<std::vector<uint32_t>> subs;
  size_t pairs = 0;
  bool chain = false;
};

} // namespace tessera::planner

#endif // TESSERA_PLANNER_DOWNSETS_H
