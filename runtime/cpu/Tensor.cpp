//===- Tensor.cpp - Tensor, dtypes and constant constructors --------------===//

#include "tessera/runtime/Tensor.h"

#include "Kernels.h"

#include <cstring>
#include <limits>

namespace tessera {
namespace rt {

Tensor::Tensor(Shape shape, DType dtype)
    : shape_(std::move(shape)), dtype_(dtype) {
  numel_ = shapeNumel(shape_);
  int64_t elt = dtypeSize(dtype);
  if (numel_ > std::numeric_limits<int64_t>::max() / elt)
    throw Error("tensor of shape " + shapeToString(shape_) + " is too large");
  storage_ = std::make_shared<detail::Storage>(numel_ * elt);
}

Tensor::Tensor(Shape shape, DType dtype, Device device)
    : Tensor(std::move(shape), dtype) {
  if (device != Device::host)
    throw Error(std::string("a ") + deviceName(device) +
                " tensor needs the CUDA runtime (TesseraRuntimeCuda); this "
                "program links the CPU runtime");
}

void *Tensor::deviceData() {
  throw Error("deviceData() of a host tensor (the CPU runtime has no others)");
}

const void *Tensor::deviceData() const {
  throw Error("deviceData() of a host tensor (the CPU runtime has no others)");
}

// The CPU backend's hooks: everything already lives on the host.
Device defaultDevice() { return Device::host; }
void initDevice() {}
Tensor toDevice(const Tensor &x) { return x; }
Tensor toHost(const Tensor &x) { return x; }
void synchronize() {}

void *Tensor::rawData() {
  if (!storage_)
    throw Error("access to an undefined (or released) tensor");
  return storage_->ptr;
}

const void *Tensor::rawData() const {
  if (!storage_)
    throw Error("access to an undefined (or released) tensor");
  return storage_->ptr;
}

Tensor full(const Shape &shape, DType dtype, double value) {
  Tensor t(shape, dtype);
  detail::dispatchAll(dtype, [&](auto tag) {
    using T = decltype(tag);
    T v = detail::convertFromDouble<T>(value);
    T *p = t.data<T>();
    for (int64_t i = 0, n = t.numel(); i < n; ++i)
      p[i] = v;
  });
  return t;
}

Tensor zeros(const Shape &shape, DType dtype) {
  Tensor t(shape, dtype);
  if (t.nbytes())
    std::memset(t.rawData(), 0, t.nbytes());
  return t;
}

int64_t firstNonFinite(const std::vector<Tensor> &tensors) {
  for (size_t k = 0; k < tensors.size(); ++k) {
    const Tensor &t = tensors[k];
    if (!t.defined() || !isFloat(t.dtype()))
      continue;
    bool finite = true;
    detail::dispatchFloat(t.dtype(), "firstNonFinite", [&](auto tag) {
      using T = decltype(tag);
      const T *p = t.data<T>();
      // x - x is 0 for finite x and NaN otherwise: one branch-free pass
      // the compiler vectorises.
      T acc = 0;
      for (int64_t i = 0, n = t.numel(); i < n; ++i)
        acc += p[i] - p[i];
      finite = acc == 0;
    });
    if (!finite)
      return static_cast<int64_t>(k);
  }
  return -1;
}

Tensor clone(const Tensor &x) {
  Tensor t(x.shape(), x.dtype());
  if (t.nbytes())
    std::memcpy(t.rawData(), x.rawData(), t.nbytes());
  return t;
}

} // namespace rt
} // namespace tessera
