//===- AttentionKernelTest.cpp - fused attention vs the plain formula -----===//
//
// llm::attention and llm::attention_grad (tiled, online softmax, BLAS on
// the tiles) against softmax(scale q k^T + mask) v and its gradients
// written out in double from the same inputs, on shapes that cross the
// kernels' 64-wide tiles. Every element must be within a bound derived
// from the kernel's arithmetic (first order in the unit roundoff u, for
// any BLAS kernel's summation order):
//
//   x = scale q.k: |dx_ij| <= scale gamma_d A_ij, A_ij = sum |q_i||k_j|;
//   p_ij (rounded, rescaled once per key tile): relative error
//     delta_ij = |dx_ij| + (tiles + 2) u; the normalisation doubles it;
//   y = sum_j p_ij v_j (BLAS over the tiles): gamma_(s + tiles) sum p |v|.
//
// The backward's terms follow the same rules (see bounds() below); each is
// doubled to cover the second-order terms. The float64 kernel must meet the
// same bounds with u = 2^-53, which checks the formula itself to about
// 1e-13 (the finite-difference test checks the gradients against it).
//
//===----------------------------------------------------------------------===//

#include "tessera/llm/Runtime.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace tessera::rt;

namespace {

struct Case {
  int64_t slices, t, s, d, e;
  double scale;
  bool causal;
};

/// The reference and the bound of each output element.
struct Expected {
  std::vector<double> y, lse, dq, dk, dv;
  std::vector<double> yTol, lseTol, dqTol, dkTol, dvTol;
};

double gamma(double n, double u) { return n * u / (1 - n * u); }

Expected reference(const Case &c, const std::vector<double> &q,
                   const std::vector<double> &k, const std::vector<double> &v,
                   const std::vector<double> &g, double u) {
  const int64_t t = c.t, s = c.s, d = c.d, e = c.e;
  const double tiles = double((std::max(t, s) + 63) / 64);
  Expected x;
  x.y.assign(c.slices * t * e, 0);
  x.yTol = x.y;
  x.lse.assign(c.slices * t, 0);
  x.lseTol = x.lse;
  x.dq.assign(c.slices * t * d, 0);
  x.dqTol = x.dq;
  x.dk.assign(c.slices * s * d, 0);
  x.dkTol = x.dk;
  x.dv.assign(c.slices * s * e, 0);
  x.dvTol = x.dv;
  for (int64_t b = 0; b < c.slices; ++b) {
    const double *qb = &q[b * t * d], *kb = &k[b * s * d];
    const double *vb = &v[b * s * e], *gb = &g[b * t * e];
    auto sees = [&](int64_t i, int64_t j) { return !c.causal || j <= i; };
    std::vector<double> p(t * s, 0), dx(t * s, 0), delta(t * s, 0);
    std::vector<double> dp(t * s, 0), ds(t * s, 0), dsTol(t * s, 0);
    for (int64_t i = 0; i < t; ++i) {
      double m = -std::numeric_limits<double>::infinity(), maxDelta = 0;
      for (int64_t j = 0; j < s; ++j) {
        if (!sees(i, j))
          continue;
        double dot = 0, abs = 0;
        for (int64_t a = 0; a < d; ++a) {
          dot += qb[i * d + a] * kb[j * d + a];
          abs += std::fabs(qb[i * d + a] * kb[j * d + a]);
        }
        dx[i * s + j] = c.scale * dot;
        delta[i * s + j] =
            std::fabs(c.scale) * gamma(d, u) * abs + (tiles + 2) * u;
        maxDelta = std::max(maxDelta, delta[i * s + j]);
        m = std::max(m, dx[i * s + j]);
      }
      double sum = 0;
      for (int64_t j = 0; j < s; ++j)
        if (sees(i, j))
          sum += std::exp(dx[i * s + j] - m);
      for (int64_t j = 0; j < s; ++j)
        p[i * s + j] = sees(i, j) ? std::exp(dx[i * s + j] - m) / sum : 0.0;
      x.lse[b * t + i] = m + std::log(sum);
      x.lseTol[b * t + i] =
          2 * (maxDelta + 2 * u * std::fabs(x.lse[b * t + i]));
      for (int64_t a = 0; a < e; ++a) {
        double y = 0, pv = 0;
        for (int64_t j = 0; j < s; ++j) {
          y += p[i * s + j] * vb[j * e + a];
          pv += p[i * s + j] * std::fabs(vb[j * e + a]);
        }
        x.y[(b * t + i) * e + a] = y;
        x.yTol[(b * t + i) * e + a] =
            2 * ((2 * maxDelta + gamma(s + tiles, u)) * pv + u * std::fabs(y));
      }
    }
    // Backward: D_i = g_i . y_i, dp = g v^T, ds = scale p (dp - D).
    for (int64_t i = 0; i < t; ++i) {
      double dI = 0, dTol = 0;
      for (int64_t a = 0; a < e; ++a) {
        double yv = x.y[(b * t + i) * e + a], gv = gb[i * e + a];
        dI += gv * yv;
        dTol += std::fabs(gv) *
                (x.yTol[(b * t + i) * e + a] + gamma(e, u) * std::fabs(yv));
      }
      for (int64_t j = 0; j < s; ++j) {
        if (!sees(i, j))
          continue;
        double dot = 0, abs = 0;
        for (int64_t a = 0; a < e; ++a) {
          dot += gb[i * e + a] * vb[j * e + a];
          abs += std::fabs(gb[i * e + a] * vb[j * e + a]);
        }
        double pij = p[i * s + j];
        double dpErr = delta[i * s + j] + x.lseTol[b * t + i];
        dp[i * s + j] = dot;
        ds[i * s + j] = c.scale * pij * (dot - dI);
        dsTol[i * s + j] =
            std::fabs(c.scale) * pij *
                (dpErr * std::fabs(dot - dI) + gamma(e, u) * abs + dTol) +
            u * std::fabs(ds[i * s + j]);
      }
    }
    for (int64_t i = 0; i < t; ++i)
      for (int64_t a = 0; a < d; ++a) {
        double sum = 0, err = 0, mag = 0;
        for (int64_t j = 0; j < s; ++j) {
          sum += ds[i * s + j] * kb[j * d + a];
          err += dsTol[i * s + j] * std::fabs(kb[j * d + a]);
          mag += std::fabs(ds[i * s + j] * kb[j * d + a]);
        }
        x.dq[(b * t + i) * d + a] = sum;
        x.dqTol[(b * t + i) * d + a] = 2 * (err + gamma(s + tiles, u) * mag);
      }
    for (int64_t j = 0; j < s; ++j) {
      for (int64_t a = 0; a < d; ++a) {
        double sum = 0, err = 0, mag = 0;
        for (int64_t i = 0; i < t; ++i) {
          sum += ds[i * s + j] * qb[i * d + a];
          err += dsTol[i * s + j] * std::fabs(qb[i * d + a]);
          mag += std::fabs(ds[i * s + j] * qb[i * d + a]);
        }
        x.dk[(b * s + j) * d + a] = sum;
        x.dkTol[(b * s + j) * d + a] = 2 * (err + gamma(t + tiles, u) * mag);
      }
      for (int64_t a = 0; a < e; ++a) {
        double sum = 0, err = 0, mag = 0;
        for (int64_t i = 0; i < t; ++i) {
          double pij = p[i * s + j], gv = gb[i * e + a];
          sum += pij * gv;
          err += pij * (delta[i * s + j] + x.lseTol[b * t + i]) * std::fabs(gv);
          mag += pij * std::fabs(gv);
        }
        x.dv[(b * s + j) * e + a] = sum;
        x.dvTol[(b * s + j) * e + a] = 2 * (err + gamma(t + tiles, u) * mag);
      }
    }
  }
  return x;
}

std::vector<double> randoms(size_t n, std::mt19937 &rng, double spread) {
  std::uniform_real_distribution<double> dist(-spread, spread);
  std::vector<double> v(n);
  for (double &x : v)
    x = dist(rng);
  return v;
}

/// Rounds `values` to `dtype` (the kernel's inputs) and back, so that the
/// reference sees exactly the kernel's operands.
Tensor make(const Shape &shape, DType dtype, std::vector<double> &values) {
  Tensor t = fromValues(shape, dtype, values);
  values = toDoubles(t);
  return t;
}

void expectWithin(const char *what, const std::vector<double> &got,
                  const std::vector<double> &want,
                  const std::vector<double> &tol) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 5; ++i)
    if (!(std::fabs(got[i] - want[i]) <= tol[i])) {
      ADD_FAILURE() << what << "[" << i << "] = " << got[i] << ", expected "
                    << want[i] << " +- " << tol[i];
      ++bad;
    }
}

