//===- Normalization.cpp - softmax, layer_norm, cross-entropy and grads ---===//
//
// Row kernels: each works on contiguous rows along the reduced axis. For an
// axis that is not the last one, each row is gathered into a contiguous
// buffer first (the model only uses last-axis softmax; other axes are rare
// enough that the copy is the simpler price). Sums accumulate in double so
// that f32 results do not depend on the row length's rounding.
//
//===----------------------------------------------------------------------===//

#include "tessera/runtime/Ops.h"

#include "Kernels.h"

#include <cmath>
#include <limits>
#include <type_traits>

namespace tessera {
namespace rt {
using namespace detail;

namespace {

/// Calls fn(in0Row, in1Row, outRow, d) for every row of `shape` along
/// `axis` (in1 may be null). Rows along a non-last axis go through
/// contiguous scratch buffers.
template <typename T, typename Fn>
void forEachRow(const Shape &shape, int64_t axis, const T *in0, const T *in1,
                T *out, Fn fn) {
  AxisSplit s = splitAt(shape, axis);
  int64_t d = s.size;
  if (s.inner == 1) {
    for (int64_t r = 0; r < s.outer; ++r)
      fn(in0 + r * d, in1 ? in1 + r * d : nullptr, out + r * d, d);
    return;
  }
  std::vector<T> a(d), b(in1 ? d : 0), y(d);
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t j = 0; j < s.inner; ++j) {
      int64_t base = o * d * s.inner + j;
      for (int64_t i = 0; i < d; ++i) {
        a[i] = in0[base + i * s.inner];
        if (in1)
          b[i] = in1[base + i * s.inner];
      }
      fn(a.data(), in1 ? b.data() : nullptr, y.data(), d);
      for (int64_t i = 0; i < d; ++i)
        out[base + i * s.inner] = y[i];
    }
  }
}

template <typename T> T rowMax(const T *x, int64_t d) {
  T mx = -std::numeric_limits<T>::infinity();
  for (int64_t i = 0; i < d; ++i)
    mx = x[i] > mx ? x[i] : mx;
  return mx;
}

/// log(sum(exp(x))) of a row, stable against overflow.
template <typename T> double rowLogSumExp(const T *x, int64_t d) {
  T mx = rowMax(x, d);
  if (std::isinf(mx))
    return static_cast<double>(mx); // all -inf (masked) or +inf present
  double sum = 0;
  for (int64_t i = 0; i < d; ++i)
    sum += std::exp(x[i] - mx);
  return static_cast<double>(mx) + std::log(sum);
}

enum class SoftmaxKind { softmax, logSoftmax };

Tensor softmaxImpl(const Tensor &x, int64_t axis, SoftmaxKind kind,
                   const char *name) {
  int64_t a = softmaxAxis(x, axis, name);
  Tensor out(x.shape(), x.dtype());
  dispatchFloat(x.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    forEachRow<T>(x.shape(), a, x.data<T>(), nullptr, out.data<T>(),
                  [&](const T *in, const T *, T *y, int64_t d) {
                    T mx = rowMax(in, d);
                    double sum = 0;
                    if (kind == SoftmaxKind::softmax) {
                      for (int64_t i = 0; i < d; ++i) {
                        y[i] = std::exp(in[i] - mx);
                        sum += y[i];
                      }
                      T inv = static_cast<T>(1.0 / sum);
                      for (int64_t i = 0; i < d; ++i)
                        y[i] *= inv;
                    } else {
                      for (int64_t i = 0; i < d; ++i)
                        sum += std::exp(in[i] - mx);
                      T shift = static_cast<T>(static_cast<double>(mx) +
                                               std::log(sum));
                      for (int64_t i = 0; i < d; ++i)
                        y[i] = in[i] - shift;
                    }
                  });
  });
  return out;
}

Tensor softmaxGradImpl(const Tensor &output, const Tensor &grad, int64_t axis,
                       SoftmaxKind kind, const char *name) {
  int64_t a = softmaxGradAxis(output, grad, axis, name);
  Tensor out(output.shape(), output.dtype());
  dispatchFloat(output.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    forEachRow<T>(output.shape(), a, output.data<T>(), grad.data<T>(),
                  out.data<T>(),
                  [&](const T *y, const T *dy, T *dx, int64_t d) {
                    double sum = 0;
                    if (kind == SoftmaxKind::softmax) {
                      // dx = y * (dy - sum(dy * y))
                      for (int64_t i = 0; i < d; ++i)
                        sum += static_cast<double>(dy[i]) * y[i];
                      T s = static_cast<T>(sum);
                      for (int64_t i = 0; i < d; ++i)
                        dx[i] = y[i] * (dy[i] - s);
                    } else {
                      // dx = dy - exp(y) * sum(dy)
                      for (int64_t i = 0; i < d; ++i)
                        sum += dy[i];
                      T s = static_cast<T>(sum);
                      for (int64_t i = 0; i < d; ++i)
                        dx[i] = dy[i] - std::exp(y[i]) * s;
                    }
                  });
  });
  return out;
}

