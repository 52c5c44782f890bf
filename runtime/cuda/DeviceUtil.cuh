//===- DeviceUtil.cuh - device helpers of the CUDA kernels (private) ------===//
//
// Strided n-d indexing for broadcasts and layout copies, the NaN-propagating
// row max and the deferred-error report that the kernels of Elementwise.cu and
// Normalization.cu share.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_CUDA_DEVICEUTIL_CUH
#define TESSERA_RUNTIME_CUDA_DEVICEUTIL_CUH

#include "CudaRuntime.h"
#include "tessera/runtime/CudaDevice.cuh"

#include "Checks.h"
#include "DType.h"
#include "ScalarOps.h"

#include <array>
#include <cmath>
#include <type_traits>
#include <vector>

namespace tessera {
namespace rt {
namespace cuda {

//===----------------------------------------------------------------------===//
// Strided indexing
//===----------------------------------------------------------------------===//

/// The most dimensions an n-d kernel handles after merging contiguous ones
/// (the model's tensors have at most 5).
constexpr int kMaxDims = 8;

/// N operands read over one iteration shape: operand k's element at index
/// i sits at sum_d i_d * strides[k][d] (passed to kernels by value).
template <int N> struct Strided {
  int rank = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[N][kMaxDims] = {};
};

/// Drops size-1 dimensions and merges adjacent ones that are contiguous for
/// every operand (detail::mergeDims, as the CPU backend's forEachRun), so
/// that the index arithmetic per element runs over as few dimensions as
/// possible.
template <int N>
Strided<N> makeStrided(const Shape &shape,
                       const std::array<std::vector<int64_t>, N> &strides,
                       const char *op) {
  Strided<N> s;
  detail::MergedDims<N> merged = detail::mergeDims<N>(shape, strides);
  const std::vector<int64_t> &sizes = merged.sizes;
  const std::array<std::vector<int64_t>, N> &st = merged.strides;
  if (sizes.size() > static_cast<size_t>(kMaxDims))
    detail::fail(op, "more than " + std::to_string(kMaxDims) +
                         " non-mergeable dimensions in shape " +
                         shapeToString(shape));
  s.rank = static_cast<int>(sizes.size());
  for (int d = 0; d < s.rank; ++d) {
    s.sizes[d] = sizes[d];
    for (int k = 0; k < N; ++k)
      s.strides[k][d] = st[k][d];
  }
  return s;
}

template <int N>
__device__ inline void stridedOffsets(const Strided<N> &s, int64_t i,
                                      int64_t (&off)[N]) {
  for (int k = 0; k < N; ++k)
    off[k] = 0;
  for (int d = s.rank - 1; d >= 0; --d) {
    int64_t size = s.sizes[d];
    int64_t idx = i % size;
    i /= size;
    for (int k = 0; k < N; ++k)
      off[k] += idx * s.strides[k][d];
  }
}

/// A one-element hyperparameter / step / grad operand of any dtype, read on
/// the device so that the host never waits for it.
__device__ inline double loadScalar(const void *p, int dtype, int64_t i = 0) {
  switch (static_cast<DType>(dtype)) {
  case DType::f32:
    return static_cast<const float *>(p)[i];
  case DType::f64:
    return static_cast<const double *>(p)[i];
  case DType::i32:
    return static_cast<const int32_t *>(p)[i];
  case DType::i64:
    return static_cast<double>(static_cast<const int64_t *>(p)[i]);
  case DType::i1:
    return static_cast<const uint8_t *>(p)[i];
  case DType::bf16:
    return static_cast<float>(static_cast<const detail::BFloat16 *>(p)[i]);
  }
  return 0;
}

//===----------------------------------------------------------------------===//
// Deferred errors
//===----------------------------------------------------------------------===//

/// Records the first failure; later ones are dropped (the host reports one).
__device__ inline void reportError(DeviceErrorRecord *r, DeviceErrorCode code,
                                   int64_t value, int64_t position,
                                   int64_t bound, int64_t extra = 0) {
  if (atomicCAS(&r->code, 0, -1) == 0) {
    r->value = value;
    r->position = position;
    r->bound = bound;
    r->extra = extra;
    __threadfence();
    atomicExch(&r->code, static_cast<int32_t>(code));
  }
}

/// max that propagates NaN (as torch.amax and the CPU backend).
struct MaxOp {
  template <typename A> __device__ A operator()(A a, A b) const {
    if (elem::isnan(a))
      return a;
    if (elem::isnan(b))
      return b;
    return b > a ? b : a;
  }
};

/// The max of row[0..n), by the whole block (every thread gets it); NaN
/// propagates.
template <typename T> __device__ T blockRowMax(const T *row, int64_t n) {
  T mx = elem::negInfinity<T>();
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    mx = MaxOp()(mx, row[i]);
  return blockReduce(mx, MaxOp(), elem::negInfinity<T>());
}

} // namespace cuda
} // namespace rt
} // namespace tessera

#endif // TESSERA_RUNTIME_CUDA_DEVICEUTIL_CUH
