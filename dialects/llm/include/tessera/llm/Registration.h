//===- Registration.h - what the llm extension registers --------*- C++ -*-===//
//
// The llm extension plugs into Tessera with these calls and nothing else:
// the tools call registerLlmDialect (include/tessera/InitAll.h's
// registerAllDialects does), the interpreter's users registerLlmKernels.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_LLM_REGISTRATION_H
#define TESSERA_LLM_REGISTRATION_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace tessera::llm {

/// The llm dialect with its lowering to EmitC (ConvertToEmitCPatternInterface:
/// each op becomes its tessera::rt::llm call).
void registerLlmDialect(mlir::DialectRegistry &registry);

/// The CPU kernels, for the interpreter (tessera/Exec/Kernels.h).
void registerLlmKernels();

} // namespace tessera::llm

#endif // TESSERA_LLM_REGISTRATION_H
