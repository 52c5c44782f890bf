//===- Allocator.cpp - caching allocator for tensor storage ---------------===//
//
// Emitted programs allocate the same sizes every step, so freed blocks are
// kept in per-size-class free lists and handed out again: after the first
// step, a step costs no system allocations. Size classes are four per power
// of two (at most 25% rounding waste); blocks are 64-byte aligned for SIMD.
// The accounting (live/peak) counts the tensors' own byte sizes, which is
// what the planner's memory model predicts.
//
//===----------------------------------------------------------------------===//

#include "tessera/runtime/Tensor.h"

#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace tessera {
namespace rt {
namespace {

constexpr int64_t kAlignment = 64;

int64_t sizeClass(int64_t bytes) {
  if (bytes <= 1024)
    return (bytes + kAlignment - 1) / kAlignment * kAlignment;
  // Round up to a multiple of a quarter of the enclosing power of two.
  int64_t pow2 = 1;
  while (pow2 * 2 < bytes)
    pow2 *= 2;
  int64_t quantum = pow2 / 4;
  return (bytes + quantum - 1) / quantum * quantum;
}

struct Allocator {
  std::mutex mutex;
  std::unordered_map<int64_t, std::vector<void *>> freeLists;
  AllocatorStats stats;

  void *allocate(int64_t bytes) {
    int64_t cls = sizeClass(bytes);
    std::lock_guard<std::mutex> lock(mutex);
    void *ptr = nullptr;
    auto it = freeLists.find(cls);
    if (it != freeLists.end() && !it->second.empty()) {
      ptr = it->second.back();
      it->second.pop_back();
      stats.cachedBytes -= cls;
      ++stats.cacheHits;
    } else {
      ptr = std::aligned_alloc(kAlignment, cls);
      if (!ptr) {
        // Give the cache back and retry once before failing.
        releaseCacheLocked();
        ptr = std::aligned_alloc(kAlignment, cls);
      }
      if (!ptr)
        throw Error("out of memory allocating " + std::to_string(bytes) +
                    " bytes of tensor storage (live " +
                    std::to_string(stats.liveBytes) + " bytes)");
      ++stats.systemAllocs;
    }
    stats.liveBytes += bytes;
    if (stats.liveBytes > stats.peakBytes)
      stats.peakBytes = stats.liveBytes;
    return ptr;
  }

  void deallocate(void *ptr, int64_t bytes) {
    int64_t cls = sizeClass(bytes);
    std::lock_guard<std::mutex> lock(mutex);
    stats.liveBytes -= bytes;
    freeLists[cls].push_back(ptr);
    stats.cachedBytes += cls;
  }

  void releaseCacheLocked() {
    for (auto &entry : freeLists)
      for (void *ptr : entry.second)
        std::free(ptr);
    freeLists.clear();
    stats.cachedBytes = 0;
  }
};

// Never destroyed: tensors held in static objects may be freed after the
// allocator would otherwise have been torn down at exit.
Allocator &allocator() {
  static Allocator *instance = new Allocator();
  return *instance;
}

} // namespace

namespace detail {
Storage::Storage(int64_t bytes) : bytes(bytes) {
  if (bytes > 0)
    ptr = allocator().allocate(bytes);
}
Storage::Storage(int64_t bytes, Device device) : bytes(bytes) {
  if (device != Device::host)
    throw Error("GPU storage needs the CUDA runtime (TesseraRuntimeCuda)");
  if (bytes > 0)
    ptr = allocator().allocate(bytes);
}
Storage::~Storage() {
  if (ptr)
    allocator().deallocate(ptr, bytes);
}
} // namespace detail

int64_t liveBytes() {
  std::lock_guard<std::mutex> lock(allocator().mutex);
  return allocator().stats.liveBytes;
}

int64_t peakBytes() {
  std::lock_guard<std::mutex> lock(allocator().mutex);
  return allocator().stats.peakBytes;
}

void resetPeak() {
  std::lock_guard<std::mutex> lock(allocator().mutex);
  allocator().stats.peakBytes = allocator().stats.liveBytes;
}

AllocatorStats allocatorStats() {
  std::lock_guard<std::mutex> lock(allocator().mutex);
  return allocator().stats;
}

void emptyCache() {
  std::lock_guard<std::mutex> lock(allocator().mutex);
  allocator().releaseCacheLocked();
}

} // namespace rt
} // namespace tessera
