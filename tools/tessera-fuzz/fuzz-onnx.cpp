//===- fuzz-onnx.cpp - the ONNX importer, then autodiff and the optimizer -===//
//
// Seeds: the bundled GPT's model.onnx and ONNX's node tests. A model that
// imports with a loss also goes through tsr-autodiff and tsr-optimizer,
// which must accept or reject (with a diagnostic) whatever the importer
// produces.
//
//===----------------------------------------------------------------------===//

#include "FuzzCommon.h"

#include "tessera/Dialect/Tsr/Transforms/Passes.h"
#include "tessera/Target/ONNX/ImportONNX.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

using namespace mlir;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static std::unique_ptr<MLIRContext> ctx = tessera::fuzz::quietContext();
  tessera::onnx_import::ImportOptions options;
  options.allowNoLoss = true;
  OwningOpRef<ModuleOp> module = tessera::onnx_import::importONNX(
      llvm::StringRef(reinterpret_cast<const char *>(data), size), "fuzz.onnx",
      ctx.get(), options);
  if (!module)
    return 0;
  bool hasLoss = false;
  module->walk([&](func::FuncOp f) {
    for (unsigned i = 0; i < f.getNumResults(); ++i)
      hasLoss = hasLoss ||
                f.getResultAttr(i, tessera::Tsr::LossAttrHelper::getNameStr());
  });
  if (!hasLoss)
    return 0;
  PassManager pm(ctx.get());
  pm.addPass(tessera::tsr::createTsrAutodiff());
  tessera::tsr::TsrOptimizerOptions adamw;
  adamw.optimizer = "adamw";
  pm.addPass(tessera::tsr::createTsrOptimizer(adamw));
  (void)pm.run(*module);
  return 0;
}
