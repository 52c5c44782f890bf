//===- OptimizerTest.cpp - SGD and AdamW against hand-computed steps ------===//

#include "TestUtil.h"

using namespace tessera::rt;
using namespace tessera::rt::test;

namespace {
Tensor f32(double v) { return scalar(v, DType::f32); }
} // namespace

TEST(Optimizer, SgdByHand) {
  Tensor p = fromValues({3}, DType::f64, {1.0, -2.0, 0.5});
  Tensor g = fromValues({3}, DType::f64, {0.5, 0.25, -1.0});
  // No weight decay: p - lr * g.
  expectClose(sgd_update(p, g, f32(0.1), f32(0)), {0.95, -2.025, 0.6}, 1e-8);
  // With weight decay 0.5: p - lr * (g + 0.5 p).
  expectClose(sgd_update(p, g, f32(0.1), f32(0.5)), {0.9, -1.925, 0.575}, 1e-8);
  // Value style: the inputs are untouched.
  EXPECT_EQ(toDoubles(p), (std::vector<double>{1.0, -2.0, 0.5}));
  expectError([&] { sgd_update(p, zeros({2}, DType::f64), f32(0.1), f32(0)); },
              "different shapes");
}

TEST(Optimizer, AdamWFirstStepByHand) {
  // p = 1, g = 0.5, lr 0.1, wd 0.01, betas (0.9, 0.999), eps 1e-8, t = 1:
  //   p *= 1 - 0.001          -> 0.999
  //   m = 0.1 * 0.5           =  0.05,    m_hat = 0.5
  //   v = 0.001 * 0.25        =  0.00025, sqrt(v_hat) = 0.5
  //   p -= 0.1 * 0.5 / (0.5 + 1e-8) -> 0.999 - 0.09999999800000004
  Tensor p = fromValues({1}, DType::f64, {1.0});
  Tensor g = fromValues({1}, DType::f64, {0.5});
  Tensor zero = zeros({1}, DType::f64);
  auto [p1, m1, v1] = adamw_update(
      p, g, zero, zero, scalar(1, DType::i64), scalar(0.1, DType::f64),
      scalar(0.9, DType::f64), scalar(0.999, DType::f64),
      scalar(1e-8, DType::f64), scalar(0.01, DType::f64));
  EXPECT_NEAR(item(m1), 0.05, 1e-16);
  EXPECT_NEAR(item(v1), 0.00025, 1e-18);
  EXPECT_NEAR(item(p1), 0.899000002, 1e-12);
}

TEST(Optimizer, AdamWSeveralStepsMatchTheTorchFormula) {
  const double lr = 3e-3, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.01;
  for (DType dtype : {DType::f64, DType::f32}) {
    Tensor p = randn({4, 5}, dtype, 1);
    Tensor m = zeros({4, 5}, dtype), v = zeros({4, 5}, dtype);
    std::vector<double> rp = toDoubles(p), rm(20, 0), rv(20, 0);
    for (int t = 1; t <= 5; ++t) {
      Tensor g = randn({4, 5}, dtype, 100 + t);
      std::vector<double> gv = toDoubles(g);
      std::tie(p, m, v) =
          adamw_update(p, g, m, v, scalar(t, DType::i64), f32(lr), f32(b1),
                       f32(b2), f32(eps), f32(wd));
      // The reference uses the hyperparameters as f32 values, as the
      // program's rank-0 f32 tensors carry them.
      double flr = float(lr), fb1 = float(b1), fb2 = float(b2),
             feps = float(eps), fwd = float(wd);
      for (int i = 0; i < 20; ++i) {
        rp[i] *= 1 - flr * fwd;
        rm[i] = fb1 * rm[i] + (1 - fb1) * gv[i];
        rv[i] = fb2 * rv[i] + (1 - fb2) * gv[i] * gv[i];
        double mhat = rm[i] / (1 - std::pow(fb1, t));
        double vhat = rv[i] / (1 - std::pow(fb2, t));
        rp[i] -= flr * mhat / (std::sqrt(vhat) + feps);
      }
    }
    double tol = dtype == DType::f64 ? 1e-13 : 1e-6;
    expectClose(p, rp, tol, "param");
    expectClose(m, rm, tol, "m");
    expectClose(v, rv, tol, "v");
  }
}

TEST(Optimizer, AdamWChecksItsOperands) {
  Tensor p = zeros({2}, DType::f32);
  expectError(
      [&] {
        adamw_update(p, p, p, p, scalar(0, DType::i64), f32(1), f32(.9),
                     f32(.9), f32(1e-8), f32(0));
      },
      "step must start at 1");
  expectError(
      [&] {
        adamw_update(p, p, p, zeros({3}, DType::f32), scalar(1, DType::i64),
                     f32(1), f32(.9), f32(.9), f32(1e-8), f32(0));
      },
      "different shapes");
  expectError(
      [&] {
        adamw_update(p, p, p, p, scalar(1, DType::i64), zeros({2}, DType::f32),
                     f32(.9), f32(.9), f32(1e-8), f32(0));
      },
      "lr must have one element");
}
