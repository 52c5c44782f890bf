//===- Passes.h - tsr passes ------------------------------------*- C++ -*-===//

#ifndef TESSERA_DIALECT_TSR_TRANSFORMS_PASSES_H
#define TESSERA_DIALECT_TSR_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

namespace tessera {
namespace tsr {

#define GEN_PASS_DECL
#include "tessera/Dialect/Tsr/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tessera/Dialect/Tsr/Transforms/Passes.h.inc"

} // namespace tsr
} // namespace tessera

#endif // TESSERA_DIALECT_TSR_TRANSFORMS_PASSES_H
