//===- Downsets.cpp - Downsets of a DAG and their nesting -----------------===//

#include "tessera/Planner/Downsets.h"
#include "tessera/Planner/PiperInstance.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>

namespace tessera::planner {

namespace {

using Bits = std::vector<uint64_t>;

struct BitsHash {
  size_t operator()(const Bits &b) const {
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (uint64_t w : b)
      h = (h ^ w) * 0x100000001b3ull + (h >> 29);
    return static_cast<size_t>(h);
  }
};

bool test(const Bits &b, int v) { return (b[v >> 6] >> (v & 63)) & 1; }
void set(Bits &b, int v) { b[v >> 6] |= uint64_t(1) << (v & 63); }

} // namespace

DownsetLattice::DownsetLattice(int n,
                               const std::vector<std::vector<int>> &successors,
                               size_t limit, size_t pairLimit, size_t byteLimit,
                               const std::string &reason) {
  const size_t words = (n + 63) / 64;
  // With n in the millions one bitset alone is hundreds of kilobytes, so
  // the storage is bounded as the downsets are found, not only their count.
  const size_t maxByBytes = byteLimit / bytesPerDownset(n);
  // Grow downsets from the empty set by adding a node whose successors are
  // all already inside; every downset is reached this way.
  std::vector<Bits> found;
  std::unordered_map<Bits, uint32_t, BitsHash> seen;
  found.push_back(Bits(words, 0));
  seen.emplace(found[0], 0);
  for (size_t next = 0; next < found.size(); ++next) {
    for (int v = 0; v < n; ++v) {
      if (test(found[next], v))
        continue;
      bool closed = true;
      for (int w : successors[v])
        if (!test(found[next], w)) {
          closed = false;
          break;
        }
      if (!closed)
        continue;
      Bits grown = found[next];
      set(grown, v);
      if (seen.emplace(grown, static_cast<uint32_t>(found.size())).second) {
        found.push_back(std::move(grown));
        if (found.size() > limit)
          throw Exception("the graph has more than " + std::to_string(limit) +
                          " downsets; the planner's lattice would be too big");
        if (found.size() > maxByBytes)
          throw Exception("the graph has more than " +
                          std::to_string(maxByBytes) + " downsets of " +
                          std::to_string(n) + " nodes; " + reason);
      }
    }
  }

  std::vector<int> sizes(found.size());
  for (size_t i = 0; i < found.size(); ++i) {
    int c = 0;
    for (uint64_t w : found[i])
      c += __builtin_popcountll(w);
    sizes[i] = c;
  }
  std::vector<uint32_t> order(found.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return sizes[a] < sizes[b]; });

  sets.resize(found.size());
  std::vector<Bits> sorted(found.size());
  for (size_t i = 0; i < order.size(); ++i) {
    sorted[i] = found[order[i]];
    for (int v = 0; v < n; ++v)
      if (test(sorted[i], v))
        sets[i].push_back(v);
  }

  // Nesting by a word-parallel subset test; quadratic in the number of
  // downsets, which the limit keeps affordable. The lists share the byte
  // limit with the bitsets and member lists still alive here.
  const size_t held = found.size() * bytesPerDownset(n);
  pairLimit = std::min(pairLimit, byteLimit > held
                                      ? (byteLimit - held) / sizeof(uint32_t)
                                      : size_t(0));
  subs.resize(sorted.size());
  for (size_t j = 0; j < sorted.size(); ++j) {
    for (size_t i = 0; i < j; ++i) {
      if (sets[i].size() >= sets[j].size())
        break;
      bool subset = true;
      for (size_t w = 0; w < words && subset; ++w)
        subset = (sorted[i][w] & ~sorted[j][w]) == 0;
      if (subset) {
        // Checked while counting: the lists themselves are what the limit
        // protects (GNMT has 15.5 million pairs for 17,914 downsets).
        if (++pairs > pairLimit)
          throw Exception(
              "the graph has more than " + std::to_string(pairLimit) +
              " pairs of nested downsets (" + std::to_string(found.size()) +
              " downsets); " + reason);
        subs[j].push_back(static_cast<uint32_t>(i));
      }
    }
    // Growth by doubling would leave up to half of every list unused.
    subs[j].shrink_to_fit();
  }

  // A chain: exactly one node without predecessors, each node at most one
  // successor, and n+1 downsets.
  int edges = 0;
  bool fanOut = false;
  for (int v = 0; v < n; ++v) {
    edges += static_cast<int>(successors[v].size());
    fanOut |= successors[v].size() > 1;
  }
  chain =
      !fanOut && edges == n - 1 && sets.size() == static_cast<size_t>(n) + 1;
}

size_t DownsetLattice::bytesPerDownset(int n) {
  return 3 * ((static_cast<size_t>(n) + 63) / 64) * sizeof(uint64_t) +
         static_cast<size_t>(n) * sizeof(int) + 4 * sizeof(void *);
}

} // namespace tessera::planner
