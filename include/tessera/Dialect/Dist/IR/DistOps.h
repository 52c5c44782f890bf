//===- DistOps.h - dist operations ------------------------------*- C++ -*-===//

#ifndef TESSERA_DIALECT_DIST_IR_DISTOPS_H
#define TESSERA_DIALECT_DIST_IR_DISTOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "tessera/Dialect/Dist/IR/DistAttrs.h"
#include "tessera/Dialect/Dist/IR/DistDialect.h"
#include "tessera/Interfaces/RankVariantInterface.h"
#include "tessera/Interfaces/RuntimeCallInterface.h"

namespace tessera::dist {

/// The resource communication ops read and write (see Dist_CommResource in
/// DistOps.td for why they have effects at all).
struct CommResource : public mlir::SideEffects::Resource::Base<CommResource> {
  llvm::StringRef getName() final { return "dist.comm"; }
};

} // namespace tessera::dist

#include "tessera/Dialect/Dist/IR/DistEnums.h.inc"

#define GET_OP_CLASSES
#include "tessera/Dialect/Dist/IR/DistOps.h.inc"

#endif // TESSERA_DIALECT_DIST_IR_DISTOPS_H
