//===- Elementwise.cpp - unary, binary (broadcasting), compare, where, cast
//===//

#include "tessera/runtime/Ops.h"

#include "Kernels.h"

#include <cmath>

namespace tessera {
namespace rt {
using namespace detail;

namespace {

template <typename Op>
Tensor unaryFloat(const Tensor &x, const char *name, Op op) {
  requireFloat(x, name, "input");
  Tensor out(x.shape(), x.dtype());
  dispatchFloat(x.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    const T *in = x.data<T>();
    T *o = out.data<T>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i)
      o[i] = op(in[i]);
  });
  return out;
}

/// out[i] = op(a[i], b[i]) over the broadcast shape; the inner loops are
/// specialised on the operands' inner strides (0 or 1) so that the common
/// same-shape, trailing-dim and scalar cases vectorise.
template <typename T, typename U, typename Op>
void binaryLoop(const Tensor &a, const Tensor &b, Tensor &out, Op op) {
  const T *pa = a.data<T>();
  const T *pb = b.data<T>();
  U *po = out.data<U>();
  const Shape &shape = out.shape();
  if (a.shape() == shape && b.shape() == shape) {
    for (int64_t i = 0, n = out.numel(); i < n; ++i)
      po[i] = op(pa[i], pb[i]);
    return;
  }
  forEachRun<3>(shape,
                {contiguousStrides(shape), broadcastStrides(a.shape(), shape),
                 broadcastStrides(b.shape(), shape)},
                [&](const std::array<int64_t, 3> &off, int64_t len,
                    const std::array<int64_t, 3> &s) {
                  U *o = po + off[0];
                  const T *x = pa + off[1];
                  const T *y = pb + off[2];
                  if (s[1] == 1 && s[2] == 1) {
                    for (int64_t i = 0; i < len; ++i)
                      o[i] = op(x[i], y[i]);
                  } else if (s[1] == 1 && s[2] == 0) {
                    T yv = *y;
                    for (int64_t i = 0; i < len; ++i)
                      o[i] = op(x[i], yv);
                  } else if (s[1] == 0 && s[2] == 1) {
                    T xv = *x;
                    for (int64_t i = 0; i < len; ++i)
                      o[i] = op(xv, y[i]);
                  } else {
                    for (int64_t i = 0; i < len; ++i)
                      o[i] = op(x[i * s[1]], y[i * s[2]]);
                  }
                });
}

template <typename Op>
Tensor binaryFloat(const Tensor &a, const Tensor &b, const char *name, Op op) {
  Tensor out(binaryFloatShape(a, b, name), a.dtype());
  dispatchFloat(a.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    binaryLoop<T, T>(a, b, out, op);
  });
  return out;
}

constexpr double kSqrt1_2 = 0.70710678118654752440;
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kGeluCoeff = 0.044715;

} // namespace

Tensor neg(const Tensor &x) {
  return unaryFloat(x, "neg", [](auto v) { return -v; });
}
Tensor exp(const Tensor &x) {
  return unaryFloat(x, "exp", [](auto v) { return std::exp(v); });
}
Tensor log(const Tensor &x) {
  return unaryFloat(x, "log", [](auto v) { return std::log(v); });
}
Tensor sqrt(const Tensor &x) {
  return unaryFloat(x, "sqrt", [](auto v) { return std::sqrt(v); });
}
Tensor rsqrt(const Tensor &x) {
  return unaryFloat(x, "rsqrt", [](auto v) {
    using T = decltype(v);
    return T(1) / std::sqrt(v);
  });
}
Tensor erf(const Tensor &x) {
  return unaryFloat(x, "erf", [](auto v) { return std::erf(v); });
}
Tensor tanh(const Tensor &x) {
  return unaryFloat(x, "tanh", [](auto v) { return std::tanh(v); });
}
Tensor sigmoid(const Tensor &x) {
  // As torch's CPU kernel: 0 (not NaN) below the range of exp.
  return unaryFloat(x, "sigmoid", [](auto v) {
    using T = decltype(v);
    return T(1) / (T(1) + std::exp(-v));
  });
}
Tensor sin(const Tensor &x) {
  return unaryFloat(x, "sin", [](auto v) { return std::sin(v); });
}
Tensor cos(const Tensor &x) {
  return unaryFloat(x, "cos", [](auto v) { return std::cos(v); });
}
Tensor relu(const Tensor &x) {
  // NaN stays NaN (as torch.relu).
  return unaryFloat(x, "relu", [](auto v) {
    using T = decltype(v);
    return v < T(0) ? T(0) : v;
  });
}

Tensor gelu(const Tensor &x, bool tanhApproximation) {
  if (tanhApproximation)
    return unaryFloat(x, "gelu", [](auto v) {
      using T = decltype(v);
      T inner = T(kSqrt2OverPi) * (v + T(kGeluCoeff) * v * v * v);
      return T(0.5) * v * (T(1) + std::tanh(inner));
    });
  return unaryFloat(x, "gelu", [](auto v) {
    using T = decltype(v);
    return T(0.5) * v * (T(1) + std::erf(v * T(kSqrt1_2)));
  });
}

