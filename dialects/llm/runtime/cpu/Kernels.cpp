//===- Kernels.cpp - the llm extension's CPU kernels ----------------------===//
//
// Row kernels over the last dimension; sums accumulate in double, as the
// core runtime's normalisations do, so that f32 results do not depend on
// the row length's rounding. Written against the runtime's public Tensor
// API only: an extension needs nothing private of the core.
//
//===----------------------------------------------------------------------===//

#include "tessera/llm/Runtime.h"

#include "Operands.h"

#include <cmath>
#include <cstring>
#include <initializer_list>

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

} // namespace tessera::rt::llm
