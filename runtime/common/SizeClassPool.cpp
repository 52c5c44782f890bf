//===- SizeClassPool.cpp - free lists of the caching allocators -----------===//

#include "SizeClassPool.h"

#include "Arena.h"

namespace tessera {
namespace rt {
namespace detail {

SizeClassPool::SizeClassPool(int64_t alignment, int64_t smallBytes,
                             void (*release)(void *))
    : alignment_(alignment), smallBytes_(smallBytes), release_(release) {}

int64_t SizeClassPool::sizeClass(int64_t bytes) const {
  if (bytes <= smallBytes_)
    return (bytes + alignment_ - 1) / alignment_ * alignment_;
  // Round up to a multiple of a quarter of the enclosing power of two.
  int64_t pow2 = 1;
  while (pow2 * 2 < bytes)
    pow2 *= 2;
  int64_t quantum = pow2 / 4;
  return (bytes + quantum - 1) / quantum * quantum;
}

void *SizeClassPool::takeCachedLocked(int64_t cls) {
  auto it = freeLists_.find(cls);
  if (it == freeLists_.end() || it->second.empty())
    return nullptr;
  void *ptr = it->second.back();
  it->second.pop_back();
  stats_.cachedBytes -= cls;
  ++stats_.cacheHits;
  return ptr;
}

void SizeClassPool::deallocate(void *ptr, int64_t bytes) {
  int64_t cls = sizeClass(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.liveBytes -= bytes;
  stats_.poolLiveBytes -= bytes;
  freeLists_[cls].push_back(ptr);
  stats_.cachedBytes += cls;
}

void SizeClassPool::releaseCacheLocked() {
  for (auto &entry : freeLists_)
    for (void *ptr : entry.second) {
      release_(ptr);
      stats_.reservedBytes -= entry.first;
    }
  freeLists_.clear();
  stats_.cachedBytes = 0;
}

AllocatorStats SizeClassPool::stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void SizeClassPool::resetPeak() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peakBytes = stats_.liveBytes;
  stats_.poolPeakBytes = stats_.poolLiveBytes;
}

} // namespace detail

int64_t liveBytes() { return detail::tensorPool().stats().liveBytes; }
int64_t peakBytes() { return detail::tensorPool().stats().peakBytes; }
void resetPeak() { detail::tensorPool().resetPeak(); }
AllocatorStats allocatorStats() {
  AllocatorStats stats = detail::tensorPool().stats();
  detail::addArenaStats(stats);
  return stats;
}

} // namespace rt
} // namespace tessera
