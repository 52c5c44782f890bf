//===- OpEntries.cpp - the public ops that are one family's kernel --------===//
//
// The unary, binary and reduction ops and the optimizer updates of Ops.h,
// once for both backends: each checks what both backends check and names its
// family function (OpFamilies.h), which the backend implements.
//
//===----------------------------------------------------------------------===//

#include "tessera/runtime/Ops.h"

#include "Checks.h"
#include "OpFamilies.h"

namespace tessera {
namespace rt {
using detail::BinaryFn;
using detail::ReduceFn;
using detail::UnaryFn;

Tensor neg(const Tensor &x) { return detail::unary(x, UnaryFn::neg, "neg"); }
Tensor exp(const Tensor &x) { return detail::unary(x, UnaryFn::exp, "exp"); }
Tensor log(const Tensor &x) { return detail::unary(x, UnaryFn::log, "log"); }
Tensor sqrt(const Tensor &x) { return detail::unary(x, UnaryFn::sqrt, "sqrt"); }
Tensor rsqrt(const Tensor &x) {
  return detail::unary(x, UnaryFn::rsqrt, "rsqrt");
}
Tensor erf(const Tensor &x) { return detail::unary(x, UnaryFn::erf, "erf"); }
Tensor tanh(const Tensor &x) { return detail::unary(x, UnaryFn::tanh, "tanh"); }
Tensor relu(const Tensor &x) { return detail::unary(x, UnaryFn::relu, "relu"); }
Tensor sigmoid(const Tensor &x) {
  return detail::unary(x, UnaryFn::sigmoid, "sigmoid");
}
Tensor sin(const Tensor &x) { return detail::unary(x, UnaryFn::sin, "sin"); }
Tensor cos(const Tensor &x) { return detail::unary(x, UnaryFn::cos, "cos"); }
Tensor gelu(const Tensor &x, bool tanhApproximation) {
  return detail::unary(
      x, tanhApproximation ? UnaryFn::geluTanh : UnaryFn::geluErf, "gelu");
}

Tensor gelu_grad(const Tensor &x, const Tensor &grad, bool tanhApproximation) {
  detail::checkGeluGrad(x, grad);
  return detail::binary(x, grad,
                        tanhApproximation ? BinaryFn::geluTanhGrad
                                          : BinaryFn::geluErfGrad,
                        "gelu_grad");
}

Tensor add(const Tensor &a, const Tensor &b) {
  return detail::binary(a, b, BinaryFn::add, "add");
}
Tensor sub(const Tensor &a, const Tensor &b) {
  return detail::binary(a, b, BinaryFn::sub, "sub");
}
Tensor mul(const Tensor &a, const Tensor &b) {
  return detail::binary(a, b, BinaryFn::mul, "mul");
}
Tensor div(const Tensor &a, const Tensor &b) {
  return detail::binary(a, b, BinaryFn::div, "div");
}
Tensor pow(const Tensor &a, const Tensor &b) {
  return detail::binary(a, b, BinaryFn::pow, "pow");
}

Shape broadcastShapes(const Shape &a, const Shape &b) {
  return detail::broadcastShapesFor(a, b, "broadcast");
}

Tensor reduce_sum(const Tensor &x, const std::vector<int64_t> &axes,
                  bool keepdims) {
  return detail::reduce(x, axes, keepdims, ReduceFn::sum, "reduce_sum");
}
Tensor reduce_mean(const Tensor &x, const std::vector<int64_t> &axes,
                   bool keepdims) {
  return detail::reduce(x, axes, keepdims, ReduceFn::mean, "reduce_mean");
}
Tensor reduce_max(const Tensor &x, const std::vector<int64_t> &axes,
                  bool keepdims) {
  return detail::reduce(x, axes, keepdims, ReduceFn::max, "reduce_max");
}

Tensor sgd_update(const Tensor &param, const Tensor &grad, const Tensor &lr,
                  const Tensor &weightDecay) {
  detail::checkSgdOperands(param, grad);
  return detail::sgd(param, grad, {lr, weightDecay});
}

std::tuple<Tensor, Tensor, Tensor>
adamw_update(const Tensor &param, const Tensor &grad, const Tensor &m,
             const Tensor &v, const Tensor &step, const Tensor &lr,
             const Tensor &beta1, const Tensor &beta2, const Tensor &eps,
             const Tensor &weightDecay) {
  detail::checkAdamwOperands(param, grad, m, v);
  return detail::adamw(param, grad, m, v,
                       {step, lr, beta1, beta2, eps, weightDecay});
}

} // namespace rt
} // namespace tessera
