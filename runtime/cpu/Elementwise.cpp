//===- Elementwise.cpp - unary, binary, compare, where, cast -------------===//

#include "tessera/runtime/Ops.h"

#include "Kernels.h"
#include "ScalarOps.h"

#include <cmath>

namespace tessera {
namespace rt {
using namespace detail;

namespace {

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

} // namespace

Tensor detail::unary(const Tensor &x, UnaryFn fn, const char *name) {
  requireFloat(x, name, "input");
  Tensor out(x.shape(), x.dtype());
  elem::visitUnary(fn, [&](auto op) {
    dispatchFloat(x.dtype(), name, [&](auto tag) {
      using T = decltype(tag);
      const T *in = x.data<T>();
      T *o = out.data<T>();
      for (int64_t i = 0, n = x.numel(); i < n; ++i)
        o[i] = op(in[i]);
    });
  });
  return out;
}

Tensor detail::binary(const Tensor &a, const Tensor &b, BinaryFn fn,
                      const char *name) {
  Tensor out(binaryFloatShape(a, b, name), a.dtype());
  elem::visitBinary(fn, [&](auto op) {
    dispatchFloat(a.dtype(), name, [&](auto tag) {
      using T = decltype(tag);
      binaryLoop<T, T>(a, b, out, op);
    });
  });
  return out;
}

Tensor compare(Compare predicate, const Tensor &a, const Tensor &b) {
  Tensor out(compareShape(a, b), DType::i1);
  elem::visitCompare(predicate, [&](auto op) {
    dispatchAll(a.dtype(), [&](auto tag) {
      using T = decltype(tag);
      binaryLoop<T, uint8_t>(a, b, out, op);
    });
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