Tensor gelu_grad(const Tensor &x, const Tensor &grad, bool tanhApproximation) {
  const char *name = "gelu_grad";
  checkGeluGrad(x, grad);
  Tensor out(x.shape(), x.dtype());
  dispatchFloat(x.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    const T *px = x.data<T>();
    const T *pg = grad.data<T>();
    T *po = out.data<T>();
    int64_t n = x.numel();
    if (tanhApproximation) {
      for (int64_t i = 0; i < n; ++i) {
        T v = px[i];
        T t = std::tanh(T(kSqrt2OverPi) * (v + T(kGeluCoeff) * v * v * v));
        T dinner = T(kSqrt2OverPi) * (T(1) + T(3 * kGeluCoeff) * v * v);
        po[i] = pg[i] *
                (T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * dinner);
      }
    } else {
      for (int64_t i = 0; i < n; ++i) {
        T v = px[i];
        T cdf = T(0.5) * (T(1) + std::erf(v * T(kSqrt1_2)));
        T pdf = T(kInvSqrt2Pi) * std::exp(T(-0.5) * v * v);
        po[i] = pg[i] * (cdf + v * pdf);
      }
    }
  });
  return out;
}

Shape broadcastShapes(const Shape &a, const Shape &b) {
  return broadcastShapesFor(a, b, "broadcast");
}

Tensor add(const Tensor &a, const Tensor &b) {
  return binaryFloat(a, b, "add", [](auto x, auto y) { return x + y; });
}
Tensor sub(const Tensor &a, const Tensor &b) {
  return binaryFloat(a, b, "sub", [](auto x, auto y) { return x - y; });
}
Tensor mul(const Tensor &a, const Tensor &b) {
  return binaryFloat(a, b, "mul", [](auto x, auto y) { return x * y; });
}
Tensor div(const Tensor &a, const Tensor &b) {
  return binaryFloat(a, b, "div", [](auto x, auto y) { return x / y; });
}
Tensor pow(const Tensor &a, const Tensor &b) {
  return binaryFloat(a, b, "pow", [](auto x, auto y) {
    using T = decltype(x);
    return static_cast<T>(std::pow(x, y));
  });
}

Tensor compare(Compare predicate, const Tensor &a, const Tensor &b) {
  Tensor out(compareShape(a, b), DType::i1);
  dispatchAll(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    switch (predicate) {
    case Compare::eq:
      return binaryLoop<T, uint8_t>(a, b, out,
                                    [](T x, T y) -> uint8_t { return x == y; });
    case Compare::ne:
      return binaryLoop<T, uint8_t>(a, b, out,
                                    [](T x, T y) -> uint8_t { return x != y; });
    case Compare::lt:
      return binaryLoop<T, uint8_t>(a, b, out,
                                    [](T x, T y) -> uint8_t { return x < y; });
    case Compare::le:
      return binaryLoop<T, uint8_t>(a, b, out,
                                    [](T x, T y) -> uint8_t { return x <= y; });
    case Compare::gt:
      return binaryLoop<T, uint8_t>(a, b, out,
                                    [](T x, T y) -> uint8_t { return x > y; });
    case Compare::ge:
      return binaryLoop<T, uint8_t>(a, b, out,
                                    [](T x, T y) -> uint8_t { return x >= y; });
    }
  });
  return out;
}

Tensor where(const Tensor &condition, const Tensor &a, const Tensor &b) {
  Shape shape = whereShape(condition, a, b);
  Tensor out(shape, a.dtype());
  dispatchAll(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const uint8_t *pc = condition.data<uint8_t>();
    const T *pa = a.data<T>();
    const T *pb = b.data<T>();
    T *po = out.data<T>();
    forEachRun<4>(shape,
                  {contiguousStrides(shape),
                   broadcastStrides(condition.shape(), shape),
                   broadcastStrides(a.shape(), shape),
                   broadcastStrides(b.shape(), shape)},
                  [&](const std::array<int64_t, 4> &off, int64_t len,
                      const std::array<int64_t, 4> &s) {
                    T *o = po + off[0];
                    const uint8_t *c = pc + off[1];
                    const T *x = pa + off[2];
                    const T *y = pb + off[3];
                    if (s[1] == 1 && s[2] == 1 && s[3] == 1) {
                      for (int64_t i = 0; i < len; ++i)
                        o[i] = c[i] ? x[i] : y[i];
                    } else if (s[1] == 1 && s[2] == 0 && s[3] == 1) {
                      // where(mask, constant, scores): the attention mask.
                      T xv = *x;
                      for (int64_t i = 0; i < len; ++i)
                        o[i] = c[i] ? xv : y[i];
                    } else {
                      for (int64_t i = 0; i < len; ++i)
                        o[i] = c[i * s[1]] ? x[i * s[2]] : y[i * s[3]];
                    }
                  });
  });
  return out;
}

Tensor cast(const Tensor &x, DType to) {
  requireDefined(x, "cast", "input");
  if (x.dtype() == to)
    return x; // storage is immutable to ops, so sharing it is a copy
  Tensor out(x.shape(), to);
  dispatchAll(x.dtype(), [&](auto fromTag) {
    using From = decltype(fromTag);
    dispatchAll(to, [&](auto toTag) {
      using To = decltype(toTag);
      const From *in = x.data<From>();
      To *o = out.data<To>();
      for (int64_t i = 0, n = x.numel(); i < n; ++i)
        o[i] = convert<To, From>(in[i]);
    });
  });
  return out;
}

} // namespace rt
} // namespace tessera
