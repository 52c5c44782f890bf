//===- Arena.h - the static memory plan's arena (internal) ------*- C++ -*-===//
//
// The backend-independent part of rt::StaticMemory (Arena.cpp): the arena
// block, its slots and their checks. Each backend allocates and frees the
// block itself (its Storage lives in cpu/Allocator.cpp or cuda/Tensor.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_COMMON_ARENA_H
#define TESSERA_RUNTIME_COMMON_ARENA_H

#include "tessera/runtime/Tensor.h"

namespace tessera {
namespace rt {
namespace detail {

/// The backend's: one block of `bytes` on `device`, aligned to at least
/// 256 bytes (the compiler's kArenaAlignment); throws Error when there is
/// no memory.
void *allocateArenaBlock(int64_t bytes, Device device);
void freeArenaBlock(void *ptr, Device device);

/// Fills arenaBytes and arenaConflicts.
void addArenaStats(AllocatorStats &stats);

} // namespace detail
} // namespace rt
} // namespace tessera

#endif // TESSERA_RUNTIME_COMMON_ARENA_H
