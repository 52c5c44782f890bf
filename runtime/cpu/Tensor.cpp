//===- Tensor.cpp - Tensor, dtypes and constant constructors --------------===//

#include "tessera/runtime/Tensor.h"

#include "Kernels.h"

#include <cstring>
#include <limits>

namespace tessera {
namespace rt {

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::f32:
    return "f32";
  case DType::f64:
    return "f64";
  case DType::i32:
    return "i32";
  case DType::i64:
    return "i64";
  case DType::i1:
    return "i1";
  }
  return "?";
}

int64_t dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::f32:
  case DType::i32:
    return 4;
  case DType::f64:
  case DType::i64:
    return 8;
  case DType::i1:
    return 1;
  }
  return 0;
}

const char *deviceName(Device device) {
  return device == Device::cuda ? "cuda" : "host";
}

bool isFloat(DType dtype) { return dtype == DType::f32 || dtype == DType::f64; }

std::string shapeToString(const Shape &shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += 'x';
    s += std::to_string(shape[i]);
  }
  return s;
}

int64_t shapeNumel(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      throw Error("negative dimension in shape " + shapeToString(shape));
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      throw Error("shape " + shapeToString(shape) + " has too many elements");
    n *= d;
  }
  return n;
}

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

Device Tensor::device() const { return device_; }

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

const Shape &Tensor::shape() const { return shape_; }
DType Tensor::dtype() const { return dtype_; }
int64_t Tensor::rank() const { return static_cast<int64_t>(shape_.size()); }
int64_t Tensor::numel() const { return numel_; }
bool Tensor::defined() const { return storage_ != nullptr; }
int64_t Tensor::nbytes() const { return numel_ * dtypeSize(dtype_); }

int64_t Tensor::dim(int64_t i) const {
  int64_t r = rank();
  if (i < -r || i >= r)
    throw Error("dimension " + std::to_string(i) + " out of range for shape " +
                shapeToString(shape_));
  return shape_[i < 0 ? i + r : i];
}

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

template <typename T> T *Tensor::data() {
  if (dtype_ != detail::DTypeOf<T>::value)
    throw Error(std::string("data<") + dtypeName(detail::DTypeOf<T>::value) +
                ">() on a tensor of dtype " + dtypeName(dtype_));
  return static_cast<T *>(rawData());
}

template <typename T> const T *Tensor::data() const {
  if (dtype_ != detail::DTypeOf<T>::value)
    throw Error(std::string("data<") + dtypeName(detail::DTypeOf<T>::value) +
                ">() on a tensor of dtype " + dtypeName(dtype_));
  return static_cast<const T *>(rawData());
}

template float *Tensor::data<float>();
template double *Tensor::data<double>();
template int32_t *Tensor::data<int32_t>();
template int64_t *Tensor::data<int64_t>();
template uint8_t *Tensor::data<uint8_t>();
template const float *Tensor::data<float>() const;
template const double *Tensor::data<double>() const;
template const int32_t *Tensor::data<int32_t>() const;
template const int64_t *Tensor::data<int64_t>() const;
template const uint8_t *Tensor::data<uint8_t>() const;

void Tensor::release() { storage_.reset(); }

Tensor Tensor::view(Shape shape) const {
  if (!storage_)
    throw Error("view of an undefined (or released) tensor");
  int64_t n = shapeNumel(shape);
  if (n != numel_)
    throw Error("cannot view " + shapeToString(shape_) + " (" +
                std::to_string(numel_) + " elements) as " +
                shapeToString(shape) + " (" + std::to_string(n) + ")");
  Tensor result = *this;
  result.shape_ = std::move(shape);
  return result;
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

Tensor scalar(double value, DType dtype) { return full({}, dtype, value); }

Tensor fromValues(const Shape &shape, DType dtype,
                  const std::vector<double> &values) {
  Tensor t(shape, dtype);
  if (static_cast<int64_t>(values.size()) != t.numel())
    throw Error("fromValues: " + std::to_string(values.size()) +
                " values for shape " + shapeToString(shape) + " (" +
                std::to_string(t.numel()) + " elements)");
  detail::dispatchAll(dtype, [&](auto tag) {
    using T = decltype(tag);
    T *p = t.data<T>();
    for (int64_t i = 0, n = t.numel(); i < n; ++i)
      p[i] = detail::convertFromDouble<T>(values[i]);
  });
  return t;
}

std::vector<double> toDoubles(const Tensor &x) {
  std::vector<double> out(x.numel());
  detail::dispatchAll(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T *p = x.data<T>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i)
      out[i] = static_cast<double>(p[i]);
  });
  return out;
}

double item(const Tensor &x) {
  if (x.numel() != 1)
    throw Error("item() of a tensor of shape " + shapeToString(x.shape()) +
                " (" + std::to_string(x.numel()) + " elements)");
  return toDoubles(x)[0];
}

Tensor clone(const Tensor &x) {
  Tensor t(x.shape(), x.dtype());
  if (t.nbytes())
    std::memcpy(t.rawData(), x.rawData(), t.nbytes());
  return t;
}

} // namespace rt
} // namespace tessera
