//===- Raise.cpp - the subgraphs that become llm ops ----------------------===//
//
// Patterns over what the ONNX importer produces for PyTorch code written the
// usual way (torch 1.13, opset 17), applied by the core's tsr-raise pass
// through RaisePatternInterface:
//
//   x * sigmoid(x)                                  -> llm.silu (F.silu)
//   silu(g) * u                                     -> llm.swiglu
//   x * (1 / sqrt(mean(x^2, -1) + eps)) * w         -> llm.rms_norm
//     (or rsqrt; x*x for the square; any operand order)
//   x * cos + cat(-x[.., d/2:], x[.., :d/2]) * sin  -> llm.rope
//     (Hugging Face's rotate_half)
//   reshape(expand(x[:, :, None]))                  -> llm.repeat_kv
//   softmax(q @ k^T * c + causal mask) @ v          -> llm.attention
//     (c: a constant factor, a constant divisor, or none; the mask a
//     constant: where(triu, -inf, s), where(tril, s, -inf) or s + triu(-inf);
//     no mask: non-causal)
//
// Each pattern replaces only the subgraph's root; intermediate values used
// elsewhere stay (and dead ones are erased by the driver).
//
//===----------------------------------------------------------------------===//

#include "tessera/llm/Raise.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/llm/IR/LlmOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace tessera;
using namespace tessera::llm;

namespace {

/// f32 or f64 elements (the llm ops' tensors).
bool isLlmFloat(Type t) {
  auto tt = dyn_cast<RankedTensorType>(t);
  return tt && tt.hasStaticShape() &&
         (tt.getElementType().isF32() || tt.getElementType().isF64());
}

/// The value of a splat float constant (any shape), if `v` is one.
std::optional<double> splatValue(Value v) {
  auto c = v.getDefiningOp<tsr::ConstantOp>();
  if (!c)
    return std::nullopt;
  auto dense = dyn_cast<DenseFPElementsAttr>(c.getValue());
  if (!dense || !dense.isSplat())
    return std::nullopt;
  return dense.getSplatValue<APFloat>().convertToDouble();
}

/// The other operand of a binary op when one is `v`, or null.
template <typename OpT> Value otherOperand(OpT op, Value v) {
  if (op.getLhs() == v)
    return op.getRhs();
  if (op.getRhs() == v)
    return op.getLhs();
  return Value();
}

/// x * sigmoid(x) -> silu(x).
struct RaiseSilu : OpRewritePattern<tsr::MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tsr::MulOp op,
                                PatternRewriter &rewriter) const override {
    for (Value s : {op.getLhs(), op.getRhs()}) {
      auto sigmoid = s.getDefiningOp<tsr::SigmoidOp>();
      if (!sigmoid)
        continue;
      Value x = sigmoid.getInput();
      if (otherOperand(op, s) != x || x.getType() != op.getType() ||
          !isLlmFloat(x.getType()))
        continue;
      rewriter.replaceOpWithNewOp<SiluOp>(op, x);
      return success();
    }
    return failure();
  }
};

/// silu(g) * u -> swiglu(g, u), when silu(g) is used only here.
struct RaiseSwiglu : OpRewritePattern<tsr::MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tsr::MulOp op,
                                PatternRewriter &rewriter) const override {
    for (Value s : {op.getLhs(), op.getRhs()}) {
      auto silu = s.getDefiningOp<SiluOp>();
      if (!silu || !s.hasOneUse())
        continue;
      Value up = otherOperand(op, s);
      if (up.getType() != op.getType() || s.getType() != op.getType())
        continue;
      rewriter.replaceOpWithNewOp<SwigluOp>(op, silu.getInput(), up);
      return success();
    }
    return failure();
  }
};

