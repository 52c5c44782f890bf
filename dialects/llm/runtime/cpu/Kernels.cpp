//===- Kernels.cpp - the llm extension's CPU kernels ----------------------===//
//
// Row kernels over the last dimension; sums accumulate in double, as the
// core runtime's normalisations do, so that f32 results do not depend on
// the row length's rounding. Attention multiplies its tiles with BLAS (the
// OpenBLAS the core links). Written against the runtime's public Tensor
// API only: an extension needs nothing private of the core.
//
//===----------------------------------------------------------------------===//

#include "tessera/llm/Runtime.h"

#include "Operands.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <vector>

namespace tessera::rt::llm {

using namespace detail;

namespace {

void requireHost(const char *op, std::initializer_list<const Tensor *> ts) {
  for (const Tensor *t : ts)
    if (t->device() != Device::host)
      fail(op, std::string("the CPU kernel got a ") + deviceName(t->device()) +
                   " tensor");
}

} // namespace

std::tuple<Tensor, Tensor> rms_norm(const Tensor &x, const Tensor &weight,
                                    double epsilon) {
  const char *op = "llm::rms_norm";
  auto [rows, d] = rmsNormOperands(x, weight, op);
  requireHost(op, {&x, &weight});
  Tensor y(x.shape(), x.dtype()), rstd(rowStatShape(x), x.dtype());
  dispatchFloat(x.dtype(), [&, rows = rows, d = d](auto tag) {
    using T = decltype(tag);
    const T *px = x.data<T>(), *w = weight.data<T>();
    T *py = y.data<T>(), *pr = rstd.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      const T *in = px + r * d;
      double sq = 0;
      for (int64_t i = 0; i < d; ++i)
        sq += double(in[i]) * in[i];
      T s = static_cast<T>(1.0 / std::sqrt((d ? sq / d : 0.0) + epsilon));
      pr[r] = s;
      for (int64_t i = 0; i < d; ++i)
        py[r * d + i] = in[i] * s * w[i];
    }
  });
  return {y, rstd};
}

std::tuple<Tensor, Tensor> rms_norm_grad(const Tensor &grad, const Tensor &x,
                                         const Tensor &weight,
                                         const Tensor &rstd) {
  const char *op = "llm::rms_norm_grad";
  auto [rows, d] = rmsNormGradOperands(grad, x, weight, rstd, op);
  requireHost(op, {&grad, &x, &weight, &rstd});
  Tensor dx(x.shape(), x.dtype()), dw(weight.shape(), x.dtype());
  dispatchFloat(x.dtype(), [&, rows = rows, d = d](auto tag) {
    using T = decltype(tag);
    const T *pg = grad.data<T>(), *px = x.data<T>(), *w = weight.data<T>();
    const T *pr = rstd.data<T>();
    T *pdx = dx.data<T>();
    std::vector<double> accW(d, 0.0);
    for (int64_t r = 0; r < rows; ++r) {
      const T *g = pg + r * d, *in = px + r * d;
      double s = pr[r];
      // y_i = x_i s w_i with s = (mean(x^2) + eps)^(-1/2), ds/dx_j =
      // -s^3 x_j / n: dx_j = s g_j w_j - x_j s^3 mean_i(g_i w_i x_i).
      double dot = 0;
      for (int64_t i = 0; i < d; ++i) {
        dot += double(g[i]) * w[i] * in[i];
        accW[i] += double(g[i]) * in[i] * s;
      }
      double c = d ? s * s * s * dot / d : 0.0;
      for (int64_t i = 0; i < d; ++i)
        pdx[r * d + i] = static_cast<T>(s * g[i] * w[i] - in[i] * c);
    }
    T *pw = dw.data<T>();
    for (int64_t i = 0; i < d; ++i)
      pw[i] = static_cast<T>(accW[i]);
  });
  return {dx, dw};
}

Tensor silu(const Tensor &x) {
  const char *op = "llm::silu";
  requireFloat(x, op);
  requireHost(op, {&x});
  Tensor y(x.shape(), x.dtype());
  dispatchFloat(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T *px = x.data<T>();
    T *py = y.data<T>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i)
      py[i] = px[i] / (T(1) + std::exp(-px[i]));
  });
  return y;
}

