//===- Arena.cpp - the static memory plan's arena -------------------------===//
//
// rt::StaticMemory (see Tensor.h): one block for the arena, the calling
// thread's pending slots, and the check that a slot meets no storage still
// live in the block. Offsets and sizes come from the compiler
// (dist-static-memory); nothing here chooses them.
//
//===----------------------------------------------------------------------===//

#include "Arena.h"

#include "SizeClassPool.h"

#include <map>
#include <mutex>

namespace tessera {
namespace rt {
namespace {

struct Block {
  void *base = nullptr;
  int64_t bytes = 0;
  Device device = Device::host;
  /// The storages in the block: offset -> end (exclusive); they never
  /// overlap.
  std::map<int64_t, int64_t> live;
  /// Replaced by a larger block; freed when its last storage goes.
  bool retired = false;
};

struct ArenaState {
  std::mutex mutex;
  Block *current = nullptr;
  int64_t conflicts = 0;
};

// Never destroyed: tensors held in static objects may be freed at exit.
ArenaState &state() {
  static ArenaState *instance = new ArenaState();
  return *instance;
}

thread_local StaticMemory *active = nullptr;

void freeBlock(Block *block) {
  detail::freeArenaBlock(block->base, block->device);
  delete block;
}

} // namespace

StaticMemory::StaticMemory(int64_t arenaBytes) {
  ArenaState &s = state();
  Device device = defaultDevice();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    Block *old = s.current;
    if (arenaBytes > 0 &&
        (!old || old->bytes < arenaBytes || old->device != device)) {
      auto *block = new Block();
      try {
        block->base = detail::allocateArenaBlock(arenaBytes, device);
      } catch (...) {
        delete block;
        throw;
      }
      block->bytes = arenaBytes;
      block->device = device;
      s.current = block;
      if (old) {
        if (old->live.empty())
          freeBlock(old);
        else
          old->retired = true;
      }
    }
  }
  outer_ = active;
  active = this;
}

StaticMemory::~StaticMemory() { active = outer_; }

void StaticMemory::place(std::initializer_list<Slot> slots) {
  pending_.assign(slots.begin(), slots.end());
}

namespace detail {

void *takeArenaSlot(int64_t bytes, Device device, void *&arena) {
  StaticMemory *m = active;
  if (!m || m->pending_.empty())
    return nullptr;
  ArenaState &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  Block *block = s.current;
  // Another device's storage (a host staging buffer of the CUDA backend)
  // leaves the slots to the op's own results.
  if (!block || block->device != device)
    return nullptr;
  auto slot = m->pending_.begin();
  while (slot != m->pending_.end() && slot->bytes != bytes)
    ++slot;
  if (slot == m->pending_.end())
    return nullptr;
  int64_t offset = slot->offset, end = slot->offset + bytes;
  m->pending_.erase(slot);
  // The live storage starting last before `end` is the only one that can
  // overlap [offset, end): the live ones are disjoint.
  bool busy = offset < 0 || end > block->bytes;
  auto next = block->live.lower_bound(end);
  if (!busy && next != block->live.begin())
    busy = std::prev(next)->second > offset;
  if (busy) {
    ++s.conflicts;
    return nullptr;
  }
  block->live.emplace(offset, end);
  arena = block;
  tensorPool().account(bytes);
  return static_cast<char *>(block->base) + offset;
}

void releaseArenaSlot(void *arena, void *ptr, int64_t bytes) {
  ArenaState &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto *block = static_cast<Block *>(arena);
  block->live.erase(static_cast<char *>(ptr) -
                    static_cast<char *>(block->base));
  tensorPool().account(-bytes);
  if (block->retired && block->live.empty())
    freeBlock(block);
}

void addArenaStats(AllocatorStats &stats) {
  ArenaState &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  stats.arenaBytes = s.current ? s.current->bytes : 0;
  stats.arenaConflicts = s.conflicts;
}

} // namespace detail
} // namespace rt
} // namespace tessera
