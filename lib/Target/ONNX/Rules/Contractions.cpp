//===- Contractions.cpp - ONNX import rules: contractions, normalisations and
// reductions ---===//
//
// One function per op family; registerImportRules below maps ONNX op
// types to them (ImportRules.h says what a rule may use).
//
//===----------------------------------------------------------------------===//

#include "tessera/Target/ONNX/ConstantFolder.h"
#include "tessera/Target/ONNX/ImportRules.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"

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
  FailureOr<Value> x = cx.floatFirstInput({"axis"});
  if (failed(x))
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
  return cx.setOutput(0, cx.reshapeTo(op->getResult(), xt.getShape()));
}

template <typename OpTy> LogicalResult importReduce(ImportContext &cx) {
  FailureOr<Value> x =
      cx.floatFirstInput({"axes", "keepdims", "noop_with_empty_axes"});
  if (failed(x))
    return failure();
  auto xt = cx.typeOf(*x);
  int64_t rank = xt.getRank();
  bool given;
  FailureOr<std::vector<int64_t>> axesOr = cx.axesOperand(given);
  if (failed(axesOr))
    return failure();
  std::vector<int64_t> axes = std::move(*axesOr);
  if (axes.empty()) {
    if (cx.attrInt("noop_with_empty_axes", 0))
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

/// The subscripts of one einsum operand: a label per dimension (letters,
/// and 256 + i for the i-th dimension an ellipsis stands for, counted from
/// the right so that ellipses broadcast as in numpy).
using Labels = SmallVector<int>;

FailureOr<Labels> parseLabels(ImportContext &cx, StringRef term, int64_t rank,
                              int64_t &ellipsisDims) {
  Labels labels;
  size_t dots = term.find("...");
  StringRef before = dots == StringRef::npos ? term : term.take_front(dots);
  StringRef after =
      dots == StringRef::npos ? StringRef() : term.drop_front(dots + 3);
  for (StringRef part : {before, after})
    for (char ch : part)
      if (!llvm::isAlpha(ch))
        return cx.err() << "invalid subscript '" << ch << "' in equation";
  int64_t letters = static_cast<int64_t>(before.size() + after.size());
  if (dots == StringRef::npos) {
    if (rank >= 0 && letters != rank)
      return cx.err() << "subscripts '" << term << "' name " << letters
                      << " dimensions of an operand of rank " << rank;
    ellipsisDims = 0;
  } else {
    if (rank >= 0) {
      if (letters > rank)
        return cx.err() << "subscripts '" << term << "' name more dimensions "
                        << "than the operand's rank " << rank;
      ellipsisDims = rank - letters;
    }
  }
  for (char ch : before)
    labels.push_back(ch);
  for (int64_t i = 0; i < ellipsisDims; ++i)
    labels.push_back(256 + static_cast<int>(ellipsisDims - 1 - i));
  for (char ch : after)
    labels.push_back(ch);
  return labels;
}

/// Einsum of one or two float operands, as transposes, reshapes, sums and
/// one (batched) matmul: the forms torch exports for torch.outer, bmm and
/// the usual attention contractions. Repeated subscripts in one operand
/// (diagonals) and three or more operands are rejected.
LogicalResult importEinsum(ImportContext &cx) {
  if (failed(cx.checkAttributes({"equation"})))
    return failure();
  std::string eq;
  for (char ch : cx.attrString("equation", ""))
    if (ch != ' ')
      eq += ch;
  StringRef equation(eq);
  auto [lhs, rhs] = equation.split("->");
  bool explicitOut = equation.contains("->");
  SmallVector<StringRef> terms;
  lhs.split(terms, ',');
  size_t n = cx.node->inputs.size();
  if (terms.size() != n)
    return cx.err() << "the equation '" << eq << "' has " << terms.size()
                    << " operand terms for " << n << " inputs";
  if (n < 1 || n > 2)
    return cx.err() << "einsum of " << n
                    << " operands is not supported (one or two)";
  SmallVector<Value> xs;
  SmallVector<Labels> ins;
  int64_t maxEllipsis = 0;
  for (size_t i = 0; i < n; ++i) {
    FailureOr<Value> x = cx.input(i);
    if (failed(x) || failed(cx.requireFloat(*x, "operand")))
      return failure();
    int64_t ell = 0;
    FailureOr<Labels> l =
        parseLabels(cx, terms[i], cx.typeOf(*x).getRank(), ell);
    if (failed(l))
      return failure();
    maxEllipsis = std::max(maxEllipsis, ell);
    Labels seen;
    for (int label : *l) {
      if (llvm::is_contained(seen, label))
        return cx.err() << "repeated subscript '" << char(label)
                        << "' in one operand (a diagonal) is not supported";
      seen.push_back(label);
    }
    xs.push_back(*x);
    ins.push_back(*l);
  }
  // The output's labels: as written, else the ellipsis then every letter
  // that appears once, in alphabetical order.
  Labels out;
  if (explicitOut) {
    int64_t ell = maxEllipsis;
    FailureOr<Labels> l = parseLabels(cx, rhs, -1, ell);
    if (failed(l))
      return failure();
    out = *l;
  } else {
    for (int64_t i = 0; i < maxEllipsis; ++i)
      out.push_back(256 + static_cast<int>(maxEllipsis - 1 - i));
    for (int ch = 'A'; ch <= 'z'; ++ch) {
      int count = 0;
      for (const Labels &l : ins)
        count += llvm::count(l, ch);
      if (count == 1)
        out.push_back(ch);
    }
  }
  // Sizes agree between operands.
  llvm::DenseMap<int, int64_t> size;
  for (size_t i = 0; i < n; ++i)
    for (auto [d, label] : llvm::enumerate(ins[i])) {
      int64_t s = cx.typeOf(xs[i]).getDimSize(d);
      auto [it, inserted] = size.try_emplace(label, s);
      if (!inserted && it->second != s)
        return cx.err() << "subscript sizes disagree (" << it->second << " and "
                        << s << "); broadcasting is not supported";
    }
  for (int label : out)
    if (!size.count(label))
      return cx.err() << "output subscript '" << char(label)
                      << "' names no input dimension";
  auto inLabels = [&](const Labels &l, int label) {
    return llvm::is_contained(l, label);
  };
  // Sum each operand over the labels no one else needs.
  for (size_t i = 0; i < n; ++i) {
    SmallVector<int64_t> axes;
    Labels kept;
    for (auto [d, label] : llvm::enumerate(ins[i])) {
      bool needed =
          inLabels(out, label) || (n == 2 && inLabels(ins[1 - i], label));
      if (needed)
        kept.push_back(label);
      else
        axes.push_back(static_cast<int64_t>(d));
    }
    if (axes.empty())
      continue;
    FailureOr<Value> summed = cx.reduce<tsr::ReduceSumOp>(xs[i], axes, false);
    if (failed(summed))
      return failure();
    xs[i] = *summed;
    ins[i] = kept;
  }
  auto permuteTo = [&](Value v, const Labels &from,
                       const Labels &to) -> FailureOr<Value> {
    SmallVector<int64_t> perm;
    for (int label : to)
      perm.push_back(llvm::find(from, label) - from.begin());
    bool identity = true;
    for (auto [i, p] : llvm::enumerate(perm))
      identity &= p == static_cast<int64_t>(i);
    return identity ? FailureOr<Value>(v) : cx.transpose(v, perm);
  };
  auto sizes = [&](const Labels &l) {
    SmallVector<int64_t> s;
    for (int label : l)
      s.push_back(size[label]);
    return s;
  };
  Value result;
  Labels resultLabels;
  if (n == 1) {
    result = xs[0];
    resultLabels = ins[0];
  } else {
    Labels batch, left, contracted, right;
    for (int label : ins[0]) {
      bool inB = inLabels(ins[1], label), inOut = inLabels(out, label);
      if (inB && inOut)
        batch.push_back(label);
      else if (inB)
        contracted.push_back(label);
      else
        left.push_back(label);
    }
    for (int label : ins[1])
      if (!inLabels(ins[0], label))
        right.push_back(label);
    auto concat = [](std::initializer_list<const Labels *> parts) {
      Labels all;
      for (const Labels *p : parts)
        all.append(p->begin(), p->end());
      return all;
    };
    int64_t b = product(sizes(batch)), l = product(sizes(left)),
            c = product(sizes(contracted)), r = product(sizes(right));
    FailureOr<Value> a =
        permuteTo(xs[0], ins[0], concat({&batch, &left, &contracted}));
    FailureOr<Value> bv =
        permuteTo(xs[1], ins[1], concat({&batch, &contracted, &right}));
    if (failed(a) || failed(bv))
      return failure();
    SmallVector<int64_t> aShape{l, c}, bShape{c, r};
    if (!batch.empty()) {
      aShape.insert(aShape.begin(), b);
      bShape.insert(bShape.begin(), b);
    }
    a = cx.reshapeTo(*a, aShape);
    bv = cx.reshapeTo(*bv, bShape);
    if (failed(a) || failed(bv))
      return failure();
    FailureOr<Value> m = cx.binary<tsr::MatmulOp>(*a, *bv);
    if (failed(m))
      return failure();
    resultLabels = concat({&batch, &left, &right});
    FailureOr<Value> shaped = cx.reshapeTo(*m, sizes(resultLabels));
    if (failed(shaped))
      return failure();
    result = *shaped;
  }
  return cx.setOutput(0, permuteTo(result, resultLabels, out));
}

} // namespace

void registerContractionImportRules(ImportRuleRegistry &r) {
  r.add("MatMul", importMatMul);
  r.add("Gemm", importGemm);
  r.add("Einsum", importEinsum, 12);
  r.add("LayerNormalization", importLayerNorm);
  r.add("Softmax", importSoftmax<tsr::SoftmaxOp>);
  r.add("LogSoftmax", importSoftmax<tsr::LogSoftmaxOp>);
  r.add("ReduceMean", importReduce<tsr::ReduceMeanOp>);
  r.add("ReduceSum", importReduce<tsr::ReduceSumOp>);
  r.add("ReduceMax", importReduce<tsr::ReduceMaxOp>);
}

} // namespace tessera::onnx_import
