//===- LlmDialect.cpp - the llm extension dialect -------------------------===//

#include "tessera/llm/IR/LlmDialect.h"
#include "tessera/llm/IR/LlmOps.h"

#include "mlir/Transforms/InliningUtils.h"

using namespace mlir;
using namespace tessera::llm;

#include "tessera/llm/IR/LlmOpsDialect.cpp.inc"

namespace {
/// llm ops are pure value computations, as tsr's: always legal to inline.
struct LlmInlinerInterface : public DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;
  bool isLegalToInline(Operation *, Region *, bool, IRMapping &) const final {
    return true;
  }
};
} // namespace

void LlmDialect::initialize() {
  addInterfaces<LlmInlinerInterface>();
  addOperations<
#define GET_OP_LIST
#include "tessera/llm/IR/LlmOps.cpp.inc"
      >();
}
