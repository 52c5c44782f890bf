//===- GradTest.cpp - backward ops against central finite differences -----===//
//
// Each backward op is checked as a vector-Jacobian product: for a random
// cotangent r, the gradient of L(x) = sum(forward(x) * r) by central
// differences (double precision) must match the op's result to a norm-wise
// relative error below 1e-6.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

using namespace tessera::rt;
using namespace tessera::rt::test;

namespace {

constexpr double kStep = 1e-5;
constexpr double kTolerance = 1e-6;

double dot(const Tensor &a, const Tensor &b) {
  std::vector<double> va = toDoubles(a), vb = toDoubles(b);
  EXPECT_EQ(va.size(), vb.size());
  double s = 0;
  for (size_t i = 0; i < va.size(); ++i)
    s += va[i] * vb[i];
  return s;
}

/// Central differences of the scalar `loss` with respect to every element
/// of the f64 tensor `x` (perturbed in place, then restored).
std::vector<double> numericGrad(Tensor &x,
                                const std::function<double()> &loss) {
  std::vector<double> g(x.numel());
  double *p = x.data<double>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    double saved = p[i];
    p[i] = saved + kStep;
    double up = loss();
    p[i] = saved - kStep;
    double down = loss();
    p[i] = saved;
    g[i] = (up - down) / (2 * kStep);
  }
  return g;
}

void expectGrad(const Tensor &analytic, const std::vector<double> &numeric,
                const std::string &what) {
  double err = normRelError(toDoubles(analytic), numeric);
  EXPECT_LT(err, kTolerance) << what;
}

} // namespace

TEST(Grad, SoftmaxAndLogSoftmaxEveryAxis) {
  Shape shape = {2, 3, 4};
  for (int64_t axis = -1; axis < 3; ++axis) {
    Tensor x = randn(shape, DType::f64, 100 + axis, 1.5);
    Tensor r = randn(shape, DType::f64, 200 + axis);
    std::vector<double> num =
        numericGrad(x, [&] { return dot(softmax(x, axis), r); });
    expectGrad(softmax_grad(softmax(x, axis), r, axis), num,
               "softmax axis " + std::to_string(axis));
    num = numericGrad(x, [&] { return dot(log_softmax(x, axis), r); });
    expectGrad(log_softmax_grad(log_softmax(x, axis), r, axis), num,
               "log_softmax axis " + std::to_string(axis));
  }
}

TEST(Grad, GeluExactAndTanh) {
  for (bool approx : {false, true}) {
    Tensor x = randn({5, 7}, DType::f64, 7, 2.0);
    Tensor r = randn({5, 7}, DType::f64, 8);
    std::vector<double> num =
        numericGrad(x, [&] { return dot(gelu(x, approx), r); });
    expectGrad(gelu_grad(x, r, approx), num, approx ? "tanh" : "exact");
  }
}

TEST(Grad, LayerNormInputWeightBias) {
  Shape shape = {3, 2, 6};
  for (int64_t axis : {-1, 1}) {
    int64_t a = axis < 0 ? axis + 3 : axis;
    Shape norm(shape.begin() + a, shape.end());
    Tensor x = randn(shape, DType::f64, 30, 1.3);
    Tensor w = add(randn(norm, DType::f64, 31, 0.5), scalar(1, DType::f64));
    Tensor b = randn(norm, DType::f64, 32);
    Tensor r = randn(shape, DType::f64, 33);
    auto loss = [&] {
      return dot(std::get<0>(layer_norm(x, w, b, axis, 1e-5)), r);
    };
    auto [y, mean, rstd] = layer_norm(x, w, b, axis, 1e-5);
    auto [dx, dw, db] = layer_norm_grad(r, x, w, mean, rstd, axis);
    EXPECT_EQ(dx.shape(), shape);
    EXPECT_EQ(dw.shape(), norm);
    EXPECT_EQ(db.shape(), norm);
    std::string where = " axis " + std::to_string(axis);
    expectGrad(dx, numericGrad(x, loss), "dx" + where);
    expectGrad(dw, numericGrad(w, loss), "dweight" + where);
    expectGrad(db, numericGrad(b, loss), "dbias" + where);
  }
}

