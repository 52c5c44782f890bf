//===- GradientCheckTest.cpp - every gradient rule vs finite differences --===//
//
// Each differentiable tsr op against central finite differences in float64
// (GradientCheck.h).
//
//===----------------------------------------------------------------------===//

#include "GradientCheck.h"

#include "tessera/Dialect/Tsr/IR/TsrDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <gtest/gtest.h>

using namespace mlir;
using tessera::testing::GradientCase;

namespace {

class GradientCheck : public ::testing::TestWithParam<GradientCase> {
protected:
  void SetUp() override {
    context.loadDialect<tessera::tsr::TsrDialect, func::FuncDialect>();
  }
  MLIRContext context;
};

TEST_P(GradientCheck, MatchesFiniteDifferences) {
  tessera::testing::checkGradient(context, GetParam());
}

const GradientCase kCases[] = {
    {"neg", "tensor<2x3xf64>", "", "%y = tsr.neg %p0 : tensor<2x3xf64>",
     "tensor<2x3xf64>"},
    {"exp", "tensor<2x3xf64>", "", "%y = tsr.exp %p0 : tensor<2x3xf64>",
     "tensor<2x3xf64>"},
    {"log", "tensor<2x3xf64>", "", "%y = tsr.log %p0 : tensor<2x3xf64>",
     "tensor<2x3xf64>", 0.5, 2.0},
    {"sqrt", "tensor<2x3xf64>", "", "%y = tsr.sqrt %p0 : tensor<2x3xf64>",
     "tensor<2x3xf64>", 0.5, 2.0},
    {"rsqrt", "tensor<2x3xf64>", "", "%y = tsr.rsqrt %p0 : tensor<2x3xf64>",
     "tensor<2x3xf64>", 0.5, 2.0},
    {"erf", "tensor<2x3xf64>", "", "%y = tsr.erf %p0 : tensor<2x3xf64>",
     "tensor<2x3xf64>"},
    {"tanh", "tensor<2x3xf64>", "", "%y = tsr.tanh %p0 : tensor<2x3xf64>",
     "tensor<2x3xf64>"},
    {"relu", "tensor<2x3xf64>", "", "%y = tsr.relu %p0 : tensor<2x3xf64>",
     "tensor<2x3xf64>"},
    {"sigmoid", "tensor<2x3xf64>", "", "%y = tsr.sigmoid %p0 : tensor<2x3xf64>",
     "tensor<2x3xf64>"},
    {"sin", "tensor<2x3xf64>", "", "%y = tsr.sin %p0 : tensor<2x3xf64>",
     "tensor<2x3xf64>"},
    {"cos", "tensor<2x3xf64>", "", "%y = tsr.cos %p0 : tensor<2x3xf64>",
     "tensor<2x3xf64>"},
    {"gelu_exact", "tensor<2x3xf64>", "",
     "%y = tsr.gelu exact %p0 : tensor<2x3xf64>", "tensor<2x3xf64>"},
    {"gelu_tanh", "tensor<2x3xf64>", "",
     "%y = tsr.gelu tanh %p0 : tensor<2x3xf64>", "tensor<2x3xf64>"},
    {"add_broadcast", "tensor<2x3xf64>, tensor<3xf64>", "",
     "%y = tsr.add %p0, %p1 : (tensor<2x3xf64>, tensor<3xf64>) -> "
     "tensor<2x3xf64>",
     "tensor<2x3xf64>"},
    {"sub_broadcast", "tensor<2x1xf64>, tensor<2x3xf64>", "",
     "%y = tsr.sub %p0, %p1 : (tensor<2x1xf64>, tensor<2x3xf64>) -> "
     "tensor<2x3xf64>",
     "tensor<2x3xf64>"},
    {"mul_broadcast", "tensor<2x3xf64>, tensor<f64>", "",
     "%y = tsr.mul %p0, %p1 : (tensor<2x3xf64>, tensor<f64>) -> "
     "tensor<2x3xf64>",
     "tensor<2x3xf64>"},
    {"div", "tensor<2x3xf64>, tensor<2x3xf64>", "",
     "%y = tsr.div %p0, %p1 : (tensor<2x3xf64>, tensor<2x3xf64>) -> "
     "tensor<2x3xf64>",
     "tensor<2x3xf64>", 0.5, 2.0},
    {"pow", "tensor<2x3xf64>, tensor<3xf64>", "",
     "%y = tsr.pow %p0, %p1 : (tensor<2x3xf64>, tensor<3xf64>) -> "
     "tensor<2x3xf64>",
     "tensor<2x3xf64>", 0.5, 2.0},
    {"where", "tensor<2x3xf64>, tensor<3xf64>", "tensor<2x3xi1>",
     "%y = tsr.where %i0, %p0, %p1 : (tensor<2x3xi1>, tensor<2x3xf64>, "
     "tensor<3xf64>) -> tensor<2x3xf64>",
     "tensor<2x3xf64>"},
    {"cast", "tensor<2x3xf64>", "",
     "%c = tsr.cast %p0 : tensor<2x3xf64> to tensor<2x3xf64>\n"
     "%y = tsr.mul %c, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> "
     "tensor<2x3xf64>",
     "tensor<2x3xf64>"},
    {"dropout", "tensor<4x5xf64>", "",
     "%d:2 = tsr.dropout %p0 ratio 0.3 seed 5 : tensor<4x5xf64>\n"
     "%y = tsr.mul %d#0, %p0 : (tensor<4x5xf64>, tensor<4x5xf64>) -> "
     "tensor<4x5xf64>",
     "tensor<4x5xf64>"},
    {"matmul_batched", "tensor<2x3x4xf64>, tensor<2x4x5xf64>", "",
     "%y = tsr.matmul %p0, %p1 : (tensor<2x3x4xf64>, tensor<2x4x5xf64>) -> "
     "tensor<2x3x5xf64>",
     "tensor<2x3x5xf64>"},
    {"matmul_weight", "tensor<2x3x4xf64>, tensor<4x5xf64>", "",
     "%y = tsr.matmul %p0, %p1 : (tensor<2x3x4xf64>, tensor<4x5xf64>) -> "
     "tensor<2x3x5xf64>",
     "tensor<2x3x5xf64>"},
    {"matmul_broadcast_lhs", "tensor<3x4xf64>, tensor<2x4x5xf64>", "",
     "%y = tsr.matmul %p0, %p1 : (tensor<3x4xf64>, tensor<2x4x5xf64>) -> "
     "tensor<2x3x5xf64>",
     "tensor<2x3x5xf64>"},
    {"softmax", "tensor<2x4xf64>", "",
     "%y = tsr.softmax %p0 {axis = 1 : i64} : tensor<2x4xf64>",
     "tensor<2x4xf64>"},
    {"softmax_axis0", "tensor<3x2xf64>", "",
     "%y = tsr.softmax %p0 {axis = 0 : i64} : tensor<3x2xf64>",
     "tensor<3x2xf64>"},
    {"log_softmax", "tensor<2x4xf64>", "",
     "%y = tsr.log_softmax %p0 {axis = 1 : i64} : tensor<2x4xf64>",
     "tensor<2x4xf64>"},
    {"layer_norm", "tensor<2x3x4xf64>, tensor<4xf64>, tensor<4xf64>", "",
     "%n:3 = tsr.layer_norm %p0, %p1, %p2 {axis = 2 : i64, epsilon = 1.0e-5 "
     ": f64} : (tensor<2x3x4xf64>, tensor<4xf64>, tensor<4xf64>) -> "
     "(tensor<2x3x4xf64>, tensor<2x3x1xf64>, tensor<2x3x1xf64>)\n"
     "%y = tsr.add %n#0, %n#0 : (tensor<2x3x4xf64>, tensor<2x3x4xf64>) -> "
     "tensor<2x3x4xf64>",
     "tensor<2x3x4xf64>"},
    {"layer_norm_two_axes_no_bias", "tensor<2x3x4xf64>, tensor<3x4xf64>", "",
     "%n:3 = tsr.layer_norm %p0, %p1 {axis = 1 : i64, epsilon = 1.0e-5 : "
     "f64} : (tensor<2x3x4xf64>, tensor<3x4xf64>) -> (tensor<2x3x4xf64>, "
     "tensor<2x1x1xf64>, tensor<2x1x1xf64>)\n"
     "%y = tsr.mul %n#0, %n#0 : (tensor<2x3x4xf64>, tensor<2x3x4xf64>) -> "
     "tensor<2x3x4xf64>",
     "tensor<2x3x4xf64>"},
    {"reduce_sum", "tensor<2x3x4xf64>", "",
     "%y = tsr.reduce_sum %p0 {axes = array<i64: 0, 2>} : (tensor<2x3x4xf64>) "
     "-> tensor<3xf64>",
     "tensor<3xf64>"},
    {"reduce_mean_keepdims", "tensor<2x3x4xf64>", "",
     "%y = tsr.reduce_mean %p0 {axes = array<i64: 1>, keepdims = true} : "
     "(tensor<2x3x4xf64>) -> tensor<2x1x4xf64>",
     "tensor<2x1x4xf64>"},
    {"reduce_max", "tensor<2x3x4xf64>", "",
     "%y = tsr.reduce_max %p0 {axes = array<i64: 2>} : (tensor<2x3x4xf64>) -> "
     "tensor<2x3xf64>",
     "tensor<2x3xf64>"},
    {"reshape", "tensor<2x6xf64>", "",
     "%r = tsr.reshape %p0 : tensor<2x6xf64> to tensor<3x4xf64>\n"
     "%y = tsr.mul %r, %r : (tensor<3x4xf64>, tensor<3x4xf64>) -> "
     "tensor<3x4xf64>",
     "tensor<3x4xf64>"},
    {"transpose", "tensor<2x3x4xf64>", "",
     "%t = tsr.transpose %p0 {perm = array<i64: 2, 0, 1>} : "
     "tensor<2x3x4xf64> to tensor<4x2x3xf64>\n"
     "%y = tsr.exp %t : tensor<4x2x3xf64>",
     "tensor<4x2x3xf64>"},
    {"broadcast_to", "tensor<3x1xf64>", "",
     "%b = tsr.broadcast_to %p0 : tensor<3x1xf64> to tensor<2x3x4xf64>\n"
     "%y = tsr.exp %b : tensor<2x3x4xf64>",
     "tensor<2x3x4xf64>"},
    {"slice", "tensor<4x6xf64>", "",
     "%s = tsr.slice %p0 {starts = array<i64: 1, 0>, limits = array<i64: 3, "
     "6>, steps = array<i64: 1, 1>} : tensor<4x6xf64> to tensor<2x6xf64>\n"
     "%y = tsr.exp %s : tensor<2x6xf64>",
     "tensor<2x6xf64>"},
    {"split", "tensor<2x6xf64>", "",
     "%s:3 = tsr.split %p0 {axis = 1 : i64, sizes = array<i64: 1, 2, 3>} : "
     "tensor<2x6xf64> -> tensor<2x1xf64>, tensor<2x2xf64>, tensor<2x3xf64>\n"
     "%y = tsr.mul %s#2, %s#0 : (tensor<2x3xf64>, tensor<2x1xf64>) -> "
     "tensor<2x3xf64>",
     "tensor<2x3xf64>"},
    {"concat", "tensor<2x3xf64>, tensor<1x3xf64>", "",
     "%c = tsr.concat %p0, %p1 {axis = 0 : i64} : (tensor<2x3xf64>, "
     "tensor<1x3xf64>) -> tensor<3x3xf64>\n"
     "%y = tsr.exp %c : tensor<3x3xf64>",
     "tensor<3x3xf64>"},
    {"gather_embedding", "tensor<5x3xf64>", "tensor<2x4xi64>",
     "%y = tsr.gather %p0[%i0] : (tensor<5x3xf64>, tensor<2x4xi64>) -> "
     "tensor<2x4x3xf64>",
     "tensor<2x4x3xf64>"},
    {"softmax_cross_entropy_mean", "tensor<6x4xf64>", "tensor<6xi64>",
     "%y = tsr.softmax_cross_entropy mean %p0, %i0 {ignore_index = 1 : i64} "
     ": (tensor<6x4xf64>, tensor<6xi64>) -> tensor<f64>",
     "tensor<f64>"},
    {"softmax_cross_entropy_sum", "tensor<6x4xf64>", "tensor<6xi64>",
     "%y = tsr.softmax_cross_entropy sum %p0, %i0 : (tensor<6x4xf64>, "
     "tensor<6xi64>) -> tensor<f64>",
     "tensor<f64>"},
    {"softmax_cross_entropy_none", "tensor<6x4xf64>", "tensor<6xi64>",
     "%y = tsr.softmax_cross_entropy none %p0, %i0 {ignore_index = 2 : i64} "
     ": (tensor<6x4xf64>, tensor<6xi64>) -> tensor<6xf64>",
     "tensor<6xf64>"},
};

INSTANTIATE_TEST_SUITE_P(
    TsrOps, GradientCheck, ::testing::ValuesIn(kCases),
    [](const ::testing::TestParamInfo<GradientCase> &info) {
      return std::string(info.param.name);
    });

} // namespace
