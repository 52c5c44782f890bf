//===- Runtime.h - the llm extension's kernels ------------------*- C++ -*-===//
//
// One function per llm op, called by the emitted programs (the ops' records
// name them) and by the interpreter. CPU kernels on f32 and f64 tensors
// (runtime/cpu/Kernels.cpp); shape and dtype errors throw
// tessera::rt::Error naming the op.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_LLM_RUNTIME_H
#define TESSERA_LLM_RUNTIME_H

#include "tessera/runtime/Tensor.h"

#include <tuple>

namespace tessera::rt::llm {

/// (y, rstd): y = x * rstd * weight over the last dimension, rstd =
/// 1 / sqrt(mean(x^2) + epsilon) with shape [..., 1].
std::tuple<Tensor, Tensor> rms_norm(const Tensor &x, const Tensor &weight,
                                    double epsilon);
/// (dx, dweight) of rms_norm from the gradient of y and the forward's rstd.
std::tuple<Tensor, Tensor> rms_norm_grad(const Tensor &grad, const Tensor &x,
                                         const Tensor &weight,
                                         const Tensor &rstd);
/// x * sigmoid(x).
Tensor silu(const Tensor &x);
/// silu(gate) * up; gate and up of one shape.
Tensor swiglu(const Tensor &gate, const Tensor &up);

} // namespace tessera::rt::llm

#endif // TESSERA_LLM_RUNTIME_H