/// If `r` is 1 / sqrt(mean(x^2 over the last dimension, kept) + eps),
/// returns x and sets eps.
Value matchRstd(Value r, double &eps) {
  Value denom;
  if (auto rsqrt = r.getDefiningOp<tsr::RsqrtOp>()) {
    denom = rsqrt.getInput();
  } else if (auto div = r.getDefiningOp<tsr::DivOp>()) {
    auto sqrt = div.getRhs().getDefiningOp<tsr::SqrtOp>();
    if (!sqrt || splatValue(div.getLhs()) != 1.0)
      return Value();
    denom = sqrt.getInput();
  } else {
    return Value();
  }
  auto add = denom.getDefiningOp<tsr::AddOp>();
  if (!add)
    return Value();
  for (Value m : {add.getLhs(), add.getRhs()}) {
    auto mean = m.getDefiningOp<tsr::ReduceMeanOp>();
    std::optional<double> e = splatValue(otherOperand(add, m));
    if (!mean || !e || !mean.getKeepdims())
      continue;
    auto in = mean.getInput().getType();
    if (mean.getAxes() != ArrayRef<int64_t>{in.getRank() - 1})
      continue;
    Value sq = mean.getInput(), x;
    if (auto pow = sq.getDefiningOp<tsr::PowOp>()) {
      if (splatValue(pow.getRhs()) == 2.0)
        x = pow.getLhs();
    } else if (auto mul = sq.getDefiningOp<tsr::MulOp>()) {
      if (mul.getLhs() == mul.getRhs())
        x = mul.getLhs();
    }
    if (!x || x.getType() != sq.getType())
      continue;
    eps = *e;
    return x;
  }
  return Value();
}

/// (x * rstd(x)) * w -> rms_norm(x, w)#0, in any operand order.
struct RaiseRmsNorm : OpRewritePattern<tsr::MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tsr::MulOp op,
                                PatternRewriter &rewriter) const override {
    for (Value n : {op.getLhs(), op.getRhs()}) {
      auto inner = n.getDefiningOp<tsr::MulOp>();
      if (!inner)
        continue;
      Value w = otherOperand(op, n);
      for (Value r : {inner.getLhs(), inner.getRhs()}) {
        double eps = 0;
        Value x = matchRstd(r, eps);
        if (!x || otherOperand(inner, r) != x || x.getType() != op.getType() ||
            !isLlmFloat(x.getType()) || eps < 0)
          continue;
        auto xt = cast<RankedTensorType>(x.getType());
        auto wt = cast<RankedTensorType>(w.getType());
        if (wt.getRank() != 1 || wt.getDimSize(0) != xt.getShape().back() ||
            wt.getElementType() != xt.getElementType())
          continue;
        auto norm = RmsNormOp::create(rewriter, op.getLoc(), x, w,
                                      rewriter.getF64FloatAttr(eps));
        rewriter.replaceOp(op, norm.getResult());
        return success();
      }
    }
    return failure();
  }
};

/// Whether `s` takes x[.., begin:end] of the last dimension, whole
/// elsewhere.
bool isLastDimSlice(tsr::SliceOp s, Value x, int64_t begin, int64_t end) {
  if (s.getInput() != x)
    return false;
  auto shape = cast<RankedTensorType>(x.getType()).getShape();
  int64_t last = shape.size() - 1;
  for (int64_t i = 0; i <= last; ++i) {
    int64_t b = i == last ? begin : 0, e = i == last ? end : shape[i];
    if (s.getStarts()[i] != b || s.getLimits()[i] != e || s.getSteps()[i] != 1)
      return false;
  }
  return true;
}