void check(const Case &c, DType dtype, unsigned seed) {
  SCOPED_TRACE(::testing::Message()
               << "t " << c.t << " s " << c.s << " d " << c.d << " e " << c.e
               << (c.causal ? " causal " : " ") << dtypeName(dtype));
  std::mt19937 rng(seed);
  // Scores of a few units (scale * |q.k| up to ~3), as in trained models,
  // so that the softmax is neither flat nor one-hot.
  std::vector<double> q = randoms(c.slices * c.t * c.d, rng, 1.0);
  std::vector<double> k = randoms(c.slices * c.s * c.d, rng, 1.0);
  std::vector<double> v = randoms(c.slices * c.s * c.e, rng, 1.0);
  std::vector<double> g = randoms(c.slices * c.t * c.e, rng, 1.0);
  Tensor tq = make({c.slices, c.t, c.d}, dtype, q);
  Tensor tk = make({c.slices, c.s, c.d}, dtype, k);
  Tensor tv = make({c.slices, c.s, c.e}, dtype, v);
  Tensor tg = make({c.slices, c.t, c.e}, dtype, g);
  double u = dtype == DType::f32 ? std::ldexp(1.0, -24) : std::ldexp(1.0, -53);
  Expected x = reference(c, q, k, v, g, u);

  auto [y, lse] = llm::attention(tq, tk, tv, c.scale, c.causal);
  EXPECT_EQ(y.shape(), (Shape{c.slices, c.t, c.e}));
  EXPECT_EQ(lse.shape(), (Shape{c.slices, c.t, 1}));
  expectWithin("y", toDoubles(y), x.y, x.yTol);
  expectWithin("lse", toDoubles(lse), x.lse, x.lseTol);
  auto [dq, dk, dv] =
      llm::attention_grad(tg, tq, tk, tv, y, lse, c.scale, c.causal);
  expectWithin("dq", toDoubles(dq), x.dq, x.dqTol);
  expectWithin("dk", toDoubles(dk), x.dk, x.dkTol);
  expectWithin("dv", toDoubles(dv), x.dv, x.dvTol);
}

