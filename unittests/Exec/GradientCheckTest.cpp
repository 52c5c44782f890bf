//===- GradientCheckTest.cpp - every gradient rule vs finite differences --===//
//
// For each differentiable tsr op: a float64 function
//   loss = sum(op(params...) * weights)
// is differentiated by tsr-autodiff and the gradient function is run by the
// interpreter; each parameter element's gradient must match the central
// finite difference of the forward (relative error below 1e-6, norm-wise).
// Weights are fixed pseudo-random values so that every output element
// matters with a different weight.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/Transforms/Passes.h"
#include "tessera/Exec/Interpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace mlir;
using namespace tessera;

namespace {

struct Case {
  const char *name;
  /// The function body: arguments %p0.. (params, f64), %i0.. (inputs),
  /// must define %y (any f64 tensor) from which the loss is built.
  const char *params; ///< "tensor<2x3xf64>, tensor<3xf64>"
  const char *inputs; ///< "tensor<2xi64>" or ""
  const char *body;
  const char *yType;
  /// Parameter values are drawn in [lo, hi] (positive for log, sqrt, ...).
  double lo = -1.5, hi = 1.5;
};

std::vector<std::string> splitTypes(const char *list) {
  std::vector<std::string> out;
  std::string s(list), cur;
  int depth = 0;
  for (char c : s) {
    if (c == '<')
      ++depth;
    if (c == '>')
      --depth;
    if (c == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
      continue;
    }
    if (!(cur.empty() && c == ' '))
      cur += c;
  }
  if (!cur.empty())
    out.push_back(cur);
  return out;
}

rt::Shape parseShape(const std::string &type, rt::DType &dtype) {
  // tensor<2x3xf64> -> {2, 3}
  std::string inner = type.substr(7, type.size() - 8);
  rt::Shape shape;
  size_t pos = 0;
  while (true) {
    size_t x = inner.find('x', pos);
    if (x == std::string::npos)
      break;
    shape.push_back(std::stoll(inner.substr(pos, x - pos)));
    pos = x + 1;
  }
  std::string et = inner.substr(pos);
  dtype = et == "f64"   ? rt::DType::f64
          : et == "i64" ? rt::DType::i64
          : et == "i1"  ? rt::DType::i1
                        : rt::DType::f32;
  return shape;
}

class GradientCheck : public ::testing::TestWithParam<Case> {
protected:
  void SetUp() override {
    context.loadDialect<tsr::TsrDialect, func::FuncDialect>();
  }
  MLIRContext context;
};

TEST_P(GradientCheck, MatchesFiniteDifferences) {
  const Case &c = GetParam();
  std::vector<std::string> params = splitTypes(c.params);
  std::vector<std::string> inputs = splitTypes(c.inputs);

  // The weights applied to y before summing.
  rt::DType yd;
  rt::Shape yShape = parseShape(c.yType, yd);
  int64_t yCount = rt::shapeNumel(yShape);
  std::mt19937_64 rng(12345);
  std::uniform_real_distribution<double> weight(-1.0, 1.0);
  std::string weights = "dense<[";
  for (int64_t i = 0; i < yCount; ++i)
    weights += (i ? ", " : "") + std::to_string(weight(rng));
  weights += "]>";
  std::string flat = "tensor<" + std::to_string(yCount) + "xf64>";

  std::string src = "func.func @f(";
  for (size_t i = 0; i < params.size(); ++i)
    src += (i ? ", " : "") + std::string("%p") + std::to_string(i) + ": " +
           params[i] + " {tsr.param = \"p" + std::to_string(i) + "\"}";
  for (size_t i = 0; i < inputs.size(); ++i)
    src += std::string(", %i") + std::to_string(i) + ": " + inputs[i] +
           " {tsr.input = \"i" + std::to_string(i) + "\"}";
  src += ") -> (tensor<f64> {tsr.loss}) {\n";
  src += c.body;
  src += "\n  %yf = tsr.reshape %y : " + std::string(c.yType) + " to " + flat +
         "\n  %w = tsr.constant " + weights + " : " + flat +
         "\n  %yw = tsr.mul %yf, %w : (" + flat + ", " + flat + ") -> " + flat +
         "\n  %loss = tsr.reduce_sum %yw {axes = array<i64: 0>} : (" + flat +
         ") -> tensor<f64>\n  return %loss : tensor<f64>\n}\n";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(src, &context);
  ASSERT_TRUE(module) << "cannot parse:\n" << src;

  PassManager pm(&context);
  pm.addPass(tsr::createTsrAutodiff());
  ASSERT_TRUE(succeeded(pm.run(*module))) << src;
  auto forward = module->lookupSymbol<func::FuncOp>("f");
  auto grad = module->lookupSymbol<func::FuncOp>("f_grad");
  ASSERT_TRUE(forward && grad);

  // Arguments: parameters at random points, inputs fixed.
  std::uniform_real_distribution<double> value(c.lo, c.hi);
  std::vector<rt::Tensor> args;
  for (const std::string &t : params) {
    rt::DType d;
    rt::Shape s = parseShape(t, d);
    std::vector<double> v(rt::shapeNumel(s));
    for (double &x : v)
      x = value(rng);
    args.push_back(rt::fromValues(s, d, v));
  }
  for (const std::string &t : inputs) {
    rt::DType d;
    rt::Shape s = parseShape(t, d);
    std::vector<double> v(rt::shapeNumel(s));
    for (size_t k = 0; k < v.size(); ++k)
      v[k] = d == rt::DType::i1 ? double(k % 3 != 0) : double((k * 7 + 1) % 3);
    args.push_back(rt::fromValues(s, d, v));
  }

  auto evaluate = [&](func::FuncOp f, const std::vector<rt::Tensor> &a) {
    rt::setDropoutCounter(0); // the same masks on every evaluation
    std::vector<rt::Tensor> results;
    std::string error;
    EXPECT_TRUE(exec::interpret(f, a, results, error)) << error;
    return results;
  };
  std::vector<rt::Tensor> analytic = evaluate(grad, args);
  ASSERT_EQ(analytic.size(), params.size() + 1);

  const double h = 1e-6;
  for (size_t p = 0; p < params.size(); ++p) {
    std::vector<double> base = rt::toDoubles(args[p]);
    std::vector<double> numeric(base.size());
    for (size_t k = 0; k < base.size(); ++k) {
      std::vector<double> plus = base, minus = base;
      plus[k] += h;
      minus[k] -= h;
      std::vector<rt::Tensor> a = args;
      a[p] = rt::fromValues(args[p].shape(), args[p].dtype(), plus);
      double fp = rt::toDoubles(evaluate(forward, a)[0])[0];
      a[p] = rt::fromValues(args[p].shape(), args[p].dtype(), minus);
      double fm = rt::toDoubles(evaluate(forward, a)[0])[0];
      numeric[k] = (fp - fm) / (2 * h);
    }
    std::vector<double> got = rt::toDoubles(analytic[p + 1]);
    ASSERT_EQ(got.size(), numeric.size());
    double diff = 0, norm = 0;
    for (size_t k = 0; k < got.size(); ++k) {
      diff += (got[k] - numeric[k]) * (got[k] - numeric[k]);
      norm += numeric[k] * numeric[k];
    }
    double rel = std::sqrt(diff) / std::max(std::sqrt(norm), 1e-12);
    EXPECT_LT(rel, 1e-6) << c.name << ": gradient of p" << p
                         << " differs from finite differences (relative " << rel
                         << ")";
  }
}

const Case kCases[] = {
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
    {"sigmoid", "tensor<2x3xf64>", "",
     "%y = tsr.sigmoid %p0 : tensor<2x3xf64>", "tensor<2x3xf64>"},
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

INSTANTIATE_TEST_SUITE_P(TsrOps, GradientCheck, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case> &info) {
                           return std::string(info.param.name);
                         });

} // namespace
