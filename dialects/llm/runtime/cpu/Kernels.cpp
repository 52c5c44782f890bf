//===- Kernels.cpp - the llm extension's CPU kernels ----------------------===//
//
// Row kernels over the last dimension; sums accumulate in double, as the
// core runtime's normalisations do, so that f32 results do not depend on
// the row length's rounding. Written against the runtime's public Tensor
// API only: an extension needs nothing private of the core.
//
//===----------------------------------------------------------------------===//

#include "tessera/llm/Runtime.h"

#include <cmath>
#include <cstring>

namespace tessera::rt::llm {

namespace {

/// Calls fn(T{}) for an f32 or f64 tensor; throws for the others.
template <typename Fn> void dispatchFloat(DType dtype, const char *op, Fn fn) {
  if (dtype == DType::f32)
    fn(float{});
  else if (dtype == DType::f64)
    fn(double{});
  else
    throw Error(std::string(op) + ": expected f32 or f64 tensors, got " +
                dtypeName(dtype));
}

void requireHost(const Tensor &t, const char *op) {
  if (!t.defined())
    throw Error(std::string(op) + ": an operand is undefined");
  if (t.device() != Device::host)
    throw Error(std::string(op) + ": the CPU kernel got a " +
                deviceName(t.device()) + " tensor");
}

void requireSame(const Tensor &a, const Tensor &b, const char *op,
                 const char *what) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype())
    throw Error(std::string(op) + ": " + what + " is " +
                shapeToString(b.shape()) + " " + dtypeName(b.dtype()) +
                ", expected " + shapeToString(a.shape()) + " " +
                dtypeName(a.dtype()));
}

/// x's rows (all but the last dimension) and their length; checks the
/// weight against the last dimension.
std::pair<int64_t, int64_t> rowsOf(const Tensor &x, const Tensor &weight,
                                   const char *op) {
  requireHost(x, op);
  requireHost(weight, op);
  if (x.rank() < 1)
    throw Error(std::string(op) + ": the input must have rank >= 1");
  int64_t d = x.dim(x.rank() - 1);
  if (weight.shape() != Shape{d} || weight.dtype() != x.dtype())
    throw Error(std::string(op) + ": weight is " +
                shapeToString(weight.shape()) + " " +
                dtypeName(weight.dtype()) + ", expected [" + std::to_string(d) +
                "] " + dtypeName(x.dtype()));
  return {d ? x.numel() / d : 0, d};
}

Shape rowStatShape(const Tensor &x) {
  Shape s = x.shape();
  s.back() = 1;
  return s;
}

} // namespace

std::tuple<Tensor, Tensor> rms_norm(const Tensor &x, const Tensor &weight,
                                    double epsilon) {
  const char *op = "llm::rms_norm";
  auto [rows, d] = rowsOf(x, weight, op);
  Tensor y(x.shape(), x.dtype()), rstd(rowStatShape(x), x.dtype());
  dispatchFloat(x.dtype(), op, [&, rows = rows, d = d](auto tag) {
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
  auto [rows, d] = rowsOf(x, weight, op);
  requireHost(grad, op);
  requireHost(rstd, op);
  requireSame(x, grad, op, "grad");
  if (rstd.shape() != rowStatShape(x) || rstd.dtype() != x.dtype())
    throw Error(std::string(op) + ": rstd is " + shapeToString(rstd.shape()) +
                ", expected " + shapeToString(rowStatShape(x)));
  Tensor dx(x.shape(), x.dtype()), dw(weight.shape(), x.dtype());
  dispatchFloat(x.dtype(), op, [&, rows = rows, d = d](auto tag) {
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
  requireHost(x, op);
  Tensor y(x.shape(), x.dtype());
  dispatchFloat(x.dtype(), op, [&](auto tag) {
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
  requireHost(gate, op);
  requireHost(up, op);
  requireSame(gate, up, op, "up");
  Tensor y(gate.shape(), gate.dtype());
  dispatchFloat(gate.dtype(), op, [&](auto tag) {
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
  requireHost(x, op);
  requireHost(cos, op);
  requireHost(sin, op);
  if (x.rank() < 2)
    throw Error(std::string(op) + ": the input must have rank >= 2, got " +
                shapeToString(x.shape()));
  int64_t t = x.dim(x.rank() - 2), d = x.dim(x.rank() - 1);
  if (d % 2)
    throw Error(std::string(op) + ": the last dimension must be even, got " +
                std::to_string(d));
  Tensor table(Shape{t, d}, x.dtype());
  requireSame(table, cos, op, "cos");
  requireSame(table, sin, op, "sin");
  Tensor y(x.shape(), x.dtype());
  int64_t half = d / 2, rows = t * d != 0 ? x.numel() / (t * d) : 0;
  // rotate(v)_i = sign(i) v_partner(i); rotate^T(v)_i = -sign(i)
  // v_partner(i).
  auto partner = [&](int64_t i) {
    return interleaved ? (i ^ 1) : (i < half ? i + half : i - half);
  };
  auto sign = [&](int64_t i) {
    bool first = interleaved ? (i % 2 == 0) : (i < half);
    return first ? -1.0 : 1.0;
  };
  dispatchFloat(x.dtype(), op, [&](auto tag) {
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
  if (shape.size() != 2 || shape[1] % 2)
    throw Error(std::string(op) +
                ": the tables' shape must be [t, d] with d "
                "even, got " +
                shapeToString(shape));
  int64_t t = shape[0], d = shape[1], half = d / 2;
  Tensor c(shape, dtype), s(shape, dtype);
  dispatchFloat(dtype, op, [&](auto tag) {
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
  requireHost(x, op);
  if (x.rank() < 3 || repeats < 1)
    throw Error(std::string(op) +
                ": expected [.., h, t, d] and repeats >= 1, "
                "got " +
                shapeToString(x.shape()) + " and " + std::to_string(repeats));
  Shape out = x.shape();
  int64_t heads = out[out.size() - 3];
  out[out.size() - 3] *= repeats;
  Tensor y(out, x.dtype());
  // One head's [t, d] block is contiguous: copy it `repeats` times.
  int64_t block = x.dim(x.rank() - 2) * x.dim(x.rank() - 1);
  int64_t groups = heads * block != 0 ? x.numel() / (heads * block) : 0;
  size_t bytes = size_t(block) * dtypeSize(x.dtype());
  const char *src = static_cast<const char *>(x.rawData());
  char *dst = static_cast<char *>(y.rawData());
  for (int64_t g = 0; g < groups * heads; ++g)
    for (int64_t k = 0; k < repeats; ++k)
      std::memcpy(dst + (g * repeats + k) * bytes, src + g * bytes, bytes);
  return y;
}

} // namespace tessera::rt::llm
