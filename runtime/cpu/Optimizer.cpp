//===- Optimizer.cpp - SGD and AdamW updates ------------------------------===//
//
// Value style (new tensors), with the arithmetic in the order torch.optim
// uses (torch 1.13, single-tensor path): scalars such as the bias
// corrections are computed in double as Python floats are, the elementwise
// work in the parameter's precision. This keeps an f32 program within
// rounding of the PyTorch reference over many steps.
//
//===----------------------------------------------------------------------===//

#include "tessera/runtime/Ops.h"

#include "Kernels.h"
#include "OpFamilies.h"

#include <cmath>

namespace tessera {
namespace rt {
using namespace detail;

Tensor detail::sgd(const Tensor &param, const Tensor &grad,
                   const SgdScalars &s) {
  const char *name = "sgd_update";
  double lrValue = scalarArg(s.lr, name, "lr");
  double wd = scalarArg(s.weightDecay, name, "weight_decay");
  Tensor out(param.shape(), param.dtype());
  dispatchFloat(param.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    const T *p = param.data<T>(), *g = grad.data<T>();
    T *o = out.data<T>();
    T l = static_cast<T>(lrValue), w = static_cast<T>(wd);
    int64_t n = param.numel();
    // torch.optim.SGD: d_p = g + wd * p (only when wd != 0); p -= lr * d_p.
    if (wd != 0) {
      for (int64_t i = 0; i < n; ++i)
        o[i] = p[i] - l * (g[i] + w * p[i]);
    } else {
      for (int64_t i = 0; i < n; ++i)
        o[i] = p[i] - l * g[i];
    }
  });
  return out;
}

std::tuple<Tensor, Tensor, Tensor>
detail::adamw(const Tensor &param, const Tensor &grad, const Tensor &m,
              const Tensor &v, const AdamwScalars &s) {
  const char *name = "adamw_update";
  double t = scalarArg(s.step, name, "step");
  if (t < 1)
    fail(name, "step must start at 1, got " + std::to_string(t));
  double lrValue = scalarArg(s.lr, name, "lr");
  double b1 = scalarArg(s.beta1, name, "beta1");
  double b2 = scalarArg(s.beta2, name, "beta2");
  double epsValue = scalarArg(s.eps, name, "eps");
  double wd = scalarArg(s.weightDecay, name, "weight_decay");
  double biasCorrection1 = 1 - std::pow(b1, t);
  double biasCorrection2Sqrt = std::sqrt(1 - std::pow(b2, t));
  double stepSize = lrValue / biasCorrection1;

  Tensor newP(param.shape(), param.dtype()), newM(param.shape(), param.dtype()),
      newV(param.shape(), param.dtype());
  dispatchFloat(param.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    const T *p = param.data<T>(), *g = grad.data<T>();
    const T *pm = m.data<T>(), *pv = v.data<T>();
    T *op = newP.data<T>(), *om = newM.data<T>(), *ov = newV.data<T>();
    const T decay = static_cast<T>(1 - lrValue * wd);
    const T tb1 = static_cast<T>(b1), tb2 = static_cast<T>(b2);
    const T oneMinusB1 = static_cast<T>(1 - b1),
            oneMinusB2 = static_cast<T>(1 - b2);
    const T bc2 = static_cast<T>(biasCorrection2Sqrt);
    const T te = static_cast<T>(epsValue), negStep = static_cast<T>(-stepSize);
    for (int64_t i = 0, n = param.numel(); i < n; ++i) {
      T pi = p[i] * decay;
      T mi = pm[i] * tb1 + g[i] * oneMinusB1;
      T vi = pv[i] * tb2 + oneMinusB2 * g[i] * g[i];
      T denom = std::sqrt(vi) / bc2 + te;
      om[i] = mi;
      ov[i] = vi;
      op[i] = pi + negStep * mi / denom; // addcdiv_(m, denom, -step_size)
    }
  });
  return {newP, newM, newV};
}

} // namespace rt
} // namespace tessera
