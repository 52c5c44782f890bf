//===- Allocator.cpp - caching allocator for tensor storage ---------------===//
//
// Emitted programs allocate the same sizes every step, so freed blocks are
// kept in per-size-class free lists and handed out again: after the first
// step, a step costs no system allocations. Size classes are four per power
// of two (at most 25% rounding waste); blocks are 64-byte aligned for SIMD.
// The accounting (live/peak) counts the tensors' own byte sizes, which is
// what the planner's memory model predicts. The free lists and the
// accounting are common/SizeClassPool's; the blocks come from aligned_alloc.
// A storage that the step's static memory plan places (common/Arena.cpp)
// lies in the arena instead.
//
//===----------------------------------------------------------------------===//

#include "tessera/runtime/Tensor.h"

#include "Arena.h"
#include "SizeClassPool.h"

#include <cstdlib>
#include <mutex>
#include <new>

namespace tessera {
namespace rt {
namespace {

constexpr int64_t kAlignment = 64;

void releaseBlock(void *ptr) { std::free(ptr); }

void *allocate(int64_t bytes) {
  detail::SizeClassPool &pool = detail::tensorPool();
  return pool.allocate(bytes, [&](int64_t cls) {
    void *ptr = std::aligned_alloc(kAlignment, cls);
    if (!ptr) {
      // Give the cache back and retry once before failing.
      pool.releaseCacheLocked();
      ptr = std::aligned_alloc(kAlignment, cls);
    }
    if (!ptr)
      throw Error("out of memory allocating " + std::to_string(bytes) +
                  " bytes of tensor storage (live " +
                  std::to_string(pool.statsLocked().liveBytes) + " bytes)");
    return ptr;
  });
}

} // namespace

namespace detail {
// Never destroyed: tensors held in static objects may be freed after the
// allocator would otherwise have been torn down at exit.
SizeClassPool &tensorPool() {
  static SizeClassPool *instance =
      new SizeClassPool(kAlignment, /*smallBytes=*/1024, releaseBlock);
  return *instance;
}

Storage::Storage(int64_t bytes) : Storage(bytes, Device::host) {}
Storage::Storage(int64_t bytes, Device device) : bytes(bytes) {
  if (device != Device::host)
    throw Error("GPU storage needs the CUDA runtime (TesseraRuntimeCuda)");
  if (bytes > 0 && !(ptr = takeArenaSlot(bytes, device, arena)))
    ptr = allocate(bytes);
}
Storage::~Storage() {
  if (arena)
    releaseArenaSlot(arena, ptr, bytes);
  else if (ptr)
    tensorPool().deallocate(ptr, bytes);
}

void *allocateArenaBlock(int64_t bytes, Device device) {
  if (device != Device::host)
    throw Error("GPU storage needs the CUDA runtime (TesseraRuntimeCuda)");
  constexpr int64_t kArenaAlignment = 256; // dist::kArenaAlignment
  int64_t rounded =
      (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
  void *ptr = std::aligned_alloc(kArenaAlignment, rounded);
  if (!ptr) {
    emptyCache();
    ptr = std::aligned_alloc(kArenaAlignment, rounded);
  }
  if (!ptr)
    throw Error("out of memory allocating the static memory plan's arena (" +
                std::to_string(bytes) + " bytes)");
  return ptr;
}
void freeArenaBlock(void *ptr, Device) { std::free(ptr); }
} // namespace detail

void emptyCache() {
  detail::SizeClassPool &pool = detail::tensorPool();
  std::lock_guard<std::mutex> lock(pool.mutex());
  pool.releaseCacheLocked();
}

} // namespace rt
} // namespace tessera