TEST(Grad, SoftmaxCrossEntropyAllReductions) {
  Tensor logits = randn({9, 5}, DType::f64, 40, 2.0);
  Tensor labels = fromValues({9}, DType::i64, {0, 4, -1, 2, 2, 1, -1, 3, 0});
  for (Reduction red : {Reduction::mean, Reduction::sum, Reduction::none}) {
    Tensor g = red == Reduction::none ? randn({9}, DType::f64, 41)
                                      : scalar(1.7, DType::f64);
    std::vector<double> num = numericGrad(logits, [&] {
      return dot(softmax_cross_entropy(logits, labels, -1, red), g);
    });
    Tensor analytic = softmax_cross_entropy_grad(logits, labels, g, -1, red);
    expectGrad(analytic, num, "reduction " + std::to_string(int(red)));
    // Ignored rows get exactly zero.
    std::vector<double> a = toDoubles(analytic);
    for (int64_t c = 0; c < 5; ++c) {
      EXPECT_EQ(a[2 * 5 + c], 0.0);
      EXPECT_EQ(a[6 * 5 + c], 0.0);
    }
  }
}

TEST(Grad, SoftmaxCrossEntropyF32WithinItsRoundingBound) {
  // The f32 gradient against the f64 one of the same logits, element by
  // element. Each p_i = exp(x_i - max) / sum takes: the subtraction in f32
  // (relative error u, moving the exponential by u |x_i - max| relatively),
  // expf (below one ulp, 2u) and the sum of such terms (the same bounds at
  // the largest |x_j - max|); the product with scale / sum is in double,
  // and the result's rounding to f32 adds u |g|: |g32 - g64| <= (4 +
  // |x_i - max| + max_j |x_j - max|) u |p_i scale| + u |g64|, u = 2^-24
  // (the label's entry is (p_i - 1) scale, the 1 subtracted in double).
  const double u = std::ldexp(1.0, -24);
  const int64_t n = 7, c = 33;
  const std::vector<int64_t> label = {0, 32, -1, 5, 5, 17, 1};
  // Values that f32 holds exactly, so that both runs see the same logits.
  auto exact = [](const Tensor &t) {
    return cast(cast(t, DType::f32), DType::f64);
  };
  Tensor logits64 = exact(randn({n, c}, DType::f64, 50, 3.0));
  Tensor labels = fromValues({n}, DType::i64,
                             std::vector<double>(label.begin(), label.end()));
  std::vector<double> x = toDoubles(logits64);
  for (Reduction red : {Reduction::mean, Reduction::none}) {
    Tensor g64 = red == Reduction::none ? exact(randn({n}, DType::f64, 51))
                                        : scalar(1.75, DType::f64);
    std::vector<double> want =
        toDoubles(softmax_cross_entropy_grad(logits64, labels, g64, -1, red));
    std::vector<double> got = toDoubles(softmax_cross_entropy_grad(
        cast(logits64, DType::f32), labels, cast(g64, DType::f32), -1, red));
    std::vector<double> gs = toDoubles(g64);
    for (int64_t r = 0; r < n; ++r) {
      auto row = x.begin() + r * c;
      double mx = *std::max_element(row, row + c);
      double far = mx - *std::min_element(row, row + c);
      // mean divides by the 6 counted labels.
      double scale = red == Reduction::none ? gs[r] : gs[0] / 6.0;
      for (int64_t i = 0; i < c; ++i) {
        double w = want[r * c + i];
        double p = i == label[r] ? w + scale : w; // p_i scale
        double bound =
            (4 + (mx - row[i]) + far) * u * std::abs(p) + u * std::abs(w);
        EXPECT_LE(std::abs(got[r * c + i] - w), bound)
            << "row " << r << " class " << i;
      }
    }
  }
}

TEST(Grad, EmbeddingIsTheGatherAdjoint) {
  Tensor table = randn({6, 4}, DType::f64, 50);
  // Repeated ids must accumulate.
  Tensor ids = fromValues({2, 3}, DType::i64, {1, 5, 1, 0, 1, 3});
  Tensor r = randn({2, 3, 4}, DType::f64, 51);
  std::vector<double> num =
      numericGrad(table, [&] { return dot(gather(table, ids, 0), r); });
  Tensor analytic = embedding_grad(r, ids, {6, 4});
  expectGrad(analytic, num, "embedding_grad");
  // Rows never indexed are zero.
  std::vector<double> a = toDoubles(analytic);
  for (int64_t c = 0; c < 4; ++c) {
    EXPECT_EQ(a[2 * 4 + c], 0.0);
    EXPECT_EQ(a[4 * 4 + c], 0.0);
  }
  expectGrad(embedding_grad(r, cast(ids, DType::i32), {6, 4}), num, "i32 ids");
  expectError([&] { embedding_grad(r, ids, {6, 5}); }, "does not match");
  expectError([&] { embedding_grad(r, ids, {5, 4}); }, "index 5");
}
