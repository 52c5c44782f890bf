//===- SizeClassPool.h - free lists of the caching allocators ---*- C++ -*-===//
//
// What the CPU allocator (cpu/Allocator.cpp, host memory) and the CUDA one
// (cuda/Tensor.cpp, GPU memory) share: size classes, per-class free lists
// of released blocks that later allocations of the class reuse, and the
// accounting behind liveBytes()/peakBytes()/allocatorStats() (the tensors'
// own byte sizes, not the rounded blocks). How a block is obtained from and
// returned to the system is the backend's. Not installed.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_COMMON_SIZECLASSPOOL_H
#define TESSERA_RUNTIME_COMMON_SIZECLASSPOOL_H

#include "tessera/runtime/Tensor.h"

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace tessera {
namespace rt {
namespace detail {

class SizeClassPool {
public:
  /// Blocks of up to `smallBytes` round up to a multiple of `alignment`,
  /// larger ones to a multiple of a quarter of the enclosing power of two
  /// (at most 25% waste). `release` returns a block to the system.
  SizeClassPool(int64_t alignment, int64_t smallBytes, void (*release)(void *));
  SizeClassPool(const SizeClassPool &) = delete;
  SizeClassPool &operator=(const SizeClassPool &) = delete;

  int64_t sizeClass(int64_t bytes) const;

  /// A block for `bytes`: a cached one of its size class, or else
  /// obtain(sizeClass) from the system, called with the lock held (it may
  /// call releaseCacheLocked() and retry; it throws when there is no memory).
  template <typename Obtain> void *allocate(int64_t bytes, Obtain &&obtain) {
    int64_t cls = sizeClass(bytes);
    std::lock_guard<std::mutex> lock(mutex_);
    void *ptr = takeCachedLocked(cls);
    if (!ptr) {
      ptr = obtain(cls);
      ++stats_.systemAllocs;
      stats_.reservedBytes += cls;
    }
    stats_.poolLiveBytes += bytes;
    if (stats_.poolLiveBytes > stats_.poolPeakBytes)
      stats_.poolPeakBytes = stats_.poolLiveBytes;
    accountLocked(bytes);
    return ptr;
  }
  /// Counts `bytes` more (or fewer) of live tensor storage that lies
  /// outside the pool (the static memory plan's arena).
  void account(int64_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    accountLocked(bytes);
  }
  /// Keeps the block for reuse (never returns it to the system).
  void deallocate(void *ptr, int64_t bytes);
  /// Returns every cached block to the system; the lock must be held (by
  /// allocate's obtain, or by the caller through mutex()).
  void releaseCacheLocked();

  std::mutex &mutex() { return mutex_; }
  /// The counters; the lock must be held.
  const AllocatorStats &statsLocked() const { return stats_; }

  AllocatorStats stats();
  void resetPeak();

private:
  void *takeCachedLocked(int64_t cls);
  void accountLocked(int64_t bytes) {
    stats_.liveBytes += bytes;
    if (stats_.liveBytes > stats_.peakBytes)
      stats_.peakBytes = stats_.liveBytes;
  }

  const int64_t alignment_, smallBytes_;
  void (*const release_)(void *);
  std::mutex mutex_;
  std::unordered_map<int64_t, std::vector<void *>> freeLists_;
  AllocatorStats stats_;
};

/// The backend's pool of tensor storage (defined by cpu/Allocator.cpp and
/// cuda/Tensor.cpp), which liveBytes(), peakBytes(), resetPeak() and
/// allocatorStats() report on.
SizeClassPool &tensorPool();

} // namespace detail
} // namespace rt
} // namespace tessera

#endif // TESSERA_RUNTIME_COMMON_SIZECLASSPOOL_H
