//===- fuzz-plan-file.cpp - plan files, then dist-plan and dist-partition -===//
//
// Seeds: the plan files of the lit tests and docs/plans.md. A file the
// reader accepts is applied to a small training step (the two-layer MLP of
// test/Dialect/Dist/Transforms/Inputs/step.mlir) by dist-plan,
// dist-schedule and dist-partition, which must plan it or reject it with a
// diagnostic.
//
//===----------------------------------------------------------------------===//

#include "FuzzCommon.h"

#include "tessera/Dialect/Dist/Transforms/Passes.h"
#include "tessera/Dialect/Dist/Transforms/PlanFile.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <fstream>
#include <unistd.h>

using namespace mlir;

namespace {

/// The devices a plan needs: the mesh's product, or the product of a
/// policy's numbers ("dp2xtp2" -> 4); small so that partitioning is cheap.
int64_t devicesOf(const tessera::dist::PlanFile &plan) {
  // Saturates at 17: more devices than 16 are skipped anyway.
  auto times = [](int64_t a, int64_t b) {
    return std::min<int64_t>(a * b, 17);
  };
  int64_t n = 1;
  if (plan.mesh) {
    for (int64_t d : {plan.mesh->dp, plan.mesh->tp, plan.mesh->pp})
      n = times(n, std::min<int64_t>(d, 17));
  } else if (plan.policy) {
    int64_t digits = 0;
    for (char c : *plan.policy + "x") {
      if (c >= '0' && c <= '9')
        digits = std::min<int64_t>(digits * 10 + (c - '0'), 17);
      else if (digits) {
        n = times(n, digits);
        digits = 0;
      }
    }
    if (n == 1)
      n = 2; // "dp", "tp", "pp": all devices
  }
  return n;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static std::unique_ptr<MLIRContext> ctx = tessera::fuzz::quietContext();
  static OwningOpRef<ModuleOp> step =
      parseSourceFile<ModuleOp>(TESSERA_FUZZ_STEP_MLIR, ctx.get());
  static std::string path =
      "/tmp/tessera-fuzz-plan-" + std::to_string(::getpid()) + ".json";
  if (!step) {
    llvm::errs() << "cannot parse " << TESSERA_FUZZ_STEP_MLIR << "\n";
    std::abort();
  }
  std::string text = tessera::fuzz::asText(data, size);
  std::string error;
  auto plan = tessera::dist::parsePlanFile(text, "fuzz.json", error);
  if (!plan)
    return 0;
  int64_t devices = devicesOf(*plan);
  if (devices > 16)
    return 0;
  // The pass reads the plan from a file, as tessera-compile passes it.
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
  }
  OwningOpRef<ModuleOp> module(cast<ModuleOp>((*step)->clone()));
  PassManager pm(ctx.get());
  tessera::dist::DistPlanOptions options;
  options.plan = path;
  options.devices = devices;
  pm.addPass(tessera::dist::createDistPlan(options));
  pm.addPass(tessera::dist::createDistSchedule());
  pm.addPass(tessera::dist::createDistPartition());
  (void)pm.run(*module);
  return 0;
}
