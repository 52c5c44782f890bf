//===- CostInterface.h - what an op costs, from its shapes ------*- C++ -*-===//

#ifndef TESSERA_INTERFACES_COSTINTERFACE_H
#define TESSERA_INTERFACES_COSTINTERFACE_H

#include "mlir/IR/OpDefinition.h"

#include <string>

namespace tessera {

/// One floating-point operation per result element.
double elementwiseFlops(mlir::Operation *op);
/// Every ranked-tensor operand and result read or written once.
double operandAndResultBytes(mlir::Operation *op);
/// The storage of a ranked tensor (i1 as one byte); 0 for other types.
int64_t tensorBytes(mlir::Type type);
/// The device spec's name of a ranked tensor's float element type ("fp32",
/// "bf16", "fp16", "fp64"); "" for other types.
std::string costDtypeName(mlir::Type type);
/// The element type the cost model prices \p op in, as the profile
/// database keys it: its first float result's, else its first float
/// operand's (costDtypeName); \p fallback when it has neither.
std::string costDtypeOf(mlir::Operation *op, llvm::StringRef fallback);

} // namespace tessera

#include "tessera/Interfaces/CostInterface.h.inc"

namespace tessera {
/// The op's CostOpInterface FLOPs, or elementwiseFlops for ops without it.
double flopsOf(mlir::Operation *op);
/// The op's CostOpInterface bytes, or operandAndResultBytes without it.
double bytesMovedOf(mlir::Operation *op);
} // namespace tessera

#endif // TESSERA_INTERFACES_COSTINTERFACE_H