Tensor swiglu(const Tensor &gate, const Tensor &up) {
  const char *op = "llm::swiglu";
  swigluOperands(gate, up, op);
  requireHost(op, {&gate, &up});
  Tensor y(gate.shape(), gate.dtype());
  dispatchFloat(gate.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T *pg = gate.data<T>(), *pu = up.data<T>();
    T *py = y.data<T>();
    for (int64_t i = 0, n = gate.numel(); i < n; ++i)
      py[i] = pg[i] / (T(1) + std::exp(-pg[i])) * pu[i];
  });
  return y;
}

Tensor rope(const Tensor &x, const Tensor &cos, const Tensor &sin,
            bool interleaved, bool transpose) {
  const char *op = "llm::rope";
  auto [rows, t, d] = ropeOperands(x, cos, sin, op);
  requireHost(op, {&x, &cos, &sin});
  Tensor y(x.shape(), x.dtype());
  int64_t half = d / 2;
  // rotate(v)_i = sign(i) v_partner(i); rotate^T(v)_i = -sign(i)
  // v_partner(i).
  auto partner = [&](int64_t i) {
    return interleaved ? (i ^ 1) : (i < half ? i + half : i - half);
  };
  auto sign = [&](int64_t i) {
    bool first = interleaved ? (i % 2 == 0) : (i < half);
    return first ? -1.0 : 1.0;
  };
  dispatchFloat(x.dtype(), [&, rows = rows, t = t, d = d](auto tag) {
    using T = decltype(tag);
    const T *px = x.data<T>(), *pc = cos.data<T>(), *ps = sin.data<T>();
    T *py = y.data<T>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t p = 0; p < t; ++p) {
        const T *in = px + (r * t + p) * d;
        const T *c = pc + p * d, *s = ps + p * d;
        T *out = py + (r * t + p) * d;
        for (int64_t i = 0; i < d; ++i) {
          int64_t j = partner(i);
          T rotated = transpose ? T(-sign(i)) * in[j] * s[j]
                                : T(sign(i)) * in[j] * s[i];
          out[i] = in[i] * c[i] + rotated;
        }
      }
  });
  return y;
}

std::tuple<Tensor, Tensor> rope_tables(double theta, bool interleaved,
                                       const Shape &shape, DType dtype) {
  const char *op = "llm::rope_tables";
  auto [rows, t, d] = ropeTablesOperands(shape, dtype, op);
  int64_t half = d / 2;
  Tensor c(shape, dtype), s(shape, dtype);
  dispatchFloat(dtype, [&, t = t, d = d](auto tag) {
    using T = decltype(tag);
    T *pc = c.data<T>(), *ps = s.data<T>();
    for (int64_t p = 0; p < t; ++p)
      for (int64_t i = 0; i < d; ++i) {
        int64_t j = interleaved ? i / 2 : i % half;
        double angle = double(p) * std::pow(theta, -2.0 * double(j) / d);
        pc[p * d + i] = static_cast<T>(std::cos(angle));
        ps[p * d + i] = static_cast<T>(std::sin(angle));
      }
  });
  return {c, s};
}

Tensor repeat_kv(const Tensor &x, int64_t repeats) {
  const char *op = "llm::repeat_kv";
  RepeatKv r = repeatKvOperands(x, repeats, op);
  requireHost(op, {&x});
  Tensor y(r.out, x.dtype());
  // One head's [t, d] block is contiguous: copy it `repeats` times.
  size_t bytes = size_t(r.blockElems) * dtypeSize(x.dtype());
  const char *src = static_cast<const char *>(x.rawData());
  char *dst = static_cast<char *>(y.rawData());
  for (int64_t g = 0; g < r.blocks; ++g)
    for (int64_t k = 0; k < repeats; ++k)
      std::memcpy(dst + (g * repeats + k) * bytes, src + g * bytes, bytes);
  return y;
}

//===----------------------------------------------------------------------===//
// attention
//===----------------------------------------------------------------------===//

namespace {

/// C = alpha op(A) op(B) + beta C, row-major, for m, n > 0 (k = 0 scales C).
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a,
          int64_t lda, const float *b, int64_t ldb, float beta, float *c,
          int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
              tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a, lda, b, ldb,
              beta, c, ldc);
}
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double *a,
          int64_t lda, const double *b, int64_t ldb, double beta, double *c,
          int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
              tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0, a, lda, b, ldb,
              beta, c, ldc);
}

/// The side of the square tiles of the [t, s] score matrix: 64 x 64 scores
/// (16 KiB in f32) stay in L1/L2 beside a tile of q and of k.
constexpr int64_t kTile = 64;

