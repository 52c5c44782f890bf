//===- Checks.h - operand checks and shape rules (private) ------*- C++ -*-===//
//
// The argument checks and result shapes of the ops, written once for both
// backends, so that the CPU and the CUDA runtime reject the same operands
// with the same messages. Not installed: only the runtime's own sources
// include it. Host code only.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_COMMON_CHECKS_H
#define TESSERA_RUNTIME_COMMON_CHECKS_H

#include "tessera/runtime/Ops.h"
#include "tessera/runtime/Tensor.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tessera {
namespace rt {
namespace detail {

/// Throws Error("<op>: <message>").
[[noreturn]] void fail(const char *op, const std::string &message);

void requireDefined(const Tensor &t, const char *op, const char *what);
void requireFloat(const Tensor &t, const char *op, const char *what);
void requireSameDType(const Tensor &a, const Tensor &b, const char *op);
void requireSameShape(const Tensor &a, const Tensor &b, const char *op);
/// Maps a possibly negative axis into [0, rank).
int64_t normalizeAxis(int64_t axis, int64_t rank, const char *op);
/// Hyperparameter / step tensors: any dtype, one element.
void requireScalar(const Tensor &t, const char *op, const char *what);
/// requireScalar, then the value.
double scalarArg(const Tensor &t, const char *op, const char *what);

std::vector<int64_t> contiguousStrides(const Shape &shape);
/// Strides of a contiguous `in` read as the (broadcast) shape `out`:
/// aligned to the right, 0 on broadcast and missing dimensions.
std::vector<int64_t> broadcastStrides(const Shape &in, const Shape &out);
Shape broadcastShapesFor(const Shape &a, const Shape &b, const char *op);

/// The iteration space of N operands read over `shape` (operand k's element
/// at index i at sum_d i_d * strides[k][d]) with dimensions of size 1
/// dropped and adjacent dimensions that are contiguous for every operand
/// merged: `sizes` and, per operand, `strides` of the merged dimensions.
/// The CPU's strided loops and the CUDA kernels' index arithmetic both run
/// over as few dimensions as possible this way.
template <size_t N> struct MergedDims {
  std::vector<int64_t> sizes;
  std::array<std::vector<int64_t>, N> strides;
};
template <size_t N>
MergedDims<N> mergeDims(const Shape &shape,
                        const std::array<std::vector<int64_t>, N> &strides) {
  MergedDims<N> m;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1)
      continue;
    bool merge = !m.sizes.empty();
    for (size_t k = 0; merge && k < N; ++k)
      merge = m.strides[k].back() == strides[k][d] * shape[d];
    if (merge) {
      m.sizes.back() *= shape[d];
      for (size_t k = 0; k < N; ++k)
        m.strides[k].back() = strides[k][d];
    } else {
      m.sizes.push_back(shape[d]);
      for (size_t k = 0; k < N; ++k)
        m.strides[k].push_back(strides[k][d]);
    }
  }
  return m;
}

/// Splits `shape` around `axis`: outer (product before), the axis size and
/// inner (product after).
struct AxisSplit {
  int64_t outer = 1, size = 1, inner = 1;
};
AxisSplit splitAt(const Shape &shape, int64_t axis);

//===----------------------------------------------------------------------===//
// The ops' operand checks and result shapes. Each runs every check of its
// op in the order the op reports them, on the operands as the caller got
// them (the CUDA backend checks before it copies host operands to the GPU),
// and throws Error("<op>: ...") for the first that fails.
//===----------------------------------------------------------------------===//

/// add, sub, mul, div, pow: float operands of one dtype; the broadcast shape.
Shape binaryFloatShape(const Tensor &a, const Tensor &b, const char *name);
/// compare: operands of one dtype other than i1; the broadcast shape.
Shape compareShape(const Tensor &a, const Tensor &b);
/// where: an i1 condition and operands of one dtype; the shape all three
/// broadcast to.
Shape whereShape(const Tensor &condition, const Tensor &a, const Tensor &b);
/// gelu_grad: float input and grad of one dtype and shape.
void checkGeluGrad(const Tensor &x, const Tensor &grad);

/// reshape: the new shape has x's element count.
void checkReshape(const Tensor &x, const Shape &shape);
/// What transpose and slice copy: the result's shape, and the strides and
/// offset (in elements) at which it reads the contiguous input.
struct StridedView {
  Shape shape;
  std::vector<int64_t> strides;
  int64_t base = 0;
};
StridedView transposeView(const Tensor &x, const std::vector<int64_t> &perm);
StridedView sliceView(const Tensor &x, const std::vector<int64_t> &starts,
                      const std::vector<int64_t> &limits,
                      const std::vector<int64_t> &steps);
/// broadcast_to: x broadcasts to `shape` (numpy rules, no added rank).
void checkBroadcastTo(const Tensor &x, const Shape &shape);
/// split: the sizes are not negative and add up to the axis; returns the
/// normalised axis.
int64_t splitAxis(const Tensor &x, int64_t axis,
                  const std::vector<int64_t> &sizes);
