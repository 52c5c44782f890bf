//===- ElementwiseTest.cpp - unary, binary, compare, where, cast ----------===//

#include "TestUtil.h"

#include <limits>

using namespace tessera::rt;
using namespace tessera::rt::test;

namespace {

const std::vector<std::pair<Shape, Shape>> kBroadcastCases = {
    {{3, 4}, {3, 4}},          // same shape
    {{2, 3, 4}, {4}},          // trailing dims (bias add)
    {{2, 3, 4}, {3, 4}},       // trailing dims (wte[idx] + wpe)
    {{4}, {2, 3, 4}},          // lhs broadcast
    {{2, 3, 4}, {3, 1}},       // inner broadcast
    {{2, 1, 4}, {1, 3, 1}},    // both broadcast
    {{}, {2, 3}},              // rank-0 lhs
    {{2, 3}, {}},              // rank-0 rhs
    {{5, 1}, {1, 6}},          // outer product
    {{2, 3, 4, 5}, {3, 1, 5}}, // middle broadcast
    {{1, 1, 1}, {2, 1, 3}},    // all ones
    {{0, 3}, {1, 3}},          // empty
};

/// Naive numpy-broadcast reference of op over doubles.
std::vector<double> naiveBinary(const Tensor &a, const Tensor &b,
                                double (*op)(double, double)) {
  Shape out = broadcastShapes(a.shape(), b.shape());
  std::vector<double> va = toDoubles(a), vb = toDoubles(b);
  std::vector<double> r(shapeNumel(out));
  for (int64_t i = 0; i < static_cast<int64_t>(r.size()); ++i) {
    std::vector<int64_t> idx = unravel(i, out);
    r[i] = op(va[broadcastSource(idx, a.shape())],
              vb[broadcastSource(idx, b.shape())]);
  }
  return r;
}

struct BinaryCase {
  const char *name;
  Tensor (*fn)(const Tensor &, const Tensor &);
  double (*ref)(double, double);
};

const BinaryCase kBinaryOps[] = {
    {"add", add, [](double x, double y) { return x + y; }},
    {"sub", sub, [](double x, double y) { return x - y; }},
    {"mul", mul, [](double x, double y) { return x * y; }},
    {"div", div, [](double x, double y) { return x / y; }},
    {"pow", pow, [](double x, double y) { return std::pow(x, y); }},
};

} // namespace

TEST(Elementwise, BinaryOpsBroadcastLikeNumpy) {
  unsigned seed = 1;
  for (DType dtype : {DType::f32, DType::f64}) {
    for (const auto &c : kBroadcastCases) {
      for (const BinaryCase &op : kBinaryOps) {
        Tensor a = randn(c.first, dtype, seed++);
        Tensor b = randn(c.second, dtype, seed++);
        if (std::string(op.name) == "pow") // positive bases
          a = add(mul(a, a), scalar(0.5, dtype));
        Tensor r = op.fn(a, b);
        EXPECT_EQ(r.shape(), broadcastShapes(c.first, c.second));
        EXPECT_EQ(r.dtype(), dtype);
        // f32 inputs are exact in double, so the reference differs by the
        // result's rounding only.
        expectClose(r, naiveBinary(a, b, op.ref),
                    dtype == DType::f32 ? 1e-6 : 1e-15,
                    std::string(op.name) + " " + shapeToString(c.first) +
                        " , " + shapeToString(c.second));
      }
    }
  }
}

TEST(Elementwise, BroadcastErrorsNameTheDimension) {
  expectError(
      [] {
        add(zeros({4, 8}, DType::f32), zeros({5}, DType::f32));
      },
      "add: shapes 4x8 and 5 do not broadcast: dimension 1");
  expectError([] { add(zeros({4}, DType::f32), zeros({4}, DType::f64)); },
              "different dtypes");
  expectError([] { add(zeros({4}, DType::i64), zeros({4}, DType::i64)); },
              "f32 or f64");
  EXPECT_EQ(broadcastShapes({2, 1, 3}, {4, 1}), (Shape{2, 4, 3}));
}