/// Whether `v` is rotate_half(x) = cat(-x[.., d/2:], x[.., :d/2]).
bool isRotateHalf(Value v, Value x) {
  auto cat = v.getDefiningOp<tsr::ConcatOp>();
  auto xt = cast<RankedTensorType>(x.getType());
  if (!cat || cat.getInputs().size() != 2 || v.getType() != xt ||
      int64_t(cat.getAxis()) != xt.getRank() - 1)
    return false;
  int64_t d = xt.getShape().back(), half = d / 2;
  auto neg = cat.getInputs()[0].getDefiningOp<tsr::NegOp>();
  auto lo = cat.getInputs()[1].getDefiningOp<tsr::SliceOp>();
  auto hi = neg ? neg.getInput().getDefiningOp<tsr::SliceOp>() : nullptr;
  return d % 2 == 0 && lo && hi && isLastDimSlice(lo, x, 0, half) &&
         isLastDimSlice(hi, x, half, d);
}

/// A table broadcast against x [.., t, d] as [t, d] (a reshape when it has
/// leading ones), or null.
Value asTable(PatternRewriter &rewriter, Location loc, Value table,
              RankedTensorType x) {
  auto tt = dyn_cast<RankedTensorType>(table.getType());
  if (!tt || tt.getElementType() != x.getElementType() || tt.getRank() < 2 ||
      tt.getRank() > x.getRank())
    return Value();
  ArrayRef<int64_t> shape = tt.getShape();
  ArrayRef<int64_t> want = x.getShape().take_back(2);
  if (shape.take_back(2) != want ||
      llvm::any_of(shape.drop_back(2), [](int64_t s) { return s != 1; }))
    return Value();
  if (tt.getRank() == 2)
    return table;
  return tsr::ReshapeOp::create(
      rewriter, loc, RankedTensorType::get(want, tt.getElementType()), table);
}

/// x * cos + rotate_half(x) * sin -> rope(x, cos, sin).
struct RaiseRope : OpRewritePattern<tsr::AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tsr::AddOp op,
                                PatternRewriter &rewriter) const override {
    auto lhs = op.getLhs().getDefiningOp<tsr::MulOp>();
    auto rhs = op.getRhs().getDefiningOp<tsr::MulOp>();
    if (!lhs || !rhs || !isLlmFloat(op.getType()))
      return failure();
    auto type = cast<RankedTensorType>(op.getType());
    if (type.getRank() < 2)
      return failure();
    for (auto [direct, rotated] : {std::pair{lhs, rhs}, std::pair{rhs, lhs}})
      for (Value x : {direct.getLhs(), direct.getRhs()}) {
        if (x.getType() != type)
          continue;
        Value cos = otherOperand(direct, x);
        for (Value rot : {rotated.getLhs(), rotated.getRhs()}) {
          if (!isRotateHalf(rot, x))
            continue;
          Value sin = otherOperand(rotated, rot);
          if (cos.getType() != sin.getType())
            continue;
          Value c = asTable(rewriter, op.getLoc(), cos, type);
          Value s = c ? asTable(rewriter, op.getLoc(), sin, type) : Value();
          if (!c || !s)
            continue;
          rewriter.replaceOpWithNewOp<RopeOp>(op, x, c, s);
          return success();
        }
      }
    return failure();
  }
};

/// reshape(broadcast_to(reshape(x [.., h, t, d] -> [.., h, 1, t, d])
/// -> [.., h, n, t, d]) -> [.., h * n, t, d]) -> repeat_kv(x, n).
struct RaiseRepeatKv : OpRewritePattern<tsr::ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tsr::ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    auto bcast = op.getInput().getDefiningOp<tsr::BroadcastToOp>();
    auto unsq =
        bcast ? bcast.getInput().getDefiningOp<tsr::ReshapeOp>() : nullptr;
    if (!unsq)
      return failure();
    Value x = unsq.getInput();
    auto xt = cast<RankedTensorType>(x.getType());
    auto bt = cast<RankedTensorType>(bcast.getType());
    if (!isLlmFloat(xt) || xt.getRank() < 3)
      return failure();
    int64_t h = xt.getRank() - 3; // the heads dimension
    SmallVector<int64_t> inserted(xt.getShape());
    inserted.insert(inserted.begin() + h + 1, 1);
    if (unsq.getType().getShape() != ArrayRef<int64_t>(inserted))
      return failure();
    int64_t n = bt.getShape()[h + 1];
    inserted[h + 1] = n;
    if (bt.getShape() != ArrayRef<int64_t>(inserted))
      return failure();
    SmallVector<int64_t> merged(xt.getShape());
    merged[h] *= n;
    if (op.getType().getShape() != ArrayRef<int64_t>(merged))
      return failure();
    rewriter.replaceOpWithNewOp<RepeatKvOp>(op, op.getType(), x,
                                            rewriter.getI64IntegerAttr(n));
    return success();
  }
};

