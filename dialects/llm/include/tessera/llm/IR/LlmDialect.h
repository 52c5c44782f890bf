//===- LlmDialect.h - the llm extension dialect -----------------*- C++ -*-===//

#ifndef TESSERA_LLM_IR_LLMDIALECT_H
#define TESSERA_LLM_IR_LLMDIALECT_H

#include "mlir/IR/Dialect.h"

#include "tessera/llm/IR/LlmOpsDialect.h.inc"

#endif // TESSERA_LLM_IR_LLMDIALECT_H
