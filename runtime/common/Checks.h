//===- Checks.h - operand checks and shape rules (private) ------*- C++ -*-===//
//
// The argument checks and result shapes of the ops, written once for both
// backends, so that the CPU and the CUDA runtime reject the same operands
// with the same messages. Not installed: only the runtime's own sources
// include it. Host code only.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_COMMON_CHECKS_H
#define TESSERA_RUNTIME_COMMON_CHECKS_H

#include "tessera/runtime/Tensor.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tessera {
namespace rt {
namespace detail {

/// Throws Error("<op>: <message>").
[[noreturn]] void fail(const char *op, const std::string &message);

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

/// The iteration space of N operands read over `shape` (operand k's element
/// at index i at sum_d i_d * strides[k][d]) with dimensions of size 1
/// dropped and adjacent dimensions that are contiguous for every operand
/// merged: `sizes` and, per operand, `strides` of the merged dimensions.
/// The CPU's strided loops and the CUDA kernels' index arithmetic both run
/// over as few dimensions as possible this way.
template <size_t N> struct MergedDims {
  std::vector<int64_t> sizes;
  std::array<std::vector<int64_t>, N> strides;
};
template <size_t N>
MergedDims<N> mergeDims(const Shape &shape,
                        const std::array<std::vector<int64_t>, N> &strides) {
  MergedDims<N> m;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1)
      continue;
    bool merge = !m.sizes.empty();
    for (size_t k = 0; merge && k < N; ++k)
      merge = m.strides[k].back() == strides[k][d] * shape[d];
    if (merge) {
      m.sizes.back() *= shape[d];
      for (size_t k = 0; k < N; ++k)
        m.strides[k].back() = strides[k][d];
    } else {
      m.sizes.push_back(shape[d]);
      for (size_t k = 0; k < N; ++k)
        m.strides[k].push_back(strides[k][d]);
    }
  }
  return m;
}

/// Splits `shape` around `axis`: outer (product before), the axis size and
/// inner (product after).
struct AxisSplit {
  int64_t outer = 1, size = 1, inner = 1;
};
AxisSplit splitAt(const Shape &shape, int64_t axis);

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

#endif // TESSERA_RUNTIME_COMMON_CHECKS_H
