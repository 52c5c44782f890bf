//===- Passes.h - conversions between Tessera's dialects --------*- C++ -*-===//

#ifndef TESSERA_CONVERSION_PASSES_H
#define TESSERA_CONVERSION_PASSES_H

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/Pass/Pass.h"
#include "tessera/Conversion/OutlinedConstants.h"

namespace tessera {

#define GEN_PASS_DECL
#include "tessera/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tessera/Conversion/Passes.h.inc"

} // namespace tessera

#endif // TESSERA_CONVERSION_PASSES_H
