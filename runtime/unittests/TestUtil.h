//===- TestUtil.h - helpers shared by the runtime's unit tests --*- C++ -*-===//

#ifndef TESSERA_RUNTIME_UNITTESTS_TESTUTIL_H
#define TESSERA_RUNTIME_UNITTESTS_TESTUTIL_H

#include "tessera/runtime/Runtime.h"

#include "gtest/gtest.h"

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace tessera {
namespace rt {
namespace test {

/// Normal(0, scale) values, deterministic in `seed`.
inline Tensor randn(const Shape &shape, DType dtype, unsigned seed,
                    double scale = 1.0) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> dist(0.0, scale);
  std::vector<double> v(shapeNumel(shape));
  for (double &x : v)
    x = dist(gen);
  return fromValues(shape, dtype, v);
}

/// Uniform integers in [lo, hi].
inline Tensor randint(const Shape &shape, DType dtype, int64_t lo, int64_t hi,
                      unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int64_t> dist(lo, hi);
  std::vector<double> v(shapeNumel(shape));
  for (double &x : v)
    x = static_cast<double>(dist(gen));
  return fromValues(shape, dtype, v);
}

inline std::vector<int64_t> unravel(int64_t linear, const Shape &shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] ? linear % shape[d] : 0;
    linear = shape[d] ? linear / shape[d] : 0;
  }
  return index;
}

inline int64_t ravel(const std::vector<int64_t> &index, const Shape &shape) {
  int64_t linear = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    linear = linear * shape[d] + index[d];
  return linear;
}

/// The element of a tensor of shape `in` that numpy broadcasting reads at
/// result index `outIndex` (naive reference).
inline int64_t broadcastSource(const std::vector<int64_t> &outIndex,
                               const Shape &in) {
  size_t shift = outIndex.size() - in.size();
  std::vector<int64_t> index(in.size());
  for (size_t d = 0; d < in.size(); ++d)
    index[d] = in[d] == 1 ? 0 : outIndex[shift + d];
  return ravel(index, in);
}

/// Max |a - b| / max(1, |b|) over all elements; shapes must match.
inline double maxRelDiff(const std::vector<double> &a,
                         const std::vector<double> &b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    double d = std::fabs(a[i] - b[i]) / std::max(1.0, std::fabs(b[i]));
    if (std::isnan(a[i]) != std::isnan(b[i]))
      d = INFINITY;
    else if (std::isnan(a[i]))
      d = 0;
    worst = std::max(worst, d);
  }
  return worst;
}

inline void expectClose(const Tensor &actual,
                        const std::vector<double> &expected, double tolerance,
                        const std::string &what = "") {
  std::vector<double> a = toDoubles(actual);
  ASSERT_EQ(a.size(), expected.size()) << what;
  EXPECT_LE(maxRelDiff(a, expected), tolerance) << what;
}

/// Norm-wise relative error ||a - b|| / ||b||.
inline double normRelError(const std::vector<double> &a,
                           const std::vector<double> &b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-300);
}

/// Calls f, expecting an Error whose message contains `needle`.
inline void expectError(const std::function<void()> &f,
                        const std::string &needle) {
  try {
    f();
    ADD_FAILURE() << "expected an error containing '" << needle << "'";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "message: " << e.what();
  }
}

} // namespace test
} // namespace rt
} // namespace tessera

#endif // TESSERA_RUNTIME_UNITTESTS_TESTUTIL_H