TEST(Elementwise, UnaryOpsMatchLibm) {
  struct Case {
    const char *name;
    Tensor (*fn)(const Tensor &);
    double (*ref)(double);
    bool positive;
  };
  const Case cases[] = {
      {"neg", neg, [](double x) { return -x; }, false},
      {"exp", exp, [](double x) { return std::exp(x); }, false},
      {"log", log, [](double x) { return std::log(x); }, true},
      {"sqrt", sqrt, [](double x) { return std::sqrt(x); }, true},
      {"rsqrt", rsqrt, [](double x) { return 1 / std::sqrt(x); }, true},
      {"erf", erf, [](double x) { return std::erf(x); }, false},
      {"tanh", tanh, [](double x) { return std::tanh(x); }, false},
      {"relu", relu, [](double x) { return x < 0 ? 0.0 : x; }, false},
  };
  for (DType dtype : {DType::f32, DType::f64}) {
    for (const Case &c : cases) {
      Tensor x = randn({3, 5, 7}, dtype, 42, 2.0);
      if (c.positive)
        x = add(mul(x, x), scalar(1e-2, dtype));
      std::vector<double> ref = toDoubles(x);
      for (double &v : ref)
        v = c.ref(v);
      Tensor y = c.fn(x);
      EXPECT_EQ(y.shape(), x.shape());
      expectClose(y, ref, dtype == DType::f32 ? 2e-6 : 1e-14, c.name);
    }
  }
}

TEST(Elementwise, GeluExactAndTanh) {
  Tensor x = fromValues({5}, DType::f64, {-3, -1, 0, 1, 2.5});
  std::vector<double> exact, approx;
  for (double v : toDoubles(x)) {
    exact.push_back(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
    approx.push_back(
        0.5 * v *
        (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))));
  }
  expectClose(gelu(x, false), exact, 1e-15);
  expectClose(gelu(x, true), approx, 1e-15);
  // Known values: torch.nn.functional.gelu(1.0) (exact and tanh).
  EXPECT_NEAR(toDoubles(gelu(x, false))[3], 0.8413447460685429, 1e-15);
  EXPECT_NEAR(toDoubles(gelu(x, true))[3], 0.8411919906082768, 1e-15);
}

TEST(Elementwise, CompareAllPredicatesAndDtypes) {
  const std::pair<Compare, bool (*)(double, double)> preds[] = {
      {Compare::eq, [](double x, double y) { return x == y; }},
      {Compare::ne, [](double x, double y) { return x != y; }},
      {Compare::lt, [](double x, double y) { return x < y; }},
      {Compare::le, [](double x, double y) { return x <= y; }},
      {Compare::gt, [](double x, double y) { return x > y; }},
      {Compare::ge, [](double x, double y) { return x >= y; }},
  };
  for (DType dtype : {DType::f32, DType::f64, DType::i32, DType::i64}) {
    // Small integers so that equality happens often.
    Tensor a = randint({2, 3, 4}, dtype, -2, 2, 5);
    Tensor b = randint({3, 1}, dtype, -2, 2, 6);
    for (const auto &p : preds) {
      Tensor r = compare(p.first, a, b);
      EXPECT_EQ(r.dtype(), DType::i1);
      std::vector<double> ref =
          naiveBinary(a, b, [](double, double) { return 0.0; }); // shape only
      std::vector<double> va = toDoubles(a), vb = toDoubles(b);
      for (int64_t i = 0; i < static_cast<int64_t>(ref.size()); ++i) {
        std::vector<int64_t> idx = unravel(i, r.shape());
        ref[i] = p.second(va[broadcastSource(idx, a.shape())],
                          vb[broadcastSource(idx, b.shape())]);
      }
      EXPECT_EQ(toDoubles(r), ref) << dtypeName(dtype);
    }
  }
}

TEST(Elementwise, WhereBroadcastsThreeWays) {
  // The attention mask pattern: where(mask[T,T], -inf, scores[B,H,T,T]).
  for (DType dtype : {DType::f32, DType::f64, DType::i64, DType::i1}) {
    Tensor cond = randint({4, 4}, DType::i1, 0, 1, 3);
    Tensor a = fromValues({}, dtype, {1});
    Tensor b = randint({2, 3, 4, 4}, dtype, 0, 9, 4);
    if (dtype == DType::i1)
      b = randint({2, 3, 4, 4}, dtype, 0, 1, 4);
    Tensor r = where(cond, a, b);
    ASSERT_EQ(r.shape(), (Shape{2, 3, 4, 4}));
    std::vector<double> vc = toDoubles(cond), vb = toDoubles(b),
                        vr = toDoubles(r);
    for (int64_t i = 0; i < r.numel(); ++i) {
      std::vector<int64_t> idx = unravel(i, r.shape());
      double expected = vc[broadcastSource(idx, cond.shape())] ? 1.0 : vb[i];
      ASSERT_EQ(vr[i], expected) << i;
    }
  }
  expectError(
      [] {
        where(zeros({2}, DType::f32), zeros({2}, DType::f32),
              zeros({2}, DType::f32));
      },
      "condition must be i1");
}

