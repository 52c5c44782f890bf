//===- fuzz-mlir.cpp - parse, verify and fold .mlir with Tessera's dialects
//===//
//
// Seeds: the lit tests' .mlir files. Exercises the custom assembly formats,
// every verifier (shape inference with its located errors) and, on what
// verifies, the folders and canonicalization patterns.
//
//===----------------------------------------------------------------------===//

#include "FuzzCommon.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static std::unique_ptr<MLIRContext> ctx = tessera::fuzz::quietContext();
  std::string text = tessera::fuzz::asText(data, size);
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(text, ctx.get(), "fuzz.mlir");
  if (!module || failed(verify(*module)))
    return 0;
  PassManager pm(ctx.get());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  (void)pm.run(*module);
  return 0;
}