/// The value of a constant [t, s] mask (after leading ones), or null.
DenseElementsAttr maskConstant(Value mask, int64_t t, int64_t s) {
  auto c = mask.getDefiningOp<tsr::ConstantOp>();
  auto type = dyn_cast<RankedTensorType>(mask.getType());
  if (!c || !type || type.getRank() < 2 ||
      type.getShape().take_back(2) != ArrayRef<int64_t>{t, s} ||
      llvm::any_of(type.getShape().drop_back(2),
                   [](int64_t n) { return n != 1; }))
    return {};
  return dyn_cast<DenseElementsAttr>(c.getValue());
}

/// Whether every element (i, j) of `values`, row-major [t, s], satisfies
/// `masked(value, j > i)`.
template <typename Range, typename Fn>
bool isCausal(Range values, int64_t s, Fn masked) {
  int64_t n = 0;
  for (auto value : values) {
    if (!masked(value, n % s > n / s))
      return false;
    ++n;
  }
  return true;
}

/// A boolean mask true exactly above the diagonal (or, `inverted`, on and
/// below it).
bool isCausalBoolMask(Value mask, int64_t t, int64_t s, bool inverted) {
  DenseElementsAttr dense = maskConstant(mask, t, s);
  if (!dense || !dense.getElementType().isInteger(1))
    return false;
  return isCausal(dense.getValues<bool>(), s,
                  [&](bool v, bool above) { return v == (above != inverted); });
}

/// An additive mask's "minus infinity": -inf, or a finite value so negative
/// (HF's finfo.min) that exp of any sane score plus it is exactly 0.
bool isMinusInfinity(const APFloat &v) {
  return v.isNegative() && (v.isInfinity() || v.convertToDouble() <= -1e30);
}

/// A float mask of minus infinity above the diagonal and 0 elsewhere.
bool isCausalAdditiveMask(Value mask, int64_t t, int64_t s) {
  DenseElementsAttr dense = maskConstant(mask, t, s);
  if (!dense || !isa<FloatType>(dense.getElementType()))
    return false;
  return isCausal(dense.getValues<APFloat>(), s,
                  [](const APFloat &v, bool above) {
                    return above ? isMinusInfinity(v) : v.isZero();
                  });
}