/// How many of the keys j0 .. j0 + cols - 1 query i sees.
int64_t visibleKeys(int64_t i, int64_t j0, int64_t cols, bool causal) {
  return causal ? std::clamp<int64_t>(i - j0 + 1, 0, cols) : cols;
}

template <typename T>
void attentionForward(const T *q, const T *k, const T *v, T *y, T *lse,
                      const AttentionDims &n, double scale, bool causal) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<T> scores(kTile * kTile), acc(kTile * n.e);
  std::vector<double> rowMax(kTile), rowSum(kTile);
  for (int64_t b = 0; b < n.slices; ++b) {
    const T *qb = q + b * n.t * n.d, *kb = k + b * n.s * n.d;
    const T *vb = v + b * n.s * n.e;
    T *yb = y + b * n.t * n.e, *lb = lse + b * n.t;
    for (int64_t i0 = 0; i0 < n.t; i0 += kTile) {
      int64_t rows = std::min(kTile, n.t - i0);
      std::fill(rowMax.begin(), rowMax.end(), -inf);
      std::fill(rowSum.begin(), rowSum.end(), 0.0);
      std::fill(acc.begin(), acc.end(), T(0));
      // A causal query tile sees the key tiles up to its diagonal one.
      int64_t keys = causal ? std::min(n.s, i0 + rows) : n.s;
      for (int64_t j0 = 0; j0 < keys; j0 += kTile) {
        int64_t cols = std::min(kTile, keys - j0);
        T *sc = scores.data();
        if (n.d > 0)
          gemm(false, true, rows, cols, n.d, qb + i0 * n.d, n.d, kb + j0 * n.d,
               n.d, T(0), sc, cols);
        else
          std::fill(sc, sc + rows * cols, T(0));
        // Online softmax: rescale what the row has summed so far to the
        // new maximum, add this tile's exponentials.
        for (int64_t r = 0; r < rows; ++r) {
          T *row = sc + r * cols;
          int64_t seen = visibleKeys(i0 + r, j0, cols, causal);
          double tileMax = -inf;
          for (int64_t c = 0; c < seen; ++c)
            tileMax = std::max(tileMax, scale * double(row[c]));
          double newMax = std::max(rowMax[r], tileMax);
          double sum = 0;
          for (int64_t c = 0; c < seen; ++c) {
            row[c] = static_cast<T>(std::exp(scale * double(row[c]) - newMax));
            sum += row[c];
          }
          std::fill(row + seen, row + cols, T(0));
          if (seen == 0)
            continue;
          double rescale = std::exp(rowMax[r] - newMax);
          rowSum[r] = rowSum[r] * rescale + sum;
          rowMax[r] = newMax;
          if (rescale != 1.0)
            for (int64_t c = 0; c < n.e; ++c)
              acc[r * n.e + c] = static_cast<T>(acc[r * n.e + c] * rescale);
        }
        if (n.e > 0)
          gemm(false, false, rows, n.e, cols, sc, cols, vb + j0 * n.e, n.e,
               T(1), acc.data(), n.e);
      }
      for (int64_t r = 0; r < rows; ++r) {
        double inv = rowSum[r] > 0 ? 1.0 / rowSum[r] : 0.0;
        for (int64_t c = 0; c < n.e; ++c)
          yb[(i0 + r) * n.e + c] = static_cast<T>(acc[r * n.e + c] * inv);
        lb[i0 + r] = static_cast<T>(
            rowSum[r] > 0 ? rowMax[r] + std::log(rowSum[r]) : -inf);
      }
    }
  }
}

