//===- NormalizationTest.cpp - softmax, layer_norm, cross-entropy, dropout ===//

#include "TestUtil.h"

using namespace tessera::rt;
using namespace tessera::rt::test;

namespace {

/// Naive softmax / log_softmax along `axis` through index arithmetic.
std::vector<double> naiveSoftmax(const Tensor &x, int64_t axis, bool logOut) {
  std::vector<double> v = toDoubles(x), out(v.size());
  const Shape &shape = x.shape();
  for (int64_t i = 0; i < x.numel(); ++i) {
    std::vector<int64_t> idx = unravel(i, shape);
    double mx = -INFINITY, sum = 0;
    for (int64_t k = 0; k < shape[axis]; ++k) {
      idx[axis] = k;
      mx = std::max(mx, v[ravel(idx, shape)]);
    }
    for (int64_t k = 0; k < shape[axis]; ++k) {
      idx[axis] = k;
      sum += std::exp(v[ravel(idx, shape)] - mx);
    }
    out[i] = logOut ? v[i] - mx - std::log(sum) : std::exp(v[i] - mx) / sum;
  }
  return out;
}

} // namespace

TEST(Softmax, EveryAxisBothDtypes) {
  Shape shape = {3, 4, 5};
  for (DType dtype : {DType::f32, DType::f64}) {
    Tensor x = randn(shape, dtype, 11, 3.0);
    for (int64_t axis = -3; axis < 3; ++axis) {
      int64_t a = axis < 0 ? axis + 3 : axis;
      double tol = dtype == DType::f32 ? 2e-6 : 1e-14;
      expectClose(softmax(x, axis), naiveSoftmax(x, a, false), tol, "softmax");
      expectClose(log_softmax(x, axis), naiveSoftmax(x, a, true), tol,
                  "log_softmax");
    }
  }
}

TEST(Softmax, StableForLargeAndMaskedInputs) {
  // Large logits must not overflow; -inf (the causal mask) gives 0.
  Tensor x =
      fromValues({2, 3}, DType::f32, {1000, 1001, 1002, 0, -INFINITY, 0});
  std::vector<double> y = toDoubles(softmax(x, -1));
  EXPECT_NEAR(y[2], 1 / (1 + std::exp(-1.0) + std::exp(-2.0)), 1e-6);
  EXPECT_EQ(y[4], 0.0);
  EXPECT_NEAR(y[3], 0.5, 1e-7);
  std::vector<double> ly = toDoubles(log_softmax(x, 1));
  EXPECT_TRUE(std::isfinite(ly[0]));
  EXPECT_NEAR(ly[3], std::log(0.5), 1e-6);
}

TEST(LayerNorm, MatchesNaiveForEveryAxis) {
  Shape shape = {2, 3, 8};
  for (DType dtype : {DType::f32, DType::f64}) {
    Tensor x = add(randn(shape, dtype, 21, 2.0), scalar(0.7, dtype));
    for (int64_t axis : {2, 1, 0, -1}) {
      int64_t a = axis < 0 ? axis + 3 : axis;
      Shape norm(shape.begin() + a, shape.end());
      Tensor w = randn(norm, dtype, 22), b = randn(norm, dtype, 23);
      for (bool withBias : {true, false}) {
        auto [y, mean, rstd] =
            layer_norm(x, w, withBias ? b : Tensor(), axis, 1e-5);
        Shape stat(shape.begin(), shape.begin() + a);
        stat.resize(3, 1);
        EXPECT_EQ(mean.shape(), stat);
        EXPECT_EQ(rstd.shape(), stat);
        int64_t d = shapeNumel(norm), rows = x.numel() / d;
        std::vector<double> xv = toDoubles(x), wv = toDoubles(w),
                            bv = toDoubles(b), ref(x.numel()), rm, rr;
        for (int64_t r = 0; r < rows; ++r) {
          double mu = 0, var = 0;
          for (int64_t i = 0; i < d; ++i)
            mu += xv[r * d + i] / d;
          for (int64_t i = 0; i < d; ++i)
            var += (xv[r * d + i] - mu) * (xv[r * d + i] - mu) / d;
          double rs = 1 / std::sqrt(var + 1e-5);
          rm.push_back(mu);
          rr.push_back(rs);
          for (int64_t i = 0; i < d; ++i)
            ref[r * d + i] =
                (xv[r * d + i] - mu) * rs * wv[i] + (withBias ? bv[i] : 0.0);
        }
        double tol = dtype == DType::f32 ? 5e-6 : 1e-13;
        expectClose(y, ref, tol, "y");
        expectClose(mean, rm, tol, "mean");
        expectClose(rstd, rr, tol, "rstd");
      }
    }
  }
  expectError(
      [] {
        layer_norm(zeros({2, 4}, DType::f32), zeros({3}, DType::f32), Tensor(),
                   -1, 1e-5);
      },
      "weight of shape 3 does not match the normalised dims 4");
}

