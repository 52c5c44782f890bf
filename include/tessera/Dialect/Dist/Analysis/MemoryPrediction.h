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
// end-to-end tests.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_DIALECT_DIST_TRANSFORMS_MEMORYPREDICTION_H
#define TESSERA_DIALECT_DIST_TRANSFORMS_MEMORYPREDICTION_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>

namespace tessera {
namespace dist {

/// Bytes at the peak of one step of `step` (one block of tsr/dist ops).
int64_t predictPeakBytes(mlir::func::FuncOp step);

} // namespace dist
} // namespace tessera

#endif // TESSERA_DIALECT_DIST_TRANSFORMS_MEMORYPREDICTION_H
