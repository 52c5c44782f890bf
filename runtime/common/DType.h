//===- DType.h - C++ types of the dtypes, dispatch (private) ----*- C++ -*-===//
//
// The mapping between DType and the C++ element types, the value
// conversion of `cast` and the constants, and the dtype dispatch that
// kernels of both backends use. Not installed: only the runtime's own
// sources include it. Host code; `convert` is also callable from CUDA
// device code.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_COMMON_DTYPE_H
#define TESSERA_RUNTIME_COMMON_DTYPE_H

#include "tessera/runtime/Tensor.h"

#include "Checks.h" // detail::fail
#include "HostDevice.h"

#include <cstdint>
#include <string>
#include <type_traits>

namespace tessera {
namespace rt {
namespace detail {

template <typename T> struct DTypeOf;
template <> struct DTypeOf<float> {
  static constexpr DType value = DType::f32;
};
template <> struct DTypeOf<double> {
  static constexpr DType value = DType::f64;
};
template <> struct DTypeOf<int32_t> {
  static constexpr DType value = DType::i32;
};
template <> struct DTypeOf<int64_t> {
  static constexpr DType value = DType::i64;
};
template <> struct DTypeOf<uint8_t> {
  static constexpr DType value = DType::i1;
};

/// The conversion `cast` and the constant constructors use: i1 is "nonzero",
/// integers truncate toward zero.
template <typename To, typename From>
TESSERA_RT_HOST_DEVICE inline To convert(From v) {
  if constexpr (std::is_same<To, uint8_t>::value)
    return v != From(0) ? 1 : 0;
  else
    return static_cast<To>(v);
}
template <typename To> inline To convertFromDouble(double v) {
  return convert<To, double>(v);
}

/// Calls f(T{}) with T the C++ type of `dtype`.
template <typename F> void dispatchAll(DType dtype, F &&f) {
  switch (dtype) {
  case DType::f32:
    return f(float{});
  case DType::f64:
    return f(double{});
  case DType::i32:
    return f(int32_t{});
  case DType::i64:
    return f(int64_t{});
  case DType::i1:
    return f(uint8_t{});
  }
}

/// Calls f(T{}) for f32/f64; other dtypes are an error naming `op`.
template <typename F> void dispatchFloat(DType dtype, const char *op, F &&f) {
  if (dtype == DType::f32)
    return f(float{});
  if (dtype == DType::f64)
    return f(double{});
  fail(op,
       std::string("expected an f32 or f64 tensor, got ") + dtypeName(dtype));
}

/// Calls f(IndexT{}) for i32/i64 index tensors.
template <typename F> void dispatchIndex(DType dtype, const char *op, F &&f) {
  if (dtype == DType::i64)
    return f(int64_t{});
  if (dtype == DType::i32)
    return f(int32_t{});
  fail(op, std::string("expected i32 or i64 indices, got ") + dtypeName(dtype));
}

} // namespace detail
} // namespace rt
} // namespace tessera

#endif // TESSERA_RUNTIME_COMMON_DTYPE_H
