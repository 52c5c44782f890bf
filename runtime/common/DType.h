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

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

namespace tessera {
namespace rt {
namespace detail {

/// A bf16 element: the upper 16 bits of an f32. Conversions to it round to
/// nearest, ties to even (a NaN stays a quiet NaN of its sign; overflow
/// gives infinity, as IEEE rounding does); from it they are exact. Doubles
/// round once (not through f32's rounding): f32 is rounded to odd first,
/// which keeps the sticky bit that bf16's rounding needs.
struct BFloat16 {
  uint16_t bits;

  BFloat16() = default;
  TESSERA_RT_HOST_DEVICE explicit BFloat16(float f) : bits(round(f)) {}
  TESSERA_RT_HOST_DEVICE explicit BFloat16(double d)
      : bits(round(roundToOdd(d))) {}
  template <typename I, typename = std::enable_if_t<std::is_integral<I>::value>>
  TESSERA_RT_HOST_DEVICE explicit BFloat16(I v)
      : BFloat16(static_cast<double>(v)) {}

  TESSERA_RT_HOST_DEVICE operator float() const {
    uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
  }

  TESSERA_RT_HOST_DEVICE static uint16_t round(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) // NaN: keep it quiet
      return static_cast<uint16_t>((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
  }

  /// d in f32 with round-to-odd: truncated toward zero, the last bit set
  /// when inexact.
  TESSERA_RT_HOST_DEVICE static float roundToOdd(double d) {
    float f = static_cast<float>(d);
    if (d != d || static_cast<double>(f) == d)
      return f;
    if (::fabs(static_cast<double>(f)) > ::fabs(d))
      f = ::nextafterf(f, 0.0f);
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    u |= 1u;
    std::memcpy(&f, &u, sizeof f);
    return f;
  }
};
static_assert(sizeof(BFloat16) == 2, "bf16 is two bytes");

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
template <> struct DTypeOf<BFloat16> {
  static constexpr DType value = DType::bf16;
};

/// The conversion `cast` and the constant constructors use: i1 is "nonzero",
/// integers truncate toward zero, bf16 rounds to nearest even (through f32
/// when it is the source).
template <typename To, typename From>
TESSERA_RT_HOST_DEVICE inline To convert(From v) {
  if constexpr (std::is_same<From, BFloat16>::value &&
                !std::is_same<To, BFloat16>::value)
    return convert<To, float>(static_cast<float>(v));
  else if constexpr (std::is_same<To, uint8_t>::value)
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
  case DType::bf16:
    return f(BFloat16{});
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
