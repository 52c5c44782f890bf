//===- Reduce.cpp - the reductions (reduce_sum, reduce_mean, reduce_max) --===//
//
// One strided pass over the input: the output is read as an operand with
// zero strides on the reduced axes, so every pattern (leading axes as in a
// bias gradient, trailing axes as in a row sum, axes in the middle) runs
// the same loop, whose inner run is contiguous in the input. f32 sums
// accumulate in double so that long reductions (bias gradients over B*T
// rows) stay accurate.
//
//===----------------------------------------------------------------------===//

#include "tessera/runtime/Ops.h"

#include "Kernels.h"
#include "OpFamilies.h"

#include <cmath>
#include <limits>

namespace tessera {
namespace rt {
using namespace detail;

Tensor detail::reduce(const Tensor &x, const std::vector<int64_t> &axes,
                      bool keepdims, ReduceFn kind, const char *name) {
  ReducePlan plan = planReduce(x, axes, keepdims, name);
  Tensor out(plan.resultShape, x.dtype());
  dispatchFloat(x.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    const T *in = x.data<T>();
    T *po = out.data<T>();
    int64_t outN = out.numel();
    std::array<std::vector<int64_t>, 2> strides = {
        contiguousStrides(x.shape()),
        broadcastStrides(plan.keptShape, x.shape())};
    if (kind == ReduceFn::max) {
      checkMaxOverElements(x, plan, name);
      for (int64_t i = 0; i < outN; ++i)
        po[i] = -std::numeric_limits<T>::infinity();
      forEachRun<2>(x.shape(), strides,
                    [&](const std::array<int64_t, 2> &off, int64_t len,
                        const std::array<int64_t, 2> &s) {
                      const T *src = in + off[0];
                      T *acc = po + off[1];
                      for (int64_t i = 0; i < len; ++i) {
                        T v = src[i];
                        T &a = acc[i * s[1]];
                        // NaN propagates, as torch.amax.
                        if (v > a || std::isnan(v))
                          a = std::isnan(a) ? a : v;
                      }
                    });
      return;
    }
    std::vector<double> acc(outN, 0.0);
    forEachRun<2>(x.shape(), strides,
                  [&](const std::array<int64_t, 2> &off, int64_t len,
                      const std::array<int64_t, 2> &s) {
                    const T *src = in + off[0];
                    double *dst = acc.data() + off[1];
                    if (s[1] == 0) {
                      double sum = 0;
                      for (int64_t i = 0; i < len; ++i)
                        sum += src[i];
                      *dst += sum;
                    } else {
                      for (int64_t i = 0; i < len; ++i)
                        dst[i] += src[i];
                    }
                  });
    double scale =
        kind == ReduceFn::mean ? 1.0 / static_cast<double>(plan.count) : 1.0;
    for (int64_t i = 0; i < outN; ++i)
      po[i] = static_cast<T>(acc[i] * scale);
  });
  return out;
}

} // namespace rt
} // namespace tessera
