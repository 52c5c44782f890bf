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

} // namespace tessera::rt::llm
