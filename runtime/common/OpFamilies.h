//===- OpFamilies.h - what each backend implements (private) ----*- C++ -*-===//
//
// Many public ops of Ops.h are one kernel with another scalar function: the
// unary ops, the binary ops, the reductions; and the optimizer updates'
// operands are checked alike on both backends. common/OpEntries.cpp defines
// those entry points once, for both backends, as calls of the family
// functions below; each backend (cpu/, cuda/) defines the family functions
// with its own loop or kernel over the functors of ScalarOps.h. `name` is
// the public op's name, for the error messages.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_COMMON_OPFAMILIES_H
#define TESSERA_RUNTIME_COMMON_OPFAMILIES_H

#include "tessera/runtime/Ops.h"

#include <cstdint>
#include <tuple>
#include <vector>

namespace tessera {
namespace rt {
namespace detail {

/// The order of ScalarOps.h's functor lists.
enum class UnaryFn {
  neg,
  exp,
  log,
  sqrt,
  rsqrt,
  erf,
  tanh,
  sigmoid,
  sin,
  cos,
  relu,
  geluTanh,
  geluErf
};
/// The gradients are (input, grad) pairs of one shape.
enum class BinaryFn { add, sub, mul, div, pow, geluTanhGrad, geluErfGrad };
enum class ReduceFn { sum, mean, max };

/// fn(x) element-wise; float dtypes.
Tensor unary(const Tensor &x, UnaryFn fn, const char *name);
/// fn(a, b) with numpy broadcasting; float dtypes, a's dtype = b's.
Tensor binary(const Tensor &a, const Tensor &b, BinaryFn fn, const char *name);
/// fn over `axes` (all axes when empty).
Tensor reduce(const Tensor &x, const std::vector<int64_t> &axes, bool keepdims,
              ReduceFn fn, const char *name);

/// The one-element hyperparameter operands (any dtype) of the updates.
struct SgdScalars {
  const Tensor &lr, &weightDecay;
};
struct AdamwScalars {
  const Tensor &step, &lr, &beta1, &beta2, &eps, &weightDecay;
};
/// The updates of sgd_update and adamw_update, their operands checked.
Tensor sgd(const Tensor &param, const Tensor &grad, const SgdScalars &s);
std::tuple<Tensor, Tensor, Tensor> adamw(const Tensor &param,
                                         const Tensor &grad, const Tensor &m,
                                         const Tensor &v,
                                         const AdamwScalars &s);

} // namespace detail
} // namespace rt
} // namespace tessera

#endif // TESSERA_RUNTIME_COMMON_OPFAMILIES_H
