//===- Raise.cpp - extension dialects' raising patterns -------------------===//
//
// The pass is generic: the patterns come from the dialects
// (RaisePatternInterface), as convert-to-emitc's come from
// ConvertToEmitCPatternInterface.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/Tsr/Transforms/Passes.h"
#include "tessera/Interfaces/ExtensionInterfaces.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Rewrite/FrozenRewritePatternSet.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/STLExtras.h"

namespace tessera::tsr {
#define GEN_PASS_DEF_TSRRAISE
#include "tessera/Dialect/Tsr/Transforms/Passes.h.inc"
} // namespace tessera::tsr

using namespace mlir;
using namespace tessera;

namespace {

struct RaisePass : public tsr::impl::TsrRaiseBase<RaisePass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *context) override {
    // Before the pass runs (single-threaded): the registered dialects that
    // the input does not use yet are the ones the patterns produce.
    context->loadAllAvailableDialects();
    RewritePatternSet set(context);
    for (Dialect *dialect : context->getLoadedDialects()) {
      if (!dialects.empty() &&
          !llvm::is_contained(dialects, dialect->getNamespace().str()))
        continue;
      if (auto *iface = dyn_cast<RaisePatternInterface>(dialect))
        iface->populateRaisePatterns(set);
    }
    patterns = FrozenRewritePatternSet(std::move(set));
    return success();
  }

  void runOnOperation() override {
    if (failed(applyPatternsGreedily(getOperation(), patterns)))
      getOperation().emitWarning("tsr-raise: the patterns did not converge");
  }

  FrozenRewritePatternSet patterns;
};

} // namespace