template <typename T>
void attentionBackward(const T *g, const T *q, const T *k, const T *v,
                       const T *y, const T *lse, T *dq, T *dk, T *dv,
                       const AttentionDims &n, double scale, bool causal) {
  std::vector<T> p(kTile * kTile), ds(kTile * kTile);
  std::vector<double> dot(n.t);
  for (int64_t b = 0; b < n.slices; ++b) {
    const T *qb = q + b * n.t * n.d, *kb = k + b * n.s * n.d;
    const T *vb = v + b * n.s * n.e, *gb = g + b * n.t * n.e;
    const T *yb = y + b * n.t * n.e, *lb = lse + b * n.t;
    T *dqb = dq + b * n.t * n.d, *dkb = dk + b * n.s * n.d;
    T *dvb = dv + b * n.s * n.e;
    // D_i = g_i . y_i = sum_j p_ij (g_i . v_j), the softmax backward's row
    // term.
    for (int64_t i = 0; i < n.t; ++i) {
      double sum = 0;
      for (int64_t c = 0; c < n.e; ++c)
        sum += double(gb[i * n.e + c]) * yb[i * n.e + c];
      dot[i] = sum;
    }
    // Key tiles outside, so that each key tile's dk and dv accumulate in
    // place; the query tiles that see it (causal: from its diagonal on).
    for (int64_t j0 = 0; j0 < n.s; j0 += kTile) {
      int64_t cols = std::min(kTile, n.s - j0);
      for (int64_t i0 = causal ? j0 : 0; i0 < n.t; i0 += kTile) {
        int64_t rows = std::min(kTile, n.t - i0);
        T *pt = p.data(), *dst = ds.data();
        if (n.d > 0)
          gemm(false, true, rows, cols, n.d, qb + i0 * n.d, n.d, kb + j0 * n.d,
               n.d, T(0), pt, cols);
        else
          std::fill(pt, pt + rows * cols, T(0));
        for (int64_t r = 0; r < rows; ++r) {
          T *row = pt + r * cols;
          int64_t seen = visibleKeys(i0 + r, j0, cols, causal);
          for (int64_t c = 0; c < seen; ++c)
            row[c] = static_cast<T>(
                std::exp(scale * double(row[c]) - double(lb[i0 + r])));
          std::fill(row + seen, row + cols, T(0));
        }
        const T *gi = gb + i0 * n.e;
        if (n.e > 0) {
          // dv_j += p^T g_i; dp = g_i v_j^T.
          gemm(true, false, cols, n.e, rows, pt, cols, gi, n.e, T(1),
               dvb + j0 * n.e, n.e);
          gemm(false, true, rows, cols, n.e, gi, n.e, vb + j0 * n.e, n.e, T(0),
               dst, cols);
        } else {
          std::fill(dst, dst + rows * cols, T(0));
        }
        // ds = scale p (dp - D), zero where masked (p is).
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < cols; ++c)
            dst[r * cols + c] =
                static_cast<T>(scale * double(pt[r * cols + c]) *
                               (double(dst[r * cols + c]) - dot[i0 + r]));
        if (n.d > 0) {
          // dq_i += ds k_j; dk_j += ds^T q_i.
          gemm(false, false, rows, n.d, cols, dst, cols, kb + j0 * n.d, n.d,
               T(1), dqb + i0 * n.d, n.d);
          gemm(true, false, cols, n.d, rows, dst, cols, qb + i0 * n.d, n.d,
               T(1), dkb + j0 * n.d, n.d);
        }
      }
    }
  }
}

} // namespace

std::tuple<Tensor, Tensor> attention(const Tensor &q, const Tensor &k,
                                     const Tensor &v, double scale,
                                     bool causal) {
  const char *op = "llm::attention";
  AttentionDims dims = attentionOperands(q, k, v, causal, op);
  requireHost(op, {&q, &k, &v});
  Tensor y(attentionResultShape(q, dims), q.dtype());
  Tensor lse(rowStatShape(q), q.dtype());
  dispatchFloat(q.dtype(), [&](auto tag) {
    using T = decltype(tag);
    attentionForward(q.data<T>(), k.data<T>(), v.data<T>(), y.data<T>(),
                     lse.data<T>(), dims, scale, causal);
  });
  return {y, lse};
}

std::tuple<Tensor, Tensor, Tensor>
attention_grad(const Tensor &grad, const Tensor &q, const Tensor &k,
               const Tensor &v, const Tensor &y, const Tensor &lse,
               double scale, bool causal) {
  const char *op = "llm::attention_grad";
  AttentionDims dims = attentionGradOperands(grad, q, k, v, y, lse, causal, op);
  requireHost(op, {&grad, &q, &k, &v, &y, &lse});
  Tensor dq(q.shape(), q.dtype()), dk(k.shape(), k.dtype()),
      dv(v.shape(), v.dtype());
  dispatchFloat(q.dtype(), [&](auto tag) {
    using T = decltype(tag);
    std::fill(dq.data<T>(), dq.data<T>() + dq.numel(), T(0));
    std::fill(dk.data<T>(), dk.data<T>() + dk.numel(), T(0));
    std::fill(dv.data<T>(), dv.data<T>() + dv.numel(), T(0));
    attentionBackward(grad.data<T>(), q.data<T>(), k.data<T>(), v.data<T>(),
                      y.data<T>(), lse.data<T>(), dq.data<T>(), dk.data<T>(),
                      dv.data<T>(), dims, scale, causal);
  });
  return {dq, dk, dv};
}

} // namespace tessera::rt::llm