const Case kCases[] = {
    // Three tiles each way, the last one partial; d and e of real heads.
    {3, 150, 150, 32, 32, 1 / std::sqrt(32.0), true},
    {2, 150, 150, 16, 24, 0.25, false},
    // More keys than queries, keys cross a tile, queries do not.
    {2, 20, 70, 8, 5, 0.5, false},
    // One position, one tile exactly, and a tile plus one.
    {2, 1, 1, 8, 8, 0.35, true},
    {1, 64, 64, 8, 8, 0.35, true},
    {1, 65, 65, 8, 8, 0.35, true},
};

} // namespace

TEST(LlmAttentionKernel, F32MatchesTheFormula) {
  unsigned seed = 1;
  for (const Case &c : kCases)
    check(c, DType::f32, seed++);
}

TEST(LlmAttentionKernel, F64MatchesTheFormula) {
  unsigned seed = 100;
  for (const Case &c : kCases)
    check(c, DType::f64, seed++);
}

// The causal mask: a key after the query changes nothing of that query's
// row (the rows before position 40 are equal bit for bit when the keys and
// values from 40 on change).
TEST(LlmAttentionKernel, CausalRowsIgnoreLaterKeys) {
  std::mt19937 rng(7);
  int64_t t = 100, d = 8;
  std::vector<double> q = randoms(t * d, rng, 1), k = randoms(t * d, rng, 1),
                      v = randoms(t * d, rng, 1);
  Tensor tq = fromValues({1, t, d}, DType::f32, q);
  auto [y1, l1] =
      llm::attention(tq, fromValues({1, t, d}, DType::f32, k),
                     fromValues({1, t, d}, DType::f32, v), 0.3, true);
  for (int64_t i = 40 * d; i < t * d; ++i) {
    k[i] += 5;
    v[i] -= 3;
  }
  auto [y2, l2] =
      llm::attention(tq, fromValues({1, t, d}, DType::f32, k),
                     fromValues({1, t, d}, DType::f32, v), 0.3, true);
  std::vector<double> a = toDoubles(y1), b = toDoubles(y2);
  for (int64_t i = 0; i < 40 * d; ++i)
    ASSERT_EQ(a[i], b[i]) << i;
  bool changed = false;
  for (int64_t i = 40 * d; i < t * d; ++i)
    changed |= a[i] != b[i];
  EXPECT_TRUE(changed);
}
