//===- GradientCheck.cpp - a gradient rule vs finite differences ----------===//

#include "GradientCheck.h"

#include "tessera/Dialect/Tsr/Transforms/Passes.h"
#include "tessera/Exec/Interpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace mlir;

namespace tessera::testing {

namespace {

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

} // namespace

void checkGradient(MLIRContext &context, const GradientCase &c) {
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

} // namespace tessera::testing
