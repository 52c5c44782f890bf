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

/// x * cos + rotate(x) * sin over the last dimension of x [.., t, d], with
/// [t, d] tables; rotate pairs i with i + d/2 (or 2i with 2i + 1 when
/// `interleaved`) as (a, b) -> (-b, a). With `transpose`: x * cos +
/// rotate^T(x * sin), the gradient of the other.
Tensor rope(const Tensor &x, const Tensor &cos, const Tensor &sin,
            bool interleaved, bool transpose);
/// (cos, sin) of shape [t, d]: angle p * theta^(-2j/d) for position p and
/// pair j (j = i mod d/2, or i / 2 when `interleaved`).
std::tuple<Tensor, Tensor> rope_tables(double theta, bool interleaved,
                                       const Shape &shape, DType dtype);
/// [.., h, t, d] -> [.., h * repeats, t, d]; output head i is input head
/// i / repeats.
Tensor repeat_kv(const Tensor &x, int64_t repeats);

/// (y, lse): y = softmax(scale * q k^T + mask) v per leading index, for q
/// [.., t, d], k [.., s, d], v [.., s, e]; mask = -inf where key j > query i
/// when `causal` (t = s). lse [.., t, 1] is each row's log-sum-exp of the
/// masked, scaled scores. No [t, s] matrix is stored: tiles of it, with an
/// online softmax.
std::tuple<Tensor, Tensor> attention(const Tensor &q, const Tensor &k,
                                     const Tensor &v, double scale,
                                     bool causal);
/// (dq, dk, dv) of attention from the gradient of y and the forward's y and
/// lse (the probabilities are recomputed tile by tile).
std::tuple<Tensor, Tensor, Tensor>
attention_grad(const Tensor &grad, const Tensor &q, const Tensor &k,
               const Tensor &v, const Tensor &y, const Tensor &lse,
               double scale, bool causal);

} // namespace tessera::rt::llm

#endif // TESSERA_LLM_RUNTIME_H
