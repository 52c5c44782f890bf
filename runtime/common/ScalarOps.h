//===- ScalarOps.h - element-wise ops on one value (private) ----*- C++ -*-===//
//
// What an element-wise op computes on one element, written once for both
// backends: the CPU loops and the CUDA kernels apply the same functors, so
// the two backends round alike by construction. A backend implements the op
// families declared in OpFamilies.h with its own loop or kernel and picks
// the functor with visitUnary / visitBinary / visitCompare.
//
// The math overloads call the C functions (expf, exp, ...) that both the
// host compiler and nvcc's device code provide.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_COMMON_SCALAROPS_H
#define TESSERA_RUNTIME_COMMON_SCALAROPS_H

#include "HostDevice.h"
#include "OpFamilies.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <math.h>
#include <tuple>
#include <utility>

namespace tessera {
namespace rt {
namespace elem {

#define TESSERA_RT_MATH(NAME, FLOAT_FN)                                        \
  TESSERA_RT_HOST_DEVICE inline float NAME(float v) { return ::FLOAT_FN(v); }  \
  TESSERA_RT_HOST_DEVICE inline double NAME(double v) { return ::NAME(v); }
TESSERA_RT_MATH(exp, expf)
TESSERA_RT_MATH(log, logf)
TESSERA_RT_MATH(sqrt, sqrtf)
TESSERA_RT_MATH(erf, erff)
TESSERA_RT_MATH(tanh, tanhf)
TESSERA_RT_MATH(sin, sinf)
TESSERA_RT_MATH(cos, cosf)
#undef TESSERA_RT_MATH

TESSERA_RT_HOST_DEVICE inline float pow(float a, float b) {
  return ::powf(a, b);
}
TESSERA_RT_HOST_DEVICE inline double pow(double a, double b) {
  return ::pow(a, b);
}
template <typename T> TESSERA_RT_HOST_DEVICE inline bool isnan(T v) {
#ifdef __CUDA_ARCH__
  return ::isnan(v);
#else
  return std::isnan(v);
#endif
}
/// -inf (std::numeric_limits is host-only without relaxed constexpr).
template <typename T> TESSERA_RT_HOST_DEVICE inline T negInfinity() {
  return -static_cast<T>(INFINITY);
}

constexpr double kSqrt1_2 = 0.70710678118654752440;
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kGeluCoeff = 0.044715;

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

#define TESSERA_RT_UNARY(NAME, EXPR)                                           \
  struct NAME {                                                                \
    template <typename T> TESSERA_RT_HOST_DEVICE T operator()(T v) const {     \
      return EXPR;                                                             \
    }                                                                          \
  };
TESSERA_RT_UNARY(Neg, -v)
TESSERA_RT_UNARY(Exp, elem::exp(v))
TESSERA_RT_UNARY(Log, elem::log(v))
TESSERA_RT_UNARY(Sqrt, elem::sqrt(v))
// 1 / sqrt rather than an rsqrt intrinsic: the same rounding everywhere.
TESSERA_RT_UNARY(Rsqrt, T(1) / elem::sqrt(v))
TESSERA_RT_UNARY(Erf, elem::erf(v))
TESSERA_RT_UNARY(Tanh, elem::tanh(v))
// As torch's CPU kernel: 0 (not NaN) below the range of exp.
TESSERA_RT_UNARY(Sigmoid, T(1) / (T(1) + elem::exp(-v)))
TESSERA_RT_UNARY(Sin, elem::sin(v))
TESSERA_RT_UNARY(Cos, elem::cos(v))
// NaN stays NaN (as torch.relu).
TESSERA_RT_UNARY(Relu, v < T(0) ? T(0) : v)
TESSERA_RT_UNARY(GeluErf, T(0.5) * v * (T(1) + elem::erf(v * T(kSqrt1_2))))
#undef TESSERA_RT_UNARY

struct GeluTanh {
  template <typename T> TESSERA_RT_HOST_DEVICE T operator()(T v) const {
    T inner = T(kSqrt2OverPi) * (v + T(kGeluCoeff) * v * v * v);
    return T(0.5) * v * (T(1) + elem::tanh(inner));
  }
};

//===----------------------------------------------------------------------===//
// Binary: (a, b), or (x, grad) for the gradients
//===----------------------------------------------------------------------===//

#define TESSERA_RT_BINARY(NAME, RESULT, EXPR)                                  \
  struct NAME {                                                                \
    template <typename T>                                                      \
    TESSERA_RT_HOST_DEVICE RESULT operator()(T a, T b) const {                 \
      return EXPR;                                                             \
    }                                                                          \
  };
TESSERA_RT_BINARY(Add, T, a + b)
TESSERA_RT_BINARY(Sub, T, a - b)
TESSERA_RT_BINARY(Mul, T, a *b)
TESSERA_RT_BINARY(Div, T, a / b)
TESSERA_RT_BINARY(Pow, T, elem::pow(a, b))
// The comparisons, as 0 or 1.
TESSERA_RT_BINARY(Eq, uint8_t, a == b)
TESSERA_RT_BINARY(Ne, uint8_t, a != b)
TESSERA_RT_BINARY(Lt, uint8_t, a < b)
TESSERA_RT_BINARY(Le, uint8_t, a <= b)
TESSERA_RT_BINARY(Gt, uint8_t, a > b)
TESSERA_RT_BINARY(Ge, uint8_t, a >= b)
#undef TESSERA_RT_BINARY

/// d gelu(x) / dx * grad, tanh approximation.
struct GeluTanhGrad {
  template <typename T> TESSERA_RT_HOST_DEVICE T operator()(T v, T g) const {
    T t = elem::tanh(T(kSqrt2OverPi) * (v + T(kGeluCoeff) * v * v * v));
    T dinner = T(kSqrt2OverPi) * (T(1) + T(3 * kGeluCoeff) * v * v);
    return g * (T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * dinner);
  }
};
/// d gelu(x) / dx * grad, exact (erf).
struct GeluErfGrad {
  template <typename T> TESSERA_RT_HOST_DEVICE T operator()(T v, T g) const {
    T cdf = T(0.5) * (T(1) + elem::erf(v * T(kSqrt1_2)));
    T pdf = T(kInvSqrt2Pi) * elem::exp(T(-0.5) * v * v);
    return g * (cdf + v * pdf);
  }
};

//===----------------------------------------------------------------------===//
// From a kind to its functor (host code)
//===----------------------------------------------------------------------===//

/// The functors in the order of their kind's enumerators.
using UnaryFunctors = std::tuple<Neg, Exp, Log, Sqrt, Rsqrt, Erf, Tanh, Sigmoid,
                                 Sin, Cos, Relu, GeluTanh, GeluErf>;
using BinaryFunctors =
    std::tuple<Add, Sub, Mul, Div, Pow, GeluTanhGrad, GeluErfGrad>;
/// In the order of Compare's enumerators.
using CompareFunctors = std::tuple<Eq, Ne, Lt, Le, Gt, Ge>;
static_assert(std::tuple_size_v<UnaryFunctors> ==
                  static_cast<size_t>(detail::UnaryFn::geluErf) + 1,
              "one functor per UnaryFn");
static_assert(std::tuple_size_v<BinaryFunctors> ==
                  static_cast<size_t>(detail::BinaryFn::geluErfGrad) + 1,
              "one functor per BinaryFn");
static_assert(std::tuple_size_v<CompareFunctors> ==
                  static_cast<size_t>(Compare::ge) + 1,
              "one functor per Compare");

template <typename Functors, typename F, size_t... I>
void visitImpl(size_t index, F &f, std::index_sequence<I...>) {
  (void)((index == I ? (f(std::tuple_element_t<I, Functors>{}), true)
                     : false) ||
         ...);
}
/// f(the index-th functor of Functors).
template <typename Functors, typename F> void visit(size_t index, F &&f) {
  visitImpl<Functors>(index, f,
                      std::make_index_sequence<std::tuple_size_v<Functors>>{});
}

template <typename F> void visitUnary(detail::UnaryFn fn, F &&f) {
  visit<UnaryFunctors>(static_cast<size_t>(fn), f);
}
template <typename F> void visitBinary(detail::BinaryFn fn, F &&f) {
  visit<BinaryFunctors>(static_cast<size_t>(fn), f);
}
template <typename F> void visitCompare(Compare predicate, F &&f) {
  visit<CompareFunctors>(static_cast<size_t>(predicate), f);
}

} // namespace elem
} // namespace rt
} // namespace tessera

#endif // TESSERA_RUNTIME_COMMON_SCALAROPS_H
