//===- Operands.h - the llm kernels' operand checks (private) ---*- C++ -*-===//
//
// The shape and dtype rules of each llm kernel, shared by the CPU and CUDA
// kernels so that both reject the same operands with the same message
// (tessera::rt::Error naming the op). Where the data lives is each
// backend's own check.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_LLM_RUNTIME_OPERANDS_H
#define TESSERA_LLM_RUNTIME_OPERANDS_H

#include "tessera/runtime/Tensor.h"

#include <string>

namespace tessera::rt::llm::detail {

[[noreturn]] void fail(const char *op, const std::string &what);

/// Calls fn(T{}) for an f32 or f64 dtype (the operand checks below reject
/// the others first).
template <typename Fn> void dispatchFloat(DType dtype, Fn fn) {
  if (dtype == DType::f32)
    fn(float{});
  else
    fn(double{});
}

/// Throws unless t is defined and f32 or f64.
void requireFloat(const Tensor &t, const char *op);

/// Rows (all but the last dimension) and their length.
struct Rows {
  int64_t rows = 0, d = 0;
};
/// [..., 1]: the shape of one statistic per row.
Shape rowStatShape(const Tensor &x);

/// x of rank >= 1, weight [d] of x's dtype.
Rows rmsNormOperands(const Tensor &x, const Tensor &weight, const char *op);
/// As rms_norm, and grad like x, rstd [..., 1] of x's dtype.
Rows rmsNormGradOperands(const Tensor &grad, const Tensor &x,
                         const Tensor &weight, const Tensor &rstd,
                         const char *op);
/// gate and up of one shape and float dtype.
void swigluOperands(const Tensor &gate, const Tensor &up, const char *op);

/// x [.., t, d] with d even; cos and sin [t, d] of x's dtype. rows: the
/// number of [t, d] blocks of x.
struct RopeDims {
  int64_t rows = 0, t = 0, d = 0;
};
RopeDims ropeOperands(const Tensor &x, const Tensor &cos, const Tensor &sin,
                      const char *op);
/// The tables' shape [t, d], d even, and a float dtype.
RopeDims ropeTablesOperands(const Shape &shape, DType dtype, const char *op);

/// x [.., h, t, d] and repeats >= 1: the output shape, and x as `blocks`
/// contiguous [t, d] blocks of `blockElems` elements each (output block
/// b * repeats + k is input block b).
struct RepeatKv {
  Shape out;
  int64_t blocks = 0, blockElems = 0;
};
RepeatKv repeatKvOperands(const Tensor &x, int64_t repeats, const char *op);

/// q [.., t, d], k [.., s, d], v [.., s, e] of one float dtype and the
/// same leading dimensions (t = s when causal): `slices` [t, d] blocks of
/// q, each with its [s, d] block of k and [s, e] block of v.
struct AttentionDims {
  int64_t slices = 0, t = 0, s = 0, d = 0, e = 0;
};
AttentionDims attentionOperands(const Tensor &q, const Tensor &k,
                                const Tensor &v, bool causal, const char *op);
/// As attention, and grad and y [.., t, e], lse [.., t, 1].
AttentionDims attentionGradOperands(const Tensor &grad, const Tensor &q,
                                    const Tensor &k, const Tensor &v,
                                    const Tensor &y, const Tensor &lse,
                                    bool causal, const char *op);
/// [.., t, e]: attention's result shape.
Shape attentionResultShape(const Tensor &q, const AttentionDims &dims);

} // namespace tessera::rt::llm::detail

#endif // TESSERA_LLM_RUNTIME_OPERANDS_H
