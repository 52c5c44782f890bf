//===- Passes.h - dist passes -----------------------------------*- C++ -*-===//

#ifndef TESSERA_DIALECT_DIST_TRANSFORMS_PASSES_H
#define TESSERA_DIALECT_DIST_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "tessera/Dialect/Dist/IR/DistDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"

namespace tessera {
namespace dist {

#define GEN_PASS_DECL
#include "tessera/Dialect/Dist/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tessera/Dialect/Dist/Transforms/Passes.h.inc"

} // namespace dist
} // namespace tessera

#endif // TESSERA_DIALECT_DIST_TRANSFORMS_PASSES_H