template <typename I>
void checkLabels(const I *labels, int64_t n, int64_t classes,
                 int64_t ignoreIndex, const char *name, int64_t *count) {
  *count = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t label = labels[i];
    if (label == ignoreIndex)
      continue;
    if (label < 0 || label >= classes)
      fail(name, "label " + std::to_string(label) + " at position " +
                     std::to_string(i) + " is outside [0, " +
                     std::to_string(classes) + ") (ignore_index is " +
                     std::to_string(ignoreIndex) + ")");
    ++*count;
  }
}

} // namespace

Tensor softmax(const Tensor &x, int64_t axis) {
  return softmaxImpl(x, axis, SoftmaxKind::softmax, "softmax");
}

Tensor log_softmax(const Tensor &x, int64_t axis) {
  return softmaxImpl(x, axis, SoftmaxKind::logSoftmax, "log_softmax");
}

Tensor softmax_grad(const Tensor &output, const Tensor &grad, int64_t axis) {
  return softmaxGradImpl(output, grad, axis, SoftmaxKind::softmax,
                         "softmax_grad");
}

Tensor log_softmax_grad(const Tensor &output, const Tensor &grad,
                        int64_t axis) {
  return softmaxGradImpl(output, grad, axis, SoftmaxKind::logSoftmax,
                         "log_softmax_grad");
}

std::tuple<Tensor, Tensor, Tensor> layer_norm(const Tensor &x,
                                              const Tensor &weight,
                                              const Tensor &bias, int64_t axis,
                                              double epsilon) {
  const char *name = "layer_norm";
  LayerNormShape ln = layerNormOperands(x, weight, bias, axis);
  // Plain variables, not a structured binding: lambdas cannot capture
  // those in C++17.
  int64_t rows = ln.rows, d = ln.d;
  Tensor y(x.shape(), x.dtype()), mean(ln.statShape, x.dtype()),
      rstd(ln.statShape, x.dtype());
  dispatchFloat(x.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    const T *px = x.data<T>();
    const T *w = weight.data<T>();
    const T *b = bias.defined() ? bias.data<T>() : nullptr;
    T *py = y.data<T>(), *pm = mean.data<T>(), *pr = rstd.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      const T *in = px + r * d;
      T *out = py + r * d;
      double sum = 0;
      for (int64_t i = 0; i < d; ++i)
        sum += in[i];
      double mu = d ? sum / d : 0.0;
      double sq = 0;
      for (int64_t i = 0; i < d; ++i) {
        double c = in[i] - mu;
        sq += c * c;
      }
      double inv = 1.0 / std::sqrt((d ? sq / d : 0.0) + epsilon);
      T m = static_cast<T>(mu), s = static_cast<T>(inv);
      pm[r] = m;
      pr[r] = s;
      if (b) {
        for (int64_t i = 0; i < d; ++i)
          out[i] = (in[i] - m) * s * w[i] + b[i];
      } else {
        for (int64_t i = 0; i < d; ++i)
          out[i] = (in[i] - m) * s * w[i];
      }
    }
  });
  return {y, mean, rstd};
}

std::tuple<Tensor, Tensor, Tensor>
layer_norm_grad(const Tensor &grad, const Tensor &x, const Tensor &weight,
                const Tensor &mean, const Tensor &rstd, int64_t axis) {
  const char *name = "layer_norm_grad";
  LayerNormShape ln = layerNormGradOperands(grad, x, weight, mean, rstd, axis);
  int64_t rows = ln.rows, d = ln.d;
  Tensor dx(x.shape(), x.dtype()), dw(weight.shape(), x.dtype()),
      db(weight.shape(), x.dtype());
  dispatchFloat(x.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    const T *pg = grad.data<T>(), *px = x.data<T>(), *w = weight.data<T>();
    const T *pm = mean.data<T>(), *pr = rstd.data<T>();
    T *pdx = dx.data<T>();
    std::vector<double> accW(d, 0.0), accB(d, 0.0);
    std::vector<T> xhat(d);
    for (int64_t r = 0; r < rows; ++r) {
      const T *g = pg + r * d, *in = px + r * d;
      T *out = pdx + r * d;
      T m = pm[r], s = pr[r];
      // dx = rstd * (g*w - mean(g*w) - xhat * mean(g*w*xhat))
      double sumG = 0, sumGX = 0;
      for (int64_t i = 0; i < d; ++i) {
        xhat[i] = (in[i] - m) * s;
        double gw = static_cast<double>(g[i]) * w[i];
        sumG += gw;
        sumGX += gw * xhat[i];
        accW[i] += static_cast<double>(g[i]) * xhat[i];
        accB[i] += g[i];
      }
      T meanG = static_cast<T>(sumG / d), meanGX = static_cast<T>(sumGX / d);
      for (int64_t i = 0; i < d; ++i)
        out[i] = s * (g[i] * w[i] - meanG - xhat[i] * meanGX);
    }
    T *pw = dw.data<T>(), *pb = db.data<T>();
    for (int64_t i = 0; i < d; ++i) {
      pw[i] = static_cast<T>(accW[i]);
      pb[i] = static_cast<T>(accB[i]);
    }
  });
  return {dx, dw, db};
}