namespace {
std::vector<double> naiveCrossEntropy(const Tensor &logits,
                                      const Tensor &labels, int64_t ignore,
                                      Reduction red) {
  std::vector<double> x = toDoubles(logits), l = toDoubles(labels), per;
  int64_t n = logits.dim(0), c = logits.dim(1), count = 0;
  double total = 0;
  for (int64_t r = 0; r < n; ++r) {
    if (l[r] == ignore) {
      per.push_back(0);
      continue;
    }
    double mx = -INFINITY, s = 0;
    for (int64_t i = 0; i < c; ++i)
      mx = std::max(mx, x[r * c + i]);
    for (int64_t i = 0; i < c; ++i)
      s += std::exp(x[r * c + i] - mx);
    double loss = mx + std::log(s) - x[r * c + static_cast<int64_t>(l[r])];
    per.push_back(loss);
    total += loss;
    ++count;
  }
  if (red == Reduction::none)
    return per;
  return {red == Reduction::sum ? total : total / count};
}
} // namespace

TEST(CrossEntropy, ReductionsIgnoreIndexAndLabelTypes) {
  for (DType dtype : {DType::f32, DType::f64}) {
    Tensor logits = randn({12, 7}, dtype, 31, 2.0);
    for (DType ldt : {DType::i64, DType::i32}) {
      Tensor labels = randint({12}, ldt, 0, 6, 32);
      // Every 4th label ignored, as check_reference.py's ignore test.
      std::vector<double> lv = toDoubles(labels);
      for (size_t i = 0; i < lv.size(); i += 4)
        lv[i] = -1;
      labels = fromValues({12}, ldt, lv);
      for (Reduction red : {Reduction::mean, Reduction::sum, Reduction::none}) {
        Tensor loss = softmax_cross_entropy(logits, labels, -1, red);
        EXPECT_EQ(loss.shape(), red == Reduction::none ? Shape{12} : Shape{});
        expectClose(loss, naiveCrossEntropy(logits, labels, -1, red),
                    dtype == DType::f32 ? 2e-6 : 1e-14);
      }
    }
  }
  // mean divides by the 9 counted labels, not by 12.
  Tensor logits = zeros({12, 4}, DType::f64);
  std::vector<double> lv(12, 1);
  lv[0] = lv[5] = lv[7] = 100;
  Tensor labels = fromValues({12}, DType::i64, lv);
  EXPECT_NEAR(item(softmax_cross_entropy(logits, labels, 100, Reduction::sum)),
              9 * std::log(4.0), 1e-12);
  EXPECT_NEAR(item(softmax_cross_entropy(logits, labels, 100, Reduction::mean)),
              std::log(4.0), 1e-12);
  expectError(
      [&] {
        softmax_cross_entropy(
            logits, fromValues({12}, DType::i64, std::vector<double>(12, 4)),
            -1, Reduction::mean);
      },
      "label 4 at position 0 is outside [0, 4)");
  expectError(
      [&] {
        softmax_cross_entropy(zeros({2, 3, 4}, DType::f32),
                              zeros({2}, DType::i64), -1, Reduction::mean);
      },
      "expected logits N x C");
}