/// softmax(q @ k^T * scale + causal mask) @ v -> attention(q, k, v)#0,
/// when the probabilities are used only there.
struct RaiseAttention : OpRewritePattern<tsr::MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tsr::MatmulOp op,
                                PatternRewriter &rewriter) const override {
    auto softmax = op.getLhs().getDefiningOp<tsr::SoftmaxOp>();
    if (!softmax || !softmax->hasOneUse() || !isLlmFloat(op.getType()))
      return failure();
    auto probs = cast<RankedTensorType>(softmax.getType());
    int64_t rank = probs.getRank();
    if (rank < 2 || static_cast<int64_t>(softmax.getAxis()) != rank - 1)
      return failure();
    int64_t t = probs.getDimSize(rank - 2), s = probs.getDimSize(rank - 1);

    // The mask: a constant, masked strictly above the diagonal.
    Value scores = softmax.getInput();
    bool causal = false;
    if (auto where = scores.getDefiningOp<tsr::WhereOp>()) {
      std::optional<double> lhs = splatValue(where.getLhs());
      std::optional<double> rhs = splatValue(where.getRhs());
      if (lhs && std::isinf(*lhs) && *lhs < 0 &&
          isCausalBoolMask(where.getCondition(), t, s, /*inverted=*/false))
        scores = where.getRhs();
      else if (rhs && std::isinf(*rhs) && *rhs < 0 &&
               isCausalBoolMask(where.getCondition(), t, s, /*inverted=*/true))
        scores = where.getLhs();
      else
        return failure();
      causal = true;
    } else if (auto add = scores.getDefiningOp<tsr::AddOp>()) {
      Value other;
      for (Value m : {add.getLhs(), add.getRhs()})
        if (isCausalAdditiveMask(m, t, s)) {
          other = otherOperand(add, m);
          break;
        }
      if (!other)
        return failure();
      scores = other;
      causal = true;
    }
    // A causal op has as many keys as queries (a mask for t < s would keep
    // keys past the diagonal visible to the last queries).
    if (scores.getType() != probs || (causal && t != s))
      return failure();

    // The scale: a constant factor or divisor, or none.
    double scale = 1.0;
    if (auto mul = scores.getDefiningOp<tsr::MulOp>()) {
      for (Value c : {mul.getRhs(), mul.getLhs()})
        if (std::optional<double> f = splatValue(c)) {
          scale = *f;
          scores = otherOperand(mul, c);
          break;
        }
    } else if (auto div = scores.getDefiningOp<tsr::DivOp>()) {
      if (std::optional<double> f = splatValue(div.getRhs())) {
        scale = 1.0 / *f;
        scores = div.getLhs();
      }
    }
    if (!std::isfinite(scale) || scores.getType() != probs)
      return failure();

    // q @ k^T: q [.., t, d], k^T [.., d, s], v [.., s, e], all with the
    // same leading dimensions (no broadcasting).
    auto product = scores.getDefiningOp<tsr::MatmulOp>();
    if (!product)
      return failure();
    Value q = product.getLhs(), kT = product.getRhs(), v = op.getRhs();
    auto qt = cast<RankedTensorType>(q.getType());
    auto kTt = cast<RankedTensorType>(kT.getType());
    auto vt = cast<RankedTensorType>(v.getType());
    ArrayRef<int64_t> lead = probs.getShape().drop_back(2);
    for (RankedTensorType x : {qt, kTt, vt})
      if (x.getRank() != rank || x.getShape().drop_back(2) != lead ||
          x.getElementType() != probs.getElementType())
        return failure();
    if (vt.getDimSize(rank - 2) != s)
      return failure();

    // k: k^T's transpose; folded into the transpose that made k^T.
    SmallVector<int64_t> swap = llvm::to_vector(llvm::seq<int64_t>(0, rank));
    std::swap(swap[rank - 2], swap[rank - 1]);
    Value k;
    if (auto tr = kT.getDefiningOp<tsr::TransposeOp>()) {
      SmallVector<int64_t> perm(tr.getPerm());
      std::swap(perm[rank - 2], perm[rank - 1]);
      bool identity = llvm::equal(perm, llvm::seq<int64_t>(0, rank));
      k = identity ? tr.getInput()
                   : tsr::TransposeOp::create(rewriter, tr.getLoc(),
                                              tr.getInput(), perm)
                         .getResult();
    } else {
      k = tsr::TransposeOp::create(rewriter, product.getLoc(), kT, swap);
    }
    auto attention = AttentionOp::create(rewriter, op.getLoc(), q, k, v,
                                         rewriter.getF64FloatAttr(scale),
                                         rewriter.getBoolAttr(causal));
    rewriter.replaceOp(op, attention.getResult());
    return success();
  }
};

} // namespace

void tessera::llm::populateLlmRaisePatterns(RewritePatternSet &patterns) {
  patterns.add<RaiseSilu, RaiseSwiglu, RaiseRmsNorm, RaiseRope, RaiseRepeatKv,
               RaiseAttention>(patterns.getContext());
}
