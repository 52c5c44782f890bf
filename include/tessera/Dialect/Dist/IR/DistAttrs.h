//===- DistAttrs.h - dist attributes ----------------------------*- C++ -*-===//

#ifndef TESSERA_DIALECT_DIST_IR_DISTATTRS_H
#define TESSERA_DIALECT_DIST_IR_DISTATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "tessera/Dialect/Dist/IR/DistDialect.h"
#include "tessera/Layout/Rvd.h"

#include <optional>
#include <string>

#define GET_ATTRDEF_CLASSES
#include "tessera/Dialect/Dist/IR/DistAttrs.h.inc"

namespace tessera::dist {

/// The dist.mesh of the closest enclosing (or the same) op that has one,
/// normally the module; null if none.
MeshAttr getEnclosingMesh(mlir::Operation *op);

/// The dist.pipeline of the closest enclosing (or the same) op that has one,
/// normally the module; null if none (a step of one micro-batch, one stage
/// per device, in program order).
PipelineAttr getEnclosingPipeline(mlir::Operation *op);

/// The module's dist.mesh; without one, emits "<pass>: the module has no
/// dist.mesh (run <prerequisites> first)" on the module and returns null.
MeshAttr requireMesh(mlir::ModuleOp module, llvm::StringRef pass,
                     llvm::StringRef prerequisites = "dist-plan");

/// The ranks that run a per-rank function: its dist.rank, or its dist.ranks
/// when several ranks share it; empty for a function of no rank.
llvm::SmallVector<int64_t> ranksOf(mlir::Operation *func);

} // namespace tessera::dist

#endif // TESSERA_DIALECT_DIST_IR_DISTATTRS_H
