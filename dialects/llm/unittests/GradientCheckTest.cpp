//===- GradientCheckTest.cpp - llm gradients vs finite differences --------===//
//
// Each llm op's gradient rule (LlmOps.cpp) and backward kernel against
// central finite differences of its forward kernel, in float64, through the
// interpreter (the core's harness, unittests/Exec/GradientCheck.h).
//
//===----------------------------------------------------------------------===//

#include "GradientCheck.h"

#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/llm/IR/LlmDialect.h"
#include "tessera/llm/Registration.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <gtest/gtest.h>

using namespace mlir;
using tessera::testing::GradientCase;

namespace {

class LlmGradientCheck : public ::testing::TestWithParam<GradientCase> {
protected:
  void SetUp() override {
    context.loadDialect<tessera::tsr::TsrDialect, tessera::llm::LlmDialect,
                        func::FuncDialect>();
    tessera::llm::registerLlmKernels();
  }
  MLIRContext context;
};

TEST_P(LlmGradientCheck, MatchesFiniteDifferences) {
  tessera::testing::checkGradient(context, GetParam());
}

const GradientCase kCases[] = {
    {"rms_norm", "tensor<3x5xf64>, tensor<5xf64>", "",
     "%r:2 = llm.rms_norm %p0, %p1 {epsilon = 1.0e-5 : f64} : "
     "(tensor<3x5xf64>, tensor<5xf64>) -> (tensor<3x5xf64>, tensor<3x1xf64>)\n"
     "%y = tsr.mul %r#0, %r#0 : (tensor<3x5xf64>, tensor<3x5xf64>) -> "
     "tensor<3x5xf64>",
     "tensor<3x5xf64>"},
    {"rms_norm_batched", "tensor<2x2x4xf64>, tensor<4xf64>", "",
     "%r:2 = llm.rms_norm %p0, %p1 {epsilon = 0.5 : f64} : "
     "(tensor<2x2x4xf64>, tensor<4xf64>) -> (tensor<2x2x4xf64>, "
     "tensor<2x2x1xf64>)\n"
     "%y = tsr.exp %r#0 : tensor<2x2x4xf64>",
     "tensor<2x2x4xf64>"},
    {"silu", "tensor<2x3xf64>", "",
     "%s = llm.silu %p0 : tensor<2x3xf64>\n"
     "%y = tsr.mul %s, %p0 : (tensor<2x3xf64>, tensor<2x3xf64>) -> "
     "tensor<2x3xf64>",
     "tensor<2x3xf64>", -4.0, 4.0},
    {"swiglu", "tensor<2x3xf64>, tensor<2x3xf64>", "",
     "%y = llm.swiglu %p0, %p1 : tensor<2x3xf64>", "tensor<2x3xf64>", -4.0,
     4.0},
};

INSTANTIATE_TEST_SUITE_P(
    LlmOps, LlmGradientCheck, ::testing::ValuesIn(kCases),
    [](const ::testing::TestParamInfo<GradientCase> &info) {
      return std::string(info.param.name);
    });

} // namespace
