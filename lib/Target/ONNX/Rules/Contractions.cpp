//===- Contractions.cpp - ONNX import rules: contractions, normalisations and
// reductions ---===//
//
// One function per op family; registerImportRules below maps ONNX op
// types to them (ImportRules.h says what a rule may use).
//
//===----------------------------------------------------------------------===//

#include "tessera/Target/ONNX/ConstantFolder.h"
#include "tessera/Target/ONNX/ImportRules.h"

#include <cmath>

namespace tessera::onnx_import {
namespace {

LogicalResult importMatMul(ImportContext &cx) {
  if (failed(cx.checkAttributes({})))
    return failure();
  FailureOr<Value> a = cx.input(0), bv = cx.input(1);
  if (failed(a) || failed(bv) || failed(cx.requireFloat(*a, "input A")) ||
      failed(cx.requireFloat(*bv, "input B")))
    return failure();
  // tsr.matmul needs rank >= 2: promote 1-D operands as numpy does, and
  // drop the added dimension afterwards.
  Value lhs = *a, rhs = *bv;
  auto la = cx.typeOf(lhs).getShape(), rb = cx.typeOf(rhs).getShape();
  bool vecL = la.size() == 1, vecR = rb.size() == 1;
  if (la.empty() || rb.empty())
    return cx.err() << "MatMul operands must have rank >= 1";
  if (vecL) {
    FailureOr<Value> r = cx.reshapeTo(lhs, {1, la[0]});
    if (failed(r))
      return failure();
    lhs = *r;
  }
  if (vecR) {
    FailureOr<Value> r = cx.reshapeTo(rhs, {rb[0], 1});
    if (failed(r))
      return failure();
    rhs = *r;
  }
  FailureOr<Value> m = cx.binary<tsr::MatmulOp>(lhs, rhs);
  if (failed(m))
    return failure();
  Value res = *m;
  if (vecL || vecR) {
    SmallVector<int64_t> shape(cx.typeOf(res).getShape());
    if (vecR)
      shape.pop_back();
    if (vecL)
      shape.erase(shape.end() - (vecR ? 1 : 2));
    FailureOr<Value> r = cx.reshapeTo(res, shape);
    if (failed(r))
      return failure();
    res = *r;
  }
  return cx.setOutput(0, res);
}

LogicalResult importGemm(ImportContext &cx) {
  if (failed(cx.checkAttributes({"alpha", "beta", "transA", "transB"})))
    return failure();
  FailureOr<Value> a = cx.input(0), bv = cx.input(1);
  if (failed(a) || failed(bv) || failed(cx.requireFloat(*a, "input A")) ||
      failed(cx.requireFloat(*bv, "input B")))
    return failure();
  if (cx.typeOf(*a).getRank() != 2 || cx.typeOf(*bv).getRank() != 2)
    return cx.err() << "Gemm operands must be matrices";
  Value lhs = *a, rhs = *bv;
  if (cx.attrInt("transA", 0)) {
    FailureOr<Value> t = cx.transpose(lhs, {1, 0});
    if (failed(t))
      return failure();
    lhs = *t;
  }
  if (cx.attrInt("transB", 0)) {
    FailureOr<Value> t = cx.transpose(rhs, {1, 0});
    if (failed(t))
      return failure();
    rhs = *t;
  }
  Type elem = cx.typeOf(lhs).getElementType();
  FailureOr<Value> y = cx.binary<tsr::MatmulOp>(lhs, rhs);
  if (failed(y))
    return failure();
  double alpha = cx.attrFloat("alpha", 1.0), beta = cx.attrFloat("beta", 1.0);
  if (alpha != 1.0) {
    FailureOr<Value> s = cx.scalarConstant(alpha, elem);
    y = cx.binary<tsr::MulOp>(*y, *s);
    if (failed(y))
      return failure();
  }
  if (cx.hasInput(2) && beta != 0.0) {
    FailureOr<Value> c = cx.input(2);
    if (failed(c))
      return failure();
    Value cv = *c;
    if (beta != 1.0) {
      FailureOr<Value> s = cx.scalarConstant(beta, elem);
      FailureOr<Value> scaled = cx.binary<tsr::MulOp>(cv, *s);
      if (failed(scaled))
        return failure();
      cv = *scaled;
    }
    y = cx.binary<tsr::AddOp>(*y, cv);
    if (failed(y))
      return failure();
  }
  return cx.setOutput(0, *y);
}

LogicalResult importLayerNorm(ImportContext &cx) {
  if (failed(cx.checkAttributes({"axis", "epsilon", "stash_type"})))
    return failure();
  if (cx.attrInt("stash_type", 1) != 1)
    return cx.err() << "unsupported value " << cx.attrInt("stash_type", 1)
                    << " of attribute 'stash_type' (only 1, float)";
  FailureOr<Value> x = cx.input(0), scale = cx.input(1);
  if (failed(x) || failed(scale) || failed(cx.requireFloat(*x, "input X")))
    return failure();
  auto xt = cx.typeOf(*x);
  FailureOr<int64_t> axis =
      cx.normalizeAxis(cx.attrInt("axis", -1), xt.getRank());
  if (failed(axis))
    return failure();
  // tsr wants weight and bias of exactly the normalised shape; ONNX allows
  // anything that broadcasts to it.
  ArrayRef<int64_t> normShape = xt.getShape().drop_front(*axis);
  auto toNormShape = [&](Value v) -> FailureOr<Value> {
    if (cx.typeOf(v).getShape() == normShape)
      return v;
    std::vector<int64_t> out,
        vs(cx.typeOf(v).getShape().begin(), cx.typeOf(v).getShape().end()),
        ns(normShape.begin(), normShape.end());
    if (!broadcastShapes(vs, ns, out) || out != ns)
      return cx.err() << "scale/bias shape " << shapeString(vs)
                      << " does not broadcast to the normalised shape "
                      << shapeString(ns);
    auto op = cx.createTyped<tsr::BroadcastToOp>(
        cx.tensorOf(normShape, cx.typeOf(v).getElementType()), v);
    if (failed(op))
      return failure();
    return op->getResult();
  };
  FailureOr<Value> w = toNormShape(*scale);
  if (failed(w))
    return failure();
  Value bias;
  if (cx.hasInput(2)) {
    FailureOr<Value> bv = cx.input(2);
    if (failed(bv))
      return failure();
    FailureOr<Value> bn = toNormShape(*bv);
    if (failed(bn))
      return failure();
    bias = *bn;
  }
  // ONNX's epsilon is a float32 attribute; keep its exact value.
  double eps = static_cast<float>(cx.attrFloat("epsilon", 1e-5));
  // NaN or infinity (also a float32 overflow) would make every output NaN
  // or zero; a negative epsilon is the verifier's to report.
  if (!std::isfinite(eps))
    return cx.err() << "attribute 'epsilon' must be finite, got "
                    << (std::isnan(eps) ? "NaN"
                        : eps > 0       ? "infinity"
                                        : "-infinity");
  auto op = cx.createInferred<tsr::LayerNormOp>(3, *x, *w, bias,
                                                cx.b.getI64IntegerAttr(*axis),
                                                cx.b.getF64FloatAttr(eps));
  if (failed(op))
    return failure();
  if (failed(cx.setOutput(0, op->getResult())) ||
      failed(cx.setOutput(1, op->getMean())) ||
      failed(cx.setOutput(2, op->getRstd())))
    return failure();
  return success();
}

template <typename OpTy> LogicalResult importSoftmax(ImportContext &cx) {
  if (failed(cx.checkAttributes({"axis"})))
    return failure();
  FailureOr<Value> x = cx.input(0);
  if (failed(x) || failed(cx.requireFloat(*x, "the input")))
    return failure();
  auto xt = cx.typeOf(*x);
  int64_t rank = xt.getRank();
  if (rank == 0)
    return cx.err() << "the input must have rank >= 1";
  // Opset 13 changed both the default axis and the meaning: before it the
  // input is flattened to 2-D at `axis` and normalised over the second
  // dimension.
  bool legacy = cx.opset < 13;
  FailureOr<int64_t> axis =
      cx.normalizeAxis(cx.attrInt("axis", legacy ? 1 : -1), rank);
  if (failed(axis))
    return failure();
  if (!legacy || *axis == rank - 1) {
    auto op = cx.createTyped<OpTy>(xt, *x, cx.b.getI64IntegerAttr(*axis));
    if (failed(op))
      return failure();
    return cx.setOutput(0, op->getResult());
  }
  int64_t outer = product(xt.getShape().take_front(*axis));
  int64_t inner = product(xt.getShape().drop_front(*axis));
  FailureOr<Value> flat = cx.reshapeTo(*x, {outer, inner});
  if (failed(flat))
    return failure();
  auto op =
      cx.createTyped<OpTy>(cx.typeOf(*flat), *flat, cx.b.getI64IntegerAttr(1));
  if (failed(op))
    return failure();
  FailureOr<Value> back = cx.reshapeTo(op->getResult(), xt.getShape());
  if (failed(back))
    return failure();
  return cx.setOutput(0, *back);
}

template <typename OpTy> LogicalResult importReduce(ImportContext &cx) {
  if (failed(cx.checkAttributes({"axes", "keepdims", "noop_with_empty_axes"})))
    return failure();
  FailureOr<Value> x = cx.input(0);
  if (failed(x) || failed(cx.requireFloat(*x, "the input")))
    return failure();
  auto xt = cx.typeOf(*x);
  int64_t rank = xt.getRank();
  std::vector<int64_t> axes;
  bool given = false;
  if (cx.hasInput(1)) {
    FailureOr<std::vector<int64_t>> a = cx.constInts(1, "axes");
    if (failed(a))
      return failure();
    axes = *a;
    given = true;
  } else if (auto a = cx.attrInts("axes")) {
    axes = *a;
    given = true;
  }
  if (axes.empty()) {
    if (given && cx.attrInt("noop_with_empty_axes", 0))
      return cx.setOutput(0, *x);
    if (!given && cx.attrInt("noop_with_empty_axes", 0))
      return cx.setOutput(0, *x);
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  }
  if (axes.empty()) // rank 0: nothing to reduce
    return cx.setOutput(0, *x);
  SmallVector<int64_t> norm;
  for (int64_t a : axes) {
    FailureOr<int64_t> n = cx.normalizeAxis(a, rank, "reduction axis");
    if (failed(n))
      return failure();
    norm.push_back(*n);
  }
  llvm::sort(norm);
  auto op =
      cx.createInferred<OpTy>(1, *x, cx.b.getDenseI64ArrayAttr(norm),
                              cx.b.getBoolAttr(cx.attrInt("keepdims", 1) != 0));
  if (failed(op))
    return failure();
  return cx.setOutput(0, op->getResult());
}

} // namespace

void registerContractionImportRules(ImportRuleRegistry &r) {
  r.add("MatMul", importMatMul);
  r.add("Gemm", importGemm);
  r.add("LayerNormalization", importLayerNorm);
  r.add("Softmax", importSoftmax<tsr::SoftmaxOp>);
  r.add("LogSoftmax", importSoftmax<tsr::LogSoftmaxOp>);
  r.add("ReduceMean", importReduce<tsr::ReduceMeanOp>);
  r.add("ReduceSum", importReduce<tsr::ReduceSumOp>);
  r.add("ReduceMax", importReduce<tsr::ReduceMaxOp>);
}

} // namespace tessera::onnx_import
