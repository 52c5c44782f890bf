//===- MatmulTest.cpp - batched matmul with broadcasting batch dims -------===//

#include "TestUtil.h"

using namespace tessera::rt;
using namespace tessera::rt::test;

namespace {

std::vector<double> naiveMatmul(const Tensor &a, const Tensor &b) {
  int64_t m = a.dim(-2), k = a.dim(-1), n = b.dim(-1);
  Shape aBatch(a.shape().begin(), a.shape().end() - 2);
  Shape bBatch(b.shape().begin(), b.shape().end() - 2);
  Shape batch = broadcastShapes(aBatch, bBatch);
  std::vector<double> va = toDoubles(a), vb = toDoubles(b);
  int64_t count = shapeNumel(batch);
  std::vector<double> out(count * m * n, 0.0);
  for (int64_t bi = 0; bi < count; ++bi) {
    std::vector<int64_t> idx = unravel(bi, batch);
    int64_t ab = broadcastSource(idx, aBatch),
            bb = broadcastSource(idx, bBatch);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p)
          s += va[(ab * m + i) * k + p] * vb[(bb * k + p) * n + j];
        out[(bi * m + i) * n + j] = s;
      }
  }
  return out;
}

} // namespace

TEST(Matmul, MatchesNaiveWithBroadcastBatches) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{3, 4}, {4, 5}},
      {{2, 3, 4}, {4, 5}},          // Linear: one stacked GEMM
      {{2, 3, 4}, {2, 4, 5}},       // plain batches
      {{2, 2, 3, 4}, {2, 2, 4, 3}}, // attention q k^T
      {{2, 1, 3, 4}, {1, 5, 4, 6}}, // both broadcast
      {{3, 4}, {2, 4, 5}},          // lhs broadcast
      {{2, 3, 4}, {1, 4, 5}},       // rhs batch of 1
      {{1, 7, 1}, {1, 1, 3}},       // k = 1
      {{4, 1, 8}, {8, 1}},          // m = 1, n = 1
  };
  unsigned seed = 10;
  for (DType dtype : {DType::f32, DType::f64})
    for (const auto &c : cases) {
      Tensor a = randn(c.first, dtype, seed++);
      Tensor b = randn(c.second, dtype, seed++);
      Tensor r = matmul(a, b);
      Shape batch =
          broadcastShapes(Shape(c.first.begin(), c.first.end() - 2),
                          Shape(c.second.begin(), c.second.end() - 2));
      batch.push_back(c.first[c.first.size() - 2]);
      batch.push_back(c.second.back());
      EXPECT_EQ(r.shape(), batch);
      expectClose(r, naiveMatmul(a, b), dtype == DType::f32 ? 1e-5 : 1e-13,
                  shapeToString(c.first) + " @ " + shapeToString(c.second));
    }
}

TEST(Matmul, LargerThanABlock) {
  // Sizes past BLAS's blocking, odd on purpose.
  Tensor a = randn({3, 67, 129}, DType::f64, 1);
  Tensor b = randn({129, 45}, DType::f64, 2);
  expectClose(matmul(a, b), naiveMatmul(a, b), 1e-12);
}

TEST(Matmul, Errors) {
  expectError(
      [] {
        matmul(zeros({3, 4}, DType::f32), zeros({5, 2}, DType::f32));
      },
      "contracting dimensions differ: 3x4 times 5x2");
  expectError(
      [] {
        matmul(zeros({4}, DType::f32), zeros({4, 2}, DType::f32));
      },
      "rank >= 2");
  expectError(
      [] {
        matmul(zeros({2, 3, 4}, DType::f32), zeros({3, 4, 5}, DType::f32));
      },
      "do not broadcast");
}
