//===- fuzz-mlir.cpp - parse, verify and fold .mlir with Tessera's dialects
//===//
//
// Seeds: the lit tests' .mlir files. Exercises the custom assembly formats,
// every verifier (shape inference with its located errors) and, on what
// verifies, the folders and canonicalization patterns.
//
//===----------------------------------------------------------------------===//

#include "FuzzCommon.h"

#include "tessera/Support/InputFile.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static std::unique_ptr<MLIRContext> ctx = tessera::fuzz::quietContext();
  std::string text = tessera::fuzz::asText(data, size);
  // MLIR's parser recurses without a limit (a finding of this target:
  // [[[[...]]]] overflows the stack inside libMLIR); Tessera's tools check
  // the nesting first, and so does the fuzzer.
  if (!tessera::support::checkMlirDepth(text).empty())
    return 0;
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
