//===- DistDialect.h - the dist dialect -------------------------*- C++ -*-===//

#ifndef TESSERA_DIALECT_DIST_IR_DISTDIALECT_H
#define TESSERA_DIALECT_DIST_IR_DISTDIALECT_H

#include "tessera/Dialect/Common/DiscardableAttrs.h"

#include "mlir/IR/Dialect.h"

#include "tessera/Dialect/Dist/IR/DistOpsDialect.h.inc"

namespace tessera {
/// The dialect under its short name, for its typed attribute helpers:
/// `getAttr<Dist::RankAttrHelper>(op)`.
using Dist = dist::DistDialect;
} // namespace tessera

#endif // TESSERA_DIALECT_DIST_IR_DISTDIALECT_H