/// concat: at least one defined input, one dtype, equal shapes outside the
/// axis; the result's shape and the normalised axis.
struct ConcatShape {
  Shape shape;
  int64_t axis;
};
ConcatShape concatShape(const std::vector<Tensor> &inputs, int64_t axis,
                        const char *name);
/// What split and concat copy: the pieces along `axis` of a contiguous
/// tensor of shape `whole`, piece i of extent sizes[i] along the axis and of
/// shape shapes[i]. Piece i is `outer` runs of runs[i] bytes; row o's run
/// lies at o * pitch + offsets[i] in the whole tensor and at o * runs[i] in
/// the piece.
struct AxisPieces {
  int64_t outer = 1, pitch = 0;
  std::vector<int64_t> offsets, runs;
  std::vector<Shape> shapes;
};
AxisPieces axisPieces(const Shape &whole, int64_t axis,
                      const std::vector<int64_t> &sizes, int64_t elemSize);
/// concat's pieces: the inputs, along `axis` of the result `whole`.
AxisPieces axisPieces(const Shape &whole, int64_t axis,
                      const std::vector<Tensor> &inputs, int64_t elemSize);
/// gather: the result's shape (data's dims before the axis, the indices'
/// shape, data's dims after it); sets the normalised axis.
Shape gatherShape(const Tensor &data, const Tensor &indices, int64_t axis,
                  int64_t *normAxis);
/// embedding_grad: float grad of shape indices x C for a V x C table.
void checkEmbeddingGrad(const Tensor &grad, const Tensor &indices,
                        const Shape &tableShape);

/// matmul: float operands of one dtype and rank >= 2 whose contracting
/// dimensions agree; [..., m, k] @ [..., k, n] with batch dims broadcast.
struct MatmulShape {
  int64_t m = 0, k = 0, n = 0;
  Shape aBatch, bBatch, batch; ///< the operands' batch dims, broadcast
  Shape outShape;              ///< batch + [m, n]
};
MatmulShape matmulShape(const Tensor &a, const Tensor &b);

/// softmax, log_softmax: a float input; the normalised axis.
int64_t softmaxAxis(const Tensor &x, int64_t axis, const char *name);
/// softmax_grad, log_softmax_grad: float output and grad of one dtype and
/// shape; the normalised axis.
int64_t softmaxGradAxis(const Tensor &output, const Tensor &grad, int64_t axis,
                        const char *name);
/// layer_norm and its gradient: rows of length d along the dims from
/// `axis` on; mean and rstd have shape statShape (the leading dims, then
/// size 1).
struct LayerNormShape {
  int64_t axis = 0, rows = 0, d = 0;
  Shape statShape;
};
/// layer_norm: float x and weight (x's dims from `axis` on) of one dtype;
/// an optional bias of the weight's dtype and shape.
LayerNormShape layerNormOperands(const Tensor &x, const Tensor &weight,
                                 const Tensor &bias, int64_t axis);
/// layer_norm_grad: float operands of one dtype, grad of x's shape, the
/// weight's shape as for layer_norm, one mean and rstd per row.
LayerNormShape layerNormGradOperands(const Tensor &grad, const Tensor &x,
                                     const Tensor &weight, const Tensor &mean,
                                     const Tensor &rstd, int64_t axis);
/// softmax_cross_entropy(_grad): float logits N x C and labels N.
void checkCrossEntropyOperands(const Tensor &logits, const Tensor &labels,
                               const char *name);
/// softmax_cross_entropy_grad: those and a float grad of shape N
/// (reduction none) or of one element.
void checkCrossEntropyGrad(const Tensor &logits, const Tensor &labels,
                           const Tensor &grad, Reduction reduction);

/// reduce_sum, reduce_mean, reduce_max over `axes` of a float input.
struct ReducePlan {
  std::vector<bool> reduced; ///< per input dim
  Shape keptShape;           ///< the input shape with reduced dims set to 1
  Shape resultShape;         ///< keptShape, or without them (!keepdims)
  int64_t count = 1;         ///< elements reduced into each output
};
/// Axes not empty, in range and not repeated.
ReducePlan planReduce(const Tensor &x, const std::vector<int64_t> &axes,
                      bool keepdims, const char *name);
/// reduce_max: a maximum over no elements is an error.
void checkMaxOverElements(const Tensor &x, const ReducePlan &plan,
                          const char *name);

/// sgd_update: float param and grad of one dtype and shape.
void checkSgdOperands(const Tensor &param, const Tensor &grad);
/// adamw_update: float param, grad, m and v of one dtype and shape.
void checkAdamwOperands(const Tensor &param, const Tensor &grad,
                        const Tensor &m, const Tensor &v);

} // namespace detail
} // namespace rt
} // namespace tessera

#endif // TESSERA_RUNTIME_COMMON_CHECKS_H
