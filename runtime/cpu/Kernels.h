//===- Kernels.h - shared helpers of the CPU kernels (private) --*- C++ -*-===//
//
// The strided n-d loop that the elementwise, broadcast, reduction and layout
// kernels share, beside the dtype dispatch (common/DType.h) and the operand
// checks and shape rules of both backends (common/Checks.h). Not installed:
// only the runtime's own .cpp files include it.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_CPU_KERNELS_H
#define TESSERA_RUNTIME_CPU_KERNELS_H

#include "tessera/runtime/Tensor.h"

#include "Checks.h"
#include "DType.h"

#include <array>
#include <cstdint>
#include <vector>

namespace tessera {
namespace rt {
namespace detail {

/// Runs f(offsets, len, innerStrides) over every innermost run of an n-d
/// loop over `shape`, where operand k's element at index i sits at
/// sum_d i_d * strides[k][d]. Dimensions of size 1 are dropped and adjacent
/// dimensions that are contiguous for every operand are merged first
/// (mergeDims), so same-shape and trailing-broadcast cases become one or two
/// long runs with inner strides 0 or 1 (the bodies branch on those to
/// vectorise).
template <size_t N, typename F>
void forEachRun(const Shape &shape,
                const std::array<std::vector<int64_t>, N> &strides, F &&f) {
  int64_t numel = 1;
  for (int64_t d : shape)
    numel *= d;
  if (numel == 0)
    return;
  MergedDims<N> merged = mergeDims<N>(shape, strides);
  const std::vector<int64_t> &sizes = merged.sizes;
  const std::array<std::vector<int64_t>, N> &st = merged.strides;
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

} // namespace detail
} // namespace rt
} // namespace tessera

#endif // TESSERA_RUNTIME_CPU_KERNELS_H
