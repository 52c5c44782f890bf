//===- MemoryPrediction.h - peak tensor memory of a step --------*- C++ -*-===//
//
// The peak tensor memory of one training step of a (per-rank) step function
// as the runtime counts it (live tensor storage): the driver hands the
// arguments over (parameters and optimizer state are donated); every op
// allocates its results except views (a reshape, a cast or broadcast that
// changes nothing); the emitted code drops each tensor, arguments included,
// after its last use; sent tensors stay alive until the end of the step;
// results stay (the driver takes them); a collective's packing and receive
// buffers (the CPU backend's) add to the live bytes while it runs. Used by
// tessera-compile's plan report and checked against the measured peaks by the
// end-to-end tests. The static memory plan (planStaticMemory) replays the
// same lifetimes and gives each storage made within the step an offset in
// one arena.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_DIALECT_DIST_TRANSFORMS_MEMORYPREDICTION_H
#define TESSERA_DIALECT_DIST_TRANSFORMS_MEMORYPREDICTION_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>

namespace tessera {
namespace dist {

/// Bytes at the peak of one step of `step` (one block of tsr/dist ops).
int64_t predictPeakBytes(mlir::func::FuncOp step);

/// Offsets of an arena are multiples of this (cuBLASLt's and the vector
/// units' alignment; the runtime's arena block is aligned to it too).
constexpr int64_t kArenaAlignment = 256;

/// One placement of the static memory plan: `bytes` at `offset` of the arena.
struct ArenaSlot {
  int64_t offset = 0;
  int64_t bytes = 0;
};

/// The static memory plan of one step (issue 16, item 4): every storage the
/// step makes and frees within itself (activations, gradients, received
/// and communicated values, a collective's scratch buffers) gets an offset
/// in one arena, so that no two storages whose lifetimes overlap share
/// bytes. Storages that outlive the step (its results: parameters,
/// optimizer state, the loss) or come from outside it (arguments,
/// constants the runtime caches) stay with the caching allocator ("the
/// pool"). The runtime allocates the arena once and places each op's
/// allocations at its slots (rt::StaticMemory).
struct StaticMemoryPlan {
  /// The arena's size: the end of the highest slot, aligned.
  int64_t arenaBytes = 0;
  /// The peak of the storages left to the pool.
  int64_t poolPeakBytes = 0;
  /// Each op's slots, in no particular order: the runtime gives an
  /// allocation of the op the first free slot of its exact size. Slots of
  /// one op with equal sizes share the longest of their lifetimes, so any
  /// of them may take any of those allocations.
  llvm::DenseMap<mlir::Operation *, llvm::SmallVector<ArenaSlot, 2>> slots;
  /// What the device holds for tensors at the step's peak: the arena and
  /// the pool's peak beside it.
  int64_t footprintBytes() const { return arenaBytes + poolPeakBytes; }
};

/// Plans `step`'s memory (see StaticMemoryPlan).
StaticMemoryPlan planStaticMemory(mlir::func::FuncOp step);

} // namespace dist
} // namespace tessera

#endif // TESSERA_DIALECT_DIST_TRANSFORMS_MEMORYPREDICTION_H
