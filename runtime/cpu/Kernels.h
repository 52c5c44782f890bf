//===- Kernels.h - shared helpers of the CPU kernels (private) --*- C++ -*-===//
//
// dtype dispatch, argument checks and a strided n-d loop that the
// elementwise, broadcast, reduction and layout kernels share. Not installed:
// only the runtime's own .cpp files include it.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_CPU_KERNELS_H
#define TESSERA_RUNTIME_CPU_KERNELS_H

#include "tessera/runtime/Tensor.h"

#include <array>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

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
template <typename To, typename From> inline To convert(From v) {
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

[[noreturn]] void fail(const char *op, const std::string &message);

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

void requireDefined(const Tensor &t, const char *op, const char *what);
void requireFloat(const Tensor &t, const char *op, const char *what);
void requireSameDType(const Tensor &a, const Tensor &b, const char *op);
void requireSameShape(const Tensor &a, const Tensor &b, const char *op);
/// Maps a possibly negative axis into [0, rank).
int64_t normalizeAxis(int64_t axis, int64_t rank, const char *op);
/// Hyperparameter / step tensors: any dtype, one element.
double scalarArg(const Tensor &t, const char *op, const char *what);

std::vector<int64_t> contiguousStrides(const Shape &shape);
/// Strides of a contiguous `in` read as the (broadcast) shape `out`:
/// aligned to the right, 0 on broadcast and missing dimensions.
std::vector<int64_t> broadcastStrides(const Shape &in, const Shape &out);
Shape broadcastShapesFor(const Shape &a, const Shape &b, const char *op);

/// Runs f(offsets, len, innerStrides) over every innermost run of an n-d
/// loop over `shape`, where operand k's element at index i sits at
/// sum_d i_d * strides[k][d]. Dimensions of size 1 are dropped and adjacent
/// dimensions that are contiguous for every operand are merged first, so
/// same-shape and trailing-broadcast cases become one or two long runs with
/// inner strides 0 or 1 (the bodies branch on those to vectorise).
template <size_t N, typename F>
void forEachRun(const Shape &shape,
                const std::array<std::vector<int64_t>, N> &strides, F &&f) {
  int64_t numel = 1;
  for (int64_t d : shape)
    numel *= d;
  if (numel == 0)
    return;
  std::vector<int64_t> sizes;
  std::array<std::vector<int64_t>, N> st;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1)
      continue;
    bool merge = !sizes.empty();
    for (size_t k = 0; merge && k < N; ++k)
      merge = st[k].back() == strides[k][d] * shape[d];
    if (merge) {
      sizes.back() *= shape[d];
      for (size_t k = 0; k < N; ++k)
        st[k].back() = strides[k][d];
    } else {
      sizes.push_back(shape[d]);
      for (size_t k = 0; k < N; ++k)
        st[k].push_back(strides[k][d]);
    }
  }
  std::array<int64_t, N> offsets{};
  std::array<int64_t, N> inner{};
  if (sizes.empty()) {
    f(offsets, int64_t(1), inner);
    return;
  }
  int64_t len = sizes.back();
  for (size_t k = 0; k < N; ++k)
    inner[k] = st[k].back();
  int64_t outerRank = static_cast<int64_t>(sizes.size()) - 1;
  std::vector<int64_t> index(outerRank, 0);
  for (int64_t run = 0, runs = numel / len; run < runs; ++run) {
    f(offsets, len, inner);
    for (int64_t d = outerRank - 1; d >= 0; --d) {
      for (size_t k = 0; k < N; ++k)
        offsets[k] += st[k][d];
      if (++index[d] < sizes[d])
        break;
      for (size_t k = 0; k < N; ++k)
        offsets[k] -= st[k][d] * sizes[d];
      index[d] = 0;
    }
  }
}

/// Splits `shape` around `axis`: outer (product before), the axis size and
/// inner (product after).
struct AxisSplit {
  int64_t outer = 1, size = 1, inner = 1;
};
AxisSplit splitAt(const Shape &shape, int64_t axis);

// Operand checks and result shapes both backends share.

/// layer_norm: the weight has the shape of x's dims from `axis` on; returns
/// (rows, row length) and sets the normalised axis.
std::pair<int64_t, int64_t> layerNormShape(const Tensor &x,
                                           const Tensor &weight, int64_t axis,
                                           const char *name, int64_t *normAxis);
/// concat: at least one defined input, one dtype, equal shapes outside the
/// axis; returns the normalised axis and sets the result's shape.
int64_t concatShape(const std::vector<Tensor> &inputs, int64_t axis,
                    const char *name, Shape &outShape);

} // namespace detail
} // namespace rt
} // namespace tessera

#endif // TESSERA_RUNTIME_CPU_KERNELS_H
