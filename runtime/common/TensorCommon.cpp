//===- TensorCommon.cpp - what both backends' Tensor share ----------------===//
//
// dtypes, shapes and the parts of Tensor that do not depend on where the
// storage lives (fromValues, toDoubles and item go through the backend
// hooks toDevice/toHost); compiled into the CPU (TesseraRuntime) and the
// CUDA (TesseraRuntimeCuda) libraries, each of which defines the rest
// (storage, raw data access, full/zeros/clone, the backend hooks).
//
//===----------------------------------------------------------------------===//

#include "tessera/runtime/Tensor.h"

#include "DType.h"

#include <limits>

namespace tessera {
namespace rt {

namespace {
struct DTypeInfo {
  DType dtype;
  const char *name;
  int64_t size;
};
// Every dtype's name (as in the IR) and element size, in one table.
constexpr DTypeInfo kDTypes[] = {
    {DType::f32, "f32", 4}, {DType::f64, "f64", 8}, {DType::i32, "i32", 4},
    {DType::i64, "i64", 8}, {DType::i1, "i1", 1},   {DType::bf16, "bf16", 2}};

const DTypeInfo *infoOf(DType dtype) {
  for (const DTypeInfo &info : kDTypes)
    if (info.dtype == dtype)
      return &info;
  return nullptr;
}
} // namespace

const char *dtypeName(DType dtype) {
  const DTypeInfo *info = infoOf(dtype);
  return info ? info->name : "?";
}

int64_t dtypeSize(DType dtype) {
  const DTypeInfo *info = infoOf(dtype);
  return info ? info->size : 0;
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

const Shape &Tensor::shape() const { return shape_; }
DType Tensor::dtype() const { return dtype_; }
Device Tensor::device() const { return device_; }
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
template detail::BFloat16 *Tensor::data<detail::BFloat16>();
template const float *Tensor::data<float>() const;
template const double *Tensor::data<double>() const;
template const int32_t *Tensor::data<int32_t>() const;
template const int64_t *Tensor::data<int64_t>() const;
template const uint8_t *Tensor::data<uint8_t>() const;
template const detail::BFloat16 *Tensor::data<detail::BFloat16>() const;

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

Tensor scalar(double value, DType dtype) { return full({}, dtype, value); }

// Constants are filled and read on the host; toDevice and toHost are
// no-ops on the CPU backend.

Tensor fromValues(const Shape &shape, DType dtype,
                  const std::vector<double> &values) {
  Tensor host(shape, dtype, Device::host);
  if (static_cast<int64_t>(values.size()) != host.numel())
    throw Error("fromValues: " + std::to_string(values.size()) +
                " values for shape " + shapeToString(shape) + " (" +
                std::to_string(host.numel()) + " elements)");
  detail::dispatchAll(dtype, [&](auto tag) {
    using T = decltype(tag);
    T *p = host.data<T>();
    for (int64_t i = 0, n = host.numel(); i < n; ++i)
      p[i] = detail::convertFromDouble<T>(values[i]);
  });
  return toDevice(host);
}

std::vector<double> toDoubles(const Tensor &x) {
  Tensor h = toHost(x);
  std::vector<double> out(h.numel());
  detail::dispatchAll(h.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T *p = h.data<T>();
    for (int64_t i = 0, n = h.numel(); i < n; ++i)
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

} // namespace rt
} // namespace tessera
