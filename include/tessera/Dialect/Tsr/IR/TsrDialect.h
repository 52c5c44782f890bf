//===- TsrDialect.h - the tsr dialect ---------------------------*- C++ -*-===//

#ifndef TESSERA_DIALECT_TSR_IR_TSRDIALECT_H
#define TESSERA_DIALECT_TSR_IR_TSRDIALECT_H

#include "tessera/Dialect/Common/DiscardableAttrs.h"

#include "mlir/IR/Dialect.h"

#include "tessera/Dialect/Tsr/IR/TsrOpsDialect.h.inc"

namespace tessera {
/// The dialect under its short name, for its typed attribute helpers:
/// `getAttr<Tsr::ParamAttrHelper>(op)`.
using Tsr = tsr::TsrDialect;
} // namespace tessera

namespace tessera::tsr {
/// The most elements a tensor of a tsr op may hold (2^48).
constexpr int64_t kMaxTensorElements = int64_t(1) << 48;
/// Whether `type` is a ranked tensor of static, non-negative dimensions
/// holding at most kMaxTensorElements elements (the type constraint of every
/// tsr op's operands and results).
bool hasBoundedElementCount(mlir::Type type);
} // namespace tessera::tsr

#endif // TESSERA_DIALECT_TSR_IR_TSRDIALECT_H
