//===- CostInterface.cpp - what an op costs, from its shapes --------------===//

#include "tessera/Interfaces/CostInterface.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

using namespace mlir;

namespace tessera {

#include "tessera/Interfaces/CostInterface.cpp.inc"

double elementwiseFlops(Operation *op) {
  double n = 0;
  for (Type t : op->getResultTypes())
    if (auto r = dyn_cast<RankedTensorType>(t))
      n += double(r.getNumElements());
  return n;
}

int64_t tensorBytes(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || !t.getElementType().isIntOrFloat())
    return 0;
  int64_t bits = t.getElementType().getIntOrFloatBitWidth();
  int64_t elementBytes = bits == 1 ? 1 : (bits + 7) / 8;
  return t.getNumElements() * elementBytes;
}

std::string costDtypeName(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t)
    return "";
  Type e = t.getElementType();
  if (e.isF32())
    return "fp32";
  if (e.isBF16())
    return "bf16";
  if (e.isF16())
    return "fp16";
  if (e.isF64())
    return "fp64";
  return "";
}

std::string costDtypeOf(Operation *op, llvm::StringRef fallback) {
  for (Type t : op->getResultTypes())
    if (std::string name = costDtypeName(t); !name.empty())
      return name;
  for (Type t : op->getOperandTypes())
    if (std::string name = costDtypeName(t); !name.empty())
      return name;
  return fallback.str();
}

double operandAndResultBytes(Operation *op) {
  double n = 0;
  for (Type t : op->getOperandTypes())
    n += double(tensorBytes(t));
  for (Type t : op->getResultTypes())
    n += double(tensorBytes(t));
  return n;
}

double flopsOf(Operation *op) {
  if (auto c = dyn_cast<CostOpInterface>(op))
    return c.getFlops();
  return elementwiseFlops(op);
}

double bytesMovedOf(Operation *op) {
  if (auto c = dyn_cast<CostOpInterface>(op))
    return c.getBytesMoved();
  return operandAndResultBytes(op);
}

} // namespace tessera
