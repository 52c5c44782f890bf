//===- Raise.h - the llm extension's raising patterns -----------*- C++ -*-===//

#ifndef TESSERA_LLM_RAISE_H
#define TESSERA_LLM_RAISE_H

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace tessera::llm {

/// The patterns that turn imported subgraphs into llm ops (lib/Raise.cpp);
/// the dialect's RaisePatternInterface adds them to tsr-raise.
void populateLlmRaisePatterns(mlir::RewritePatternSet &patterns);

} // namespace tessera::llm

#endif // TESSERA_LLM_RAISE_H
