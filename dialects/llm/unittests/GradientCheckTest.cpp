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
    // Tables whose halves differ (not a real rotary table), so that the
    // transposed map is checked in general, in both pairings.
    {"rope_halves", "tensor<2x3x4xf64>", "",
     "%c = tsr.constant dense<[[0.9, -0.3, 0.5, 1.2], [0.1, 0.7, -0.8, 0.4], "
     "[-0.6, 0.2, 0.3, -1.1]]> : tensor<3x4xf64>\n"
     "%s = tsr.constant dense<[[0.2, 1.1, -0.4, 0.6], [-0.9, 0.3, 0.8, -0.2], "
     "[0.5, -0.7, 1.3, 0.1]]> : tensor<3x4xf64>\n"
     "%y = llm.rope %p0, %c, %s : tensor<2x3x4xf64>, tensor<3x4xf64>",
     "tensor<2x3x4xf64>"},
    {"rope_interleaved", "tensor<2x3x4xf64>", "",
     "%c = tsr.constant dense<[[0.9, -0.3, 0.5, 1.2], [0.1, 0.7, -0.8, 0.4], "
     "[-0.6, 0.2, 0.3, -1.1]]> : tensor<3x4xf64>\n"
     "%s = tsr.constant dense<[[0.2, 1.1, -0.4, 0.6], [-0.9, 0.3, 0.8, -0.2], "
     "[0.5, -0.7, 1.3, 0.1]]> : tensor<3x4xf64>\n"
     "%y = llm.rope %p0, %c, %s {interleaved = true} : tensor<2x3x4xf64>, "
     "tensor<3x4xf64>",
     "tensor<2x3x4xf64>"},
    // Computed tables, and rope's own gradient differentiated again (the
    // transposed op's gradient is the forward op).
    {"rope_tables_transposed", "tensor<2x2x3x4xf64>", "",
     "%c, %s = llm.rope_tables {theta = 10.0 : f64} : tensor<3x4xf64>\n"
     "%y = llm.rope %p0, %c, %s {transpose = true} : tensor<2x2x3x4xf64>, "
     "tensor<3x4xf64>",
     "tensor<2x2x3x4xf64>"},
    {"repeat_kv", "tensor<2x2x3x2xf64>", "",
     "%y = llm.repeat_kv %p0 {repeats = 3 : i64} : tensor<2x2x3x2xf64> to "
     "tensor<2x6x3x2xf64>",
     "tensor<2x6x3x2xf64>"},
    // Causal over 70 positions: two query and key tiles of the kernels (64
    // wide), so the online softmax's rescaling, the skipped tile above the
    // diagonal and the partial diagonal tiles are all differentiated.
    {"attention_causal_tiles",
     "tensor<1x2x70x3xf64>, tensor<1x2x70x3xf64>, tensor<1x2x70x2xf64>", "",
     "%y, %lse = llm.attention %p0, %p1, %p2 {scale = 0.8 : f64, causal = "
     "true} : (tensor<1x2x70x3xf64>, tensor<1x2x70x3xf64>, "
     "tensor<1x2x70x2xf64>) -> (tensor<1x2x70x2xf64>, tensor<1x2x70x1xf64>)",
     "tensor<1x2x70x2xf64>"},
    // Not causal, more keys than queries, a value width of its own.
    {"attention_full",
     "tensor<2x5x3xf64>, tensor<2x7x3xf64>, tensor<2x7x4xf64>", "",
     "%y, %lse = llm.attention %p0, %p1, %p2 {scale = 1.3 : f64} : "
     "(tensor<2x5x3xf64>, tensor<2x7x3xf64>, tensor<2x7x4xf64>) -> "
     "(tensor<2x5x4xf64>, tensor<2x5x1xf64>)",
     "tensor<2x5x4xf64>"},
};

INSTANTIATE_TEST_SUITE_P(
    LlmOps, LlmGradientCheck, ::testing::ValuesIn(kCases),
    [](const ::testing::TestParamInfo<GradientCase> &info) {
      return std::string(info.param.name);
    });

} // namespace
