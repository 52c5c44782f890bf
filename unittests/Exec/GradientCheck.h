//===- GradientCheck.h - a gradient rule vs finite differences --*- C++ -*-===//
//
// For one differentiable op: a float64 function
//   loss = sum(op(params...) * weights)
// is differentiated by tsr-autodiff and the gradient function is run by the
// interpreter; each parameter element's gradient must match the central
// finite difference of the forward (relative error below 1e-6, norm-wise).
// Weights are fixed pseudo-random values so that every output element
// matters with a different weight. Used by the core's GradientCheckTest and
// by extensions' tests (dialects/*/unittests).
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_UNITTESTS_EXEC_GRADIENTCHECK_H
#define TESSERA_UNITTESTS_EXEC_GRADIENTCHECK_H

#include "mlir/IR/MLIRContext.h"

namespace tessera::testing {

struct GradientCase {
  const char *name;
  /// The function body: arguments %p0.. (params, f64), %i0.. (inputs),
  /// must define %y (any f64 tensor) from which the loss is built.
  const char *params; ///< "tensor<2x3xf64>, tensor<3xf64>"
  const char *inputs; ///< "tensor<2xi64>" or ""
  const char *body;
  const char *yType;
  /// Parameter values are drawn in [lo, hi] (positive for log, sqrt, ...).
  double lo = -1.5, hi = 1.5;
};

/// Runs the check with gtest assertions; `context` has tsr, func and the
/// op's dialect loaded.
void checkGradient(mlir::MLIRContext &context, const GradientCase &c);

} // namespace tessera::testing

#endif // TESSERA_UNITTESTS_EXEC_GRADIENTCHECK_H
