//===- Operands.cpp - the llm kernels' operand checks ---------------------===//

#include "Operands.h"

namespace tessera::rt::llm::detail {

void fail(const char *op, const std::string &what) {
  throw Error(std::string(op) + ": " + what);
}

void requireFloat(const Tensor &t, const char *op) {
  if (!t.defined())
    fail(op, "an operand is undefined");
  if (t.dtype() != DType::f32 && t.dtype() != DType::f64)
    fail(op, std::string("expected f32 or f64 tensors, got ") +
                 dtypeName(t.dtype()));
}

namespace {

void requireShape(const Tensor &b, const Shape &shape, DType dtype,
                  const char *op, const char *what) {
  if (!b.defined())
    fail(op, "an operand is undefined");
  if (b.shape() != shape || b.dtype() != dtype)
    fail(op, std::string(what) + " is " + shapeToString(b.shape()) + " " +
                 dtypeName(b.dtype()) + ", expected " + shapeToString(shape) +
                 " " + dtypeName(dtype));
}

void requireLike(const Tensor &a, const Tensor &b, const char *op,
                 const char *what) {
  requireShape(b, a.shape(), a.dtype(), op, what);
}

} // namespace

Shape rowStatShape(const Tensor &x) {
  Shape s = x.shape();
  s.back() = 1;
  return s;
}

Rows rmsNormOperands(const Tensor &x, const Tensor &weight, const char *op) {
  requireFloat(x, op);
  if (!weight.defined())
    fail(op, "an operand is undefined");
  if (x.rank() < 1)
    fail(op, "the input must have rank >= 1");
  int64_t d = x.dim(x.rank() - 1);
  if (weight.shape() != Shape{d} || weight.dtype() != x.dtype())
    fail(op, "weight is " + shapeToString(weight.shape()) + " " +
                 dtypeName(weight.dtype()) + ", expected [" +
                 std::to_string(d) + "] " + dtypeName(x.dtype()));
  return {d ? x.numel() / d : 0, d};
}

Rows rmsNormGradOperands(const Tensor &grad, const Tensor &x,
                         const Tensor &weight, const Tensor &rstd,
                         const char *op) {
  Rows rows = rmsNormOperands(x, weight, op);
  requireLike(x, grad, op, "grad");
  if (!rstd.defined())
    fail(op, "an operand is undefined");
  if (rstd.shape() != rowStatShape(x) || rstd.dtype() != x.dtype())
    fail(op, "rstd is " + shapeToString(rstd.shape()) + ", expected " +
                 shapeToString(rowStatShape(x)));
  return rows;
}

void swigluOperands(const Tensor &gate, const Tensor &up, const char *op) {
  requireFloat(gate, op);
  requireLike(gate, up, op, "up");
}

RopeDims ropeOperands(const Tensor &x, const Tensor &cos, const Tensor &sin,
                      const char *op) {
  requireFloat(x, op);
  if (x.rank() < 2)
    fail(op, "the input must have rank >= 2, got " + shapeToString(x.shape()));
  int64_t t = x.dim(x.rank() - 2), d = x.dim(x.rank() - 1);
  if (d % 2)
    fail(op, "the last dimension must be even, got " + std::to_string(d));
  requireShape(cos, Shape{t, d}, x.dtype(), op, "cos");
  requireShape(sin, Shape{t, d}, x.dtype(), op, "sin");
  return {t * d != 0 ? x.numel() / (t * d) : 0, t, d};
}

RopeDims ropeTablesOperands(const Shape &shape, DType dtype, const char *op) {
  if (shape.size() != 2 || shape[1] % 2)
    fail(op, "the tables' shape must be [t, d] with d even, got " +
                 shapeToString(shape));
  if (dtype != DType::f32 && dtype != DType::f64)
    fail(op,
         std::string("expected f32 or f64 tensors, got ") + dtypeName(dtype));
  return {1, shape[0], shape[1]};
}

RepeatKv repeatKvOperands(const Tensor &x, int64_t repeats, const char *op) {
  if (!x.defined())
    fail(op, "an operand is undefined");
  if (x.rank() < 3 || repeats < 1)
    fail(op, "expected [.., h, t, d] and repeats >= 1, got " +
                 shapeToString(x.shape()) + " and " + std::to_string(repeats));
  RepeatKv r;
  r.out = x.shape();
  r.out[r.out.size() - 3] *= repeats;
  r.blockElems = x.dim(x.rank() - 2) * x.dim(x.rank() - 1);
  r.blocks = r.blockElems ? x.numel() / r.blockElems : 0;
  return r;
}

AttentionDims attentionOperands(const Tensor &q, const Tensor &k,
                                const Tensor &v, bool causal, const char *op) {
  requireFloat(q, op);
  if (!k.defined() || !v.defined())
    fail(op, "an operand is undefined");
  if (q.rank() < 2)
    fail(op, "the query must have rank >= 2, got " + shapeToString(q.shape()));
  int64_t r = q.rank();
  AttentionDims dims;
  dims.t = q.dim(r - 2);
  dims.d = q.dim(r - 1);
  dims.s = k.rank() == r ? k.dim(r - 2) : 0;
  dims.e = v.rank() == r ? v.dim(r - 1) : 0;
  Shape lead(q.shape().begin(), q.shape().end() - 2);
  auto with = [&](int64_t a, int64_t b) {
    Shape s = lead;
    s.push_back(a);
    s.push_back(b);
    return s;
  };
  requireShape(k, with(dims.s, dims.d), q.dtype(), op, "key");
  requireShape(v, with(dims.s, dims.e), q.dtype(), op, "value");
  if (causal && dims.s != dims.t)
    fail(op, "a causal attention needs as many keys as queries, got " +
                 std::to_string(dims.s) + " and " + std::to_string(dims.t));
  dims.slices = 1;
  for (int64_t x : lead)
    dims.slices *= x;
  return dims;
}

Shape attentionResultShape(const Tensor &q, const AttentionDims &dims) {
  Shape s = q.shape();
  s.back() = dims.e;
  return s;
}

AttentionDims attentionGradOperands(const Tensor &grad, const Tensor &q,
                                    const Tensor &k, const Tensor &v,
                                    const Tensor &y, const Tensor &lse,
                                    bool causal, const char *op) {
  AttentionDims dims = attentionOperands(q, k, v, causal, op);
  Shape out = attentionResultShape(q, dims);
  requireShape(grad, out, q.dtype(), op, "grad");
  requireShape(y, out, q.dtype(), op, "the forward's result");
  requireShape(lse, rowStatShape(q), q.dtype(), op, "lse");
  return dims;
}

} // namespace tessera::rt::llm::detail