namespace {
/// f(logits, out, labels, how many labels count) with the pointers of the
/// operands' dtypes, once checkLabels has passed.
template <typename F>
void forCrossEntropy(const Tensor &logits, const Tensor &labels, Tensor &out,
                     int64_t ignoreIndex, const char *name, F &&f) {
  int64_t n = logits.dim(0), c = logits.dim(1);
  dispatchFloat(logits.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    dispatchIndex(labels.dtype(), name, [&](auto itag) {
      using I = decltype(itag);
      const I *pl = labels.data<I>();
      int64_t count;
      checkLabels(pl, n, c, ignoreIndex, name, &count);
      f(logits.data<T>(), out.data<T>(), pl, count);
    });
  });
}
} // namespace

Tensor softmax_cross_entropy(const Tensor &logits, const Tensor &labels,
                             int64_t ignoreIndex, Reduction reduction) {
  const char *name = "softmax_cross_entropy";
  checkCrossEntropyOperands(logits, labels, name);
  int64_t n = logits.dim(0), c = logits.dim(1);
  Tensor out(reduction == Reduction::none ? Shape{n} : Shape{}, logits.dtype());
  forCrossEntropy(
      logits, labels, out, ignoreIndex, name,
      [&](const auto *px, auto *po, const auto *pl, int64_t count) {
        using T = std::remove_pointer_t<decltype(po)>;
        double total = 0;
        for (int64_t r = 0; r < n; ++r) {
          double loss = 0;
          if (pl[r] != ignoreIndex) {
            const T *row = px + r * c;
            loss = rowLogSumExp(row, c) - static_cast<double>(row[pl[r]]);
          }
          if (reduction == Reduction::none)
            po[r] = static_cast<T>(loss);
          total += loss;
        }
        if (reduction == Reduction::sum)
          po[0] = static_cast<T>(total);
        else if (reduction == Reduction::mean) // no label counted: 0/0, NaN
          po[0] = static_cast<T>(total / static_cast<double>(count));
      });
  return out;
}

Tensor softmax_cross_entropy_grad(const Tensor &logits, const Tensor &labels,
                                  const Tensor &grad, int64_t ignoreIndex,
                                  Reduction reduction) {
  const char *name = "softmax_cross_entropy_grad";
  checkCrossEntropyGrad(logits, labels, grad, reduction);
  int64_t n = logits.dim(0), c = logits.dim(1);
  std::vector<double> g = toDoubles(grad);
  Tensor out(logits.shape(), logits.dtype());
  forCrossEntropy(logits, labels, out, ignoreIndex, name,
                  [&](const auto *px, auto *po, const auto *pl, int64_t count) {
                    using T = std::remove_pointer_t<decltype(po)>;
                    for (int64_t r = 0; r < n; ++r) {
                      const T *row = px + r * c;
                      T *dst = po + r * c;
                      if (pl[r] == ignoreIndex) {
                        for (int64_t i = 0; i < c; ++i)
                          dst[i] = T(0);
                        continue;
                      }
                      double scale = reduction == Reduction::none ? g[r] : g[0];
                      if (reduction == Reduction::mean)
                        scale /= static_cast<double>(count);
                      T mx = rowMax(row, c);
                      if (std::isinf(mx)) {
                        // All -inf (masked) or +inf present: the log-sum-exp
                        // is mx, as the loss takes it.
                        double lse = static_cast<double>(mx);
                        for (int64_t i = 0; i < c; ++i)
                          dst[i] =
                              static_cast<T>(std::exp(row[i] - lse) * scale);
                        dst[pl[r]] = static_cast<T>(
                            (std::exp(row[pl[r]] - lse) - 1.0) * scale);
                        continue;
                      }
                      // One exponential per logit, kept in dst and scaled by
                      // scale / sum after (the log-sum-exp and a second
                      // exponential in double took twice as long: the
                      // gradient was most of a large vocabulary's head).
                      double sum = 0;
                      for (int64_t i = 0; i < c; ++i) {
                        T e = std::exp(row[i] - mx);
                        dst[i] = e;
                        sum += e;
                      }
                      double k = scale / sum;
                      T label = dst[pl[r]];
                      for (int64_t i = 0; i < c; ++i)
                        dst[i] =
                            static_cast<T>(static_cast<double>(dst[i]) * k);
                      // (p - 1) * scale in double: subtracting in T would round
                      // twice.
                      dst[pl[r]] = static_cast<T>(
                          (static_cast<double>(label) / sum - 1.0) * scale);
                    }
                  });
  return out;
}

} // namespace rt
} // namespace tessera