TEST(Elementwise, CastRules) {
  Tensor x = fromValues({5}, DType::f32, {-2.7, -0.5, 0, 0.5, 3.9});
  EXPECT_EQ(toDoubles(cast(x, DType::i64)),
            (std::vector<double>{-2, 0, 0, 0, 3}));
  EXPECT_EQ(toDoubles(cast(x, DType::i32)),
            (std::vector<double>{-2, 0, 0, 0, 3}));
  EXPECT_EQ(toDoubles(cast(x, DType::i1)),
            (std::vector<double>{1, 1, 0, 1, 1}));
  Tensor mask = fromValues({3}, DType::i1, {1, 0, 1});
  EXPECT_EQ(toDoubles(cast(mask, DType::f64)), (std::vector<double>{1, 0, 1}));
  Tensor big = fromValues({2}, DType::i64, {123456789, -7});
  EXPECT_EQ(toDoubles(cast(big, DType::f64)),
            (std::vector<double>{123456789, -7}));
  Tensor d = cast(x, DType::f64);
  EXPECT_EQ(toDoubles(cast(d, DType::f32)), toDoubles(x));
}

// bf16 is f32's upper half: conversions round to nearest, ties to even.
TEST(Elementwise, CastToBf16RoundsToNearestEven) {
  const double u = std::ldexp(1.0, -8); // half of bf16's spacing at 1
  Tensor x = fromValues({8}, DType::f32,
                        {1.0, 1 + u, 1 + 3 * u, 1 + 1.5 * u, -(1 + 3 * u),
                         std::numeric_limits<float>::max(),
                         std::numeric_limits<float>::infinity(),
                         std::ldexp(1.0, -133)});
  std::vector<double> got = toDoubles(cast(x, DType::bf16));
  std::vector<double> want = {1.0,
                              1.0,       // tie to the even 1.0
                              1 + 4 * u, // tie to the even 1 + 2^-6
                              1 + 2 * u, // above the tie: up
                              -(1 + 4 * u),
                              // f32's largest is past bf16's largest + half
                              // a spacing: it overflows
                              std::numeric_limits<double>::infinity(),
                              std::numeric_limits<double>::infinity(),
                              std::ldexp(1.0, -133)}; // subnormal, exact
  EXPECT_EQ(got, want);
  Tensor nan = fromValues({1}, DType::f32, {std::nan("")});
  EXPECT_TRUE(std::isnan(toDoubles(cast(nan, DType::bf16))[0]));
  // Back to f32 and f64 exactly; to integers through f32's truncation.
  Tensor b = cast(x, DType::bf16);
  EXPECT_EQ(toDoubles(cast(b, DType::f32)), got);
  EXPECT_EQ(toDoubles(cast(b, DType::f64)), got);
  Tensor small = fromValues({3}, DType::bf16, {-2.5, 0, 7.75});
  EXPECT_EQ(toDoubles(cast(small, DType::i32)),
            (std::vector<double>{-2, 0, 7}));
  EXPECT_EQ(toDoubles(cast(small, DType::i1)), (std::vector<double>{1, 0, 1}));
}

// A double rounds to bf16 once: through f32's own rounding, 1 + 2^-8 +
// 2^-40 would become the tie 1 + 2^-8 and then 1.0.
TEST(Elementwise, Bf16FromDoubleRoundsOnce) {
  const double u = std::ldexp(1.0, -8);
  Tensor d =
      fromValues({2}, DType::f64, {1 + u + std::ldexp(1.0, -40), -(1 + u)});
  EXPECT_EQ(toDoubles(cast(d, DType::bf16)),
            (std::vector<double>{1 + 2 * u, -1.0}));
  EXPECT_EQ(
      toDoubles(fromValues({1}, DType::bf16, {1 + u + std::ldexp(1.0, -40)})),
      (std::vector<double>{1 + 2 * u}));
}

// The arithmetic kernels take f32 and f64; bf16 is converted around them.
TEST(Elementwise, Bf16IsNotArithmetic) {
  Tensor b = fromValues({2}, DType::bf16, {1, 2});
  expectError([&] { add(b, b); }, "got bf16");
}
