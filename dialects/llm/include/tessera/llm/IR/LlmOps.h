//===- LlmOps.h - llm operations --------------------------------*- C++ -*-===//

#ifndef TESSERA_LLM_IR_LLMOPS_H
#define TESSERA_LLM_IR_LLMOPS_H

#include "tessera/Interfaces/CostInterface.h"
#include "tessera/Interfaces/DimAnnotationInterface.h"
#include "tessera/Interfaces/GradientInterface.h"
#include "tessera/Interfaces/RuntimeCallInterface.h"
#include "tessera/llm/IR/LlmDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace tessera::llm {
/// The forward cost of attention on q [.., t, d], k [.., s, d], v [.., s, e]
/// (the score and value products, the exponentials and sums; causal: the
/// t (t + 1) / 2 pairs on or below the diagonal), times `factor`.
double attentionFlops(mlir::RankedTensorType query, mlir::RankedTensorType key,
                      mlir::RankedTensorType value, bool causal, double factor);
} // namespace tessera::llm

#define GET_OP_CLASSES
#include "tessera/llm/IR/LlmOps.h.inc"

#endif // TESSERA_LLM_IR_LLMOPS_H
