//===- Kernels.cpp - the act extension's CPU kernels ----------------------===//
//
// Uses the runtime's public Tensor API only (tessera/runtime/Tensor.h).
//
//===----------------------------------------------------------------------===//

#include "act/Runtime.h"

#include <string>

namespace tessera::rt::act {

namespace {
template <typename T> void relu2Of(const Tensor &x, Tensor &y) {
  const T *px = x.data<T>();
  T *py = y.data<T>();
  for (int64_t i = 0, n = x.numel(); i < n; ++i) {
    T r = px[i] > T(0) ? px[i] : T(0);
    py[i] = r * r;
  }
}
} // namespace

Tensor relu2(const Tensor &x) {
  if (!x.defined() || x.device() != Device::host)
    throw Error("act::relu2: expected a host tensor");
  Tensor y(x.shape(), x.dtype());
  if (x.dtype() == DType::f32)
    relu2Of<float>(x, y);
  else if (x.dtype() == DType::f64)
    relu2Of<double>(x, y);
  else
    throw Error(std::string("act::relu2: expected f32 or f64, got ") +
                dtypeName(x.dtype()));
  return y;
}

} // namespace tessera::rt::act
