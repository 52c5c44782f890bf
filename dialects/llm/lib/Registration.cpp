//===- Registration.cpp - the llm dialect and its lowering ----------------===//

#include "tessera/llm/Registration.h"
#include "tessera/Conversion/RuntimeCallToEmitC.h"
#include "tessera/llm/IR/LlmDialect.h"

using namespace mlir;

void tessera::llm::registerLlmDialect(DialectRegistry &registry) {
  registry.insert<LlmDialect>();
  // Every llm op describes its call (LlmOps.td): the common pattern lowers
  // them all.
  registerRuntimeCallToEmitCInterface<LlmDialect>(registry);
}
