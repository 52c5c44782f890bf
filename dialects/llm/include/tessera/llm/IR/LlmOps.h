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

#define GET_OP_CLASSES
#include "tessera/llm/IR/LlmOps.h.inc"

#endif // TESSERA_LLM_IR_LLMOPS_H
