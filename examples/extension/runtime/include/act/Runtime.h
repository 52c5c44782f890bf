//===- Runtime.h - the act extension's kernels ------------------*- C++ -*-===//
//
// The functions that act ops lower to: tessera::rt::<rtCallee>, with the
// arguments of the op's rtArgs (ActOps.td). Programs that use act ops
// include this header and link ActRuntime.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_RUNTIME_H
#define ACT_RUNTIME_H

#include "tessera/runtime/Tensor.h"

namespace tessera::rt::act {

/// relu(x)^2 elementwise; f32 or f64, on the host.
Tensor relu2(const Tensor &x);

} // namespace tessera::rt::act

#endif // ACT_RUNTIME_H