TEST(Dropout, DeterministicScaledAndSetByTheCounter) {
  Tensor x = full({1000, 10}, DType::f32, 2.0);
  const std::vector<int64_t> whole;
  setBaseSeed(5);
  auto [y1, m1] = dropout(x, 0.3, 17, whole, whole);
  auto [y1b, m1b] = dropout(x, 0.3, 17, whole, whole);
  EXPECT_EQ(dropoutCounter(), 0u); // calls do not advance it
  EXPECT_EQ(toDoubles(m1), toDoubles(m1b));
  EXPECT_EQ(toDoubles(y1), toDoubles(y1b));
  setDropoutCounter(1); // the next step draws anew
  auto [y2, m2] = dropout(x, 0.3, 17, whole, whole);
  EXPECT_NE(toDoubles(m1), toDoubles(m2));
  // Another op seed, or another base seed, draws another mask.
  setDropoutCounter(0);
  EXPECT_NE(toDoubles(std::get<1>(dropout(x, 0.3, 18, whole, whole))),
            toDoubles(m1));
  setBaseSeed(6);
  EXPECT_NE(toDoubles(std::get<1>(dropout(x, 0.3, 17, whole, whole))),
            toDoubles(m1));

  EXPECT_EQ(m1.dtype(), DType::i1);
  std::vector<double> mv = toDoubles(m1), yv = toDoubles(y1);
  double kept = 0;
  for (size_t i = 0; i < mv.size(); ++i) {
    kept += mv[i];
    EXPECT_FLOAT_EQ(yv[i], mv[i] ? 2.0 / 0.7 : 0.0);
  }
  // 10000 Bernoulli(0.7) draws: 7000 +- 4.6 sigma.
  EXPECT_NEAR(kept, 7000, 210);

  auto [y0, m0] = dropout(x, 0.0, 1, whole, whole);
  EXPECT_EQ(toDoubles(y0), toDoubles(x));
  auto [yAll, mAll] = dropout(x, 1.0, 1, whole, whole);
  EXPECT_EQ(item(reduce_max(yAll, {0, 1}, false)), 0.0);
  EXPECT_THROW(dropout(x, 1.5, 1, whole, whole), Error);
  setBaseSeed(0);
}

// A plan splits a dropout into pieces (ranks, micro-batches): each piece,
// told where it lies, draws exactly its part of the whole tensor's mask.
TEST(Dropout, PiecesDrawTheirPartOfTheWholeMask) {
  setBaseSeed(3);
  setDropoutCounter(7);
  const Shape global = {4, 6, 10};
  Tensor x = full(global, DType::f32, 1.0);
  auto [yWhole, mWhole] = dropout(x, 0.5, 11, {}, {});
  // Naming the whole tensor as its own piece changes nothing.
  EXPECT_EQ(toDoubles(std::get<1>(dropout(x, 0.5, 11, global, {0, 0, 0}))),
            toDoubles(mWhole));
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t b = 0; b < 3; ++b) {
      std::vector<int64_t> starts = {2 * a, 2 * b, 0};
      std::vector<int64_t> limits = {2 * a + 2, 2 * b + 2, 10};
      Tensor piece = full({2, 2, 10}, DType::f32, 1.0);
      auto [y, m] = dropout(piece, 0.5, 11, global, starts);
      EXPECT_EQ(toDoubles(m),
                toDoubles(slice(mWhole, starts, limits, {1, 1, 1})))
          << "piece " << a << ", " << b;
      EXPECT_EQ(toDoubles(y),
                toDoubles(slice(yWhole, starts, limits, {1, 1, 1})));
    }
  Tensor piece = full({2, 2, 10}, DType::f32, 1.0);
  expectError(
      [&] {
        dropout(piece, 0.5, 11, global, {3, 0, 0});
      },
      "dropout: the input 2x2x10 at offsets [3, 0, 0] is not inside "
      "the whole tensor 4x6x10");
  expectError(
      [&] {
        dropout(piece, 0.5, 11, global, {0, 0});
      },
      "must have one entry per dimension of the input 2x2x10");
  expectError(
      [&] {
        dropout(piece, 0.5, 11, {}, {0, 0, 0});
      },
      "the whole tensor's shape [] and the piece's offsets [0, 0, 0]");
  setBaseSeed(0);
}
