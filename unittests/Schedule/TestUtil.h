//===- TestUtil.h - Helpers shared by the schedule unit tests ---*- C++ -*-===//

#ifndef TESSERA_SCHEDULE_UNITTESTS_TESTUTIL_H
#define TESSERA_SCHEDULE_UNITTESTS_TESTUTIL_H

#include "tessera/Schedule/Placement.h"

#include <nlohmann/json.hpp>

namespace tessera::schedule::test {

inline Block makeBlock(int id, BlockKind kind, int64_t span, int64_t memory,
                       std::vector<int> devices, std::vector<int> deps) {
  Block b;
  b.id = id;
  b.kind = kind;
  b.span = span;
  b.memory = memory;
  b.devices = std::move(devices);
  b.deps = std::move(deps);
  return b;
}

/// A p-stage chain: F on devices 0..p-1, then B back (vshape-like).
inline Placement chainPlacement(int p, int64_t f, int64_t b) {
  Placement pl;
  pl.name = "chain";
  pl.numDevices = p;
  for (int j = 0; j < p; ++j)
    pl.blocks.push_back(
        makeBlock(j, BlockKind::Forward, f, 1, {j},
                  j ? std::vector<int>{j - 1} : std::vector<int>{}));
  for (int j = p - 1; j >= 0; --j)
    pl.blocks.push_back(makeBlock(2 * p - 1 - j, BlockKind::Backward, b, -1,
                                  {j}, {2 * p - 2 - j}));
  return pl;
}

} // namespace tessera::schedule::test

#endif // TESSERA_SCHEDULE_UNITTESTS_TESTUTIL_H
