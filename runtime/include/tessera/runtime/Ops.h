//===- Ops.h - one function per tsr op --------------------------*- C++ -*-===//
//
// Part of the runtime API (see Runtime.h, the umbrella header). Each function
// implements the tsr op of the same name with exactly the semantics of
// docs/Dialects/Tsr.md. Float kernels run on f32 and f64 (the same templated
// code), so that gradient checks can run in double precision. Shape, dtype
// and index errors throw tessera::rt::Error naming the op.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_OPS_H
#define TESSERA_RUNTIME_OPS_H

#include "tessera/runtime/Tensor.h"

#include <tuple>
#include <vector>

namespace tessera {
namespace rt {

enum class Compare { eq, ne, lt, le, gt, ge };
enum class Reduction { mean, sum, none };

// Elementwise (float tensors, f32 or f64).
Tensor neg(const Tensor &x);
Tensor exp(const Tensor &x);
Tensor log(const Tensor &x);
Tensor sqrt(const Tensor &x);
Tensor rsqrt(const Tensor &x);
Tensor erf(const Tensor &x);
Tensor tanh(const Tensor &x);
Tensor relu(const Tensor &x);
/// 1 / (1 + exp(-x)).
Tensor sigmoid(const Tensor &x);
Tensor sin(const Tensor &x);
Tensor cos(const Tensor &x);
Tensor gelu(const Tensor &x, bool tanhApproximation);

// Binary with numpy broadcasting; the result has the broadcast shape.
Tensor add(const Tensor &a, const Tensor &b);
Tensor sub(const Tensor &a, const Tensor &b);
Tensor mul(const Tensor &a, const Tensor &b);
Tensor div(const Tensor &a, const Tensor &b);
Tensor pow(const Tensor &a, const Tensor &b);
/// Operands of one dtype (f32, f64, i32, i64) -> i1.
Tensor compare(Compare predicate, const Tensor &a, const Tensor &b);
/// condition i1; a and b of one dtype (any); all three broadcast.
Tensor where(const Tensor &condition, const Tensor &a, const Tensor &b);
/// Float to integer rounds toward zero; to i1 compares with zero.
Tensor cast(const Tensor &x, DType to);

/// The broadcast shape of two shapes (numpy rules); throws "shapes 4x8 and 5
/// do not broadcast: dimension ..." otherwise.
Shape broadcastShapes(const Shape &a, const Shape &b);

/// Training-mode dropout: (output, keep mask), kept elements scaled by
/// 1 / (1 - ratio). The mask is a function of where it is drawn: x is the
/// piece at `offsets` of a tensor of shape `global` (both empty: x is that
/// tensor), and the element at linear index g of that tensor is kept iff
/// uniform(hash(baseSeed(), seed, dropoutCounter(), g)) >= ratio. The
/// driver sets the counter to the training step, so that the pieces a plan
/// splits a dropout into (ranks, micro-batches) draw the single-device mask
/// between them; calls do not advance it.
std::tuple<Tensor, Tensor> dropout(const Tensor &x, double ratio, int64_t seed,
                                   const std::vector<int64_t> &global,
                                   const std::vector<int64_t> &offsets);
/// The driver's --seed: sets the base seed and resets the counter.
void setBaseSeed(int64_t seed);
int64_t baseSeed();
uint64_t dropoutCounter();
void setDropoutCounter(uint64_t counter);

/// Batched matmul, leading dims broadcast; GEMMs through BLAS for f32/f64.
Tensor matmul(const Tensor &a, const Tensor &b);
Tensor softmax(const Tensor &x, int64_t axis);
Tensor log_softmax(const Tensor &x, int64_t axis);
/// (y, mean, rstd); mean/rstd keep the leading dims and have size 1 in the
/// normalised ones. `bias` may be undefined (no bias).
std::tuple<Tensor, Tensor, Tensor> layer_norm(const Tensor &x,
                                              const Tensor &weight,
                                              const Tensor &bias, int64_t axis,
                                              double epsilon);

Tensor reduce_sum(const Tensor &x, const std::vector<int64_t> &axes,
                  bool keepdims);
Tensor reduce_mean(const Tensor &x, const std::vector<int64_t> &axes,
                   bool keepdims);
Tensor reduce_max(const Tensor &x, const std::vector<int64_t> &axes,
                  bool keepdims);

/// Shares the input's storage (a view: tensors are always contiguous).
Tensor reshape(const Tensor &x, const Shape &shape);
Tensor transpose(const Tensor &x, const std::vector<int64_t> &perm);
Tensor broadcast_to(const Tensor &x, const Shape &shape);
Tensor slice(const Tensor &x, const std::vector<int64_t> &starts,
             const std::vector<int64_t> &limits,
             const std::vector<int64_t> &steps);
std::vector<Tensor> split(const Tensor &x, int64_t axis,
                          const std::vector<int64_t> &sizes);
Tensor concat(const std::vector<Tensor> &inputs, int64_t axis);
/// The operand list of concat, as emitted code builds it: tensorList(a, b).
template <typename... Ts> std::vector<Tensor> tensorList(const Ts &...ts) {
  return std::vector<Tensor>{ts...};
}
/// As ONNX Gather; an index outside [0, size) is a runtime error naming it.
Tensor gather(const Tensor &data, const Tensor &indices, int64_t axis);

/// logits N x C, labels N (i64 or i32). Labels equal to ignoreIndex count
/// nothing; `mean` divides by the number of the others.
Tensor softmax_cross_entropy(const Tensor &logits, const Tensor &labels,
                             int64_t ignoreIndex, Reduction reduction);

// Backward ops.
Tensor softmax_grad(const Tensor &output, const Tensor &grad, int64_t axis);
Tensor log_softmax_grad(const Tensor &output, const Tensor &grad, int64_t axis);
Tensor gelu_grad(const Tensor &x, const Tensor &grad, bool tanhApproximation);
/// (dx, dweight, dbias)
std::tuple<Tensor, Tensor, Tensor>
layer_norm_grad(const Tensor &grad, const Tensor &x, const Tensor &weight,
                const Tensor &mean, const Tensor &rstd, int64_t axis);
Tensor softmax_cross_entropy_grad(const Tensor &logits, const Tensor &labels,
                                  const Tensor &grad, int64_t ignoreIndex,
                                  Reduction reduction);
/// Scatter-add of grad rows into a zero table of `tableShape` (V x C).
Tensor embedding_grad(const Tensor &grad, const Tensor &indices,
                      const Shape &tableShape);

// Optimizer updates (value style: new tensors; the inputs may be released).
// Hyperparameters are rank-0 f32 tensors so that they stay run-time values.
/// p - lr * (g + weightDecay * p)
Tensor sgd_update(const Tensor &param, const Tensor &grad, const Tensor &lr,
                  const Tensor &weightDecay);
/// torch.optim.AdamW: p *= 1 - lr*wd; m = b1 m + (1-b1) g;
/// v = b2 v + (1-b2) g^2; p -= lr * (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps)
/// with t = step (i64 rank-0, starting at 1). Returns (param, m, v).
std::tuple<Tensor, Tensor, Tensor>
adamw_update(const Tensor &param, const Tensor &grad, const Tensor &m,
             const Tensor &v, const Tensor &step, const Tensor &lr,
             const Tensor &beta1, const Tensor &beta2, const Tensor &eps,
             const Tensor &weightDecay);

/// Threads OpenBLAS may use (runMain sets 1 unless OPENBLAS_NUM_THREADS is
/// set, since emitted programs may run several MPI ranks per machine).
void setBlasThreads(int threads);

} // namespace rt
} // namespace tessera

#endif // TESSERA_RUNTIME_OPS_H
