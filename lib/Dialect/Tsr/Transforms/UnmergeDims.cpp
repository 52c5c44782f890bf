//===- UnmergeDims.cpp - keep a merged dimension's factors apart ----------===//
//
// nn.MultiheadAttention exports its heads merged into the batch: a reshape
// [T, B, H*D] -> [T, B*H, D], then attention on [B*H, T, D]. An annotation
// can split a merged dimension only by its outermost factor (B here), so
// the tp policy cannot split the heads. This pass gives the inner factor a
// dimension of its own: the reshape becomes [T, B, H, D], and the ops that
// follow carry the extra dimension (transposes, batched matmuls,
// elementwise ops, softmax) until a reshape merges it away again.
//
// Inserting a dimension never moves an element in row-major order, so any
// value can be brought back to its old shape by a reshape: where an op
// cannot carry the extra dimension (a softmax over it, a reduction, an op
// this pass does not know), its operand is reshaped back and the op stays
// as it was. Every element is computed by the same operations as before.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Dialect/Tsr/Transforms/Passes.h"
#include "tessera/Interfaces/DimAnnotationInterface.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"

namespace tessera::tsr {
#define GEN_PASS_DEF_TSRUNMERGEDIMS
#include "tessera/Dialect/Tsr/Transforms/Passes.h.inc"
} // namespace tessera::tsr

using namespace mlir;
using namespace tessera;
using namespace tessera::tsr;

namespace {

/// A value whose dimension `dim` is, in `value`, the two dimensions `dim`
/// and `dim` + 1 of sizes `outer` x `inner`.
struct Unmerged {
  Value value;
  int64_t dim;
  int64_t outer, inner;
};

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// `shape` with dimension `dim` replaced by (outer, inner).
SmallVector<int64_t> expandShape(ArrayRef<int64_t> shape, int64_t dim,
                                 int64_t outer, int64_t inner) {
  SmallVector<int64_t> out(shape.take_front(dim));
  out.push_back(outer);
  out.push_back(inner);
  out.append(shape.begin() + dim + 1, shape.end());
  return out;
}

/// The reshape [..., A, F*G, ...] -> [..., A*F, G, ...] (F > 1, A > 1,
/// every other dimension equal): dimension k of the result merges A with
/// the leading factor F of the next input dimension. Returns k, A and F.
std::optional<std::tuple<int64_t, int64_t, int64_t>>
mergesLeadingFactor(ReshapeOp r) {
  ArrayRef<int64_t> in = r.getInput().getType().getShape(),
                    out = r.getType().getShape();
  if (in.size() != out.size() || in.size() < 2)
    return std::nullopt;
  for (size_t k = 0; k + 1 < in.size(); ++k) {
    if (in.take_front(k) != out.take_front(k) ||
        in.drop_front(k + 2) != out.drop_front(k + 2))
      continue;
    int64_t a = in[k];
    if (a <= 1 || out[k] % a != 0)
      continue;
    int64_t f = out[k] / a;
    if (f > 1 && in[k + 1] % f == 0 && out[k + 1] == in[k + 1] / f)
      return std::make_tuple(int64_t(k), a, f);
  }
  return std::nullopt;
}

/// If `op` computes the same for each index of leading dimensions shared by
/// all its operands and results, the number of dimensions after them: its
/// annotation is its template expanded (not one built from attributes,
/// which may name axes), and every operand and result of the template is
/// `*` followed by that many dimensions. Such an op takes any number of
/// leading dimensions (llm.attention: `* t^ d^, * s^ d^, * s^ e^ -> * t^
/// e^, * t^ 1`).
std::optional<int64_t> trailingDimsOfSharedLeadingOp(Operation *op) {
  auto ann = dyn_cast<DimAnnotationOpInterface>(op);
  if (!ann)
    return std::nullopt;
  Result<annotation::Annotation> tmpl =
      annotation::parse(ann.getAnnotationTemplate().str());
  Result<annotation::Annotation> built = ann.buildAnnotation();
  Result<annotation::Annotation> expanded =
      instantiateAnnotationTemplate(op, ann.getAnnotationTemplate());
  if (!tmpl || !built || !expanded || built->str() != expanded->str())
    return std::nullopt;
  std::optional<int64_t> n;
  for (const auto *specs : {&tmpl->inputs, &tmpl->outputs})
    for (const annotation::TensorSpec &spec : *specs) {
      if (spec.repeat || spec.ellipsisPos != size_t(0))
        return std::nullopt;
      if (n && *n != int64_t(spec.dims.size()))
        return std::nullopt;
      n = spec.dims.size();
    }
  return n;
}

class Unmerger {
public:
  explicit Unmerger(Block &body) : body(body) {}
  void run();

private:
  Block &body;
  /// Old value -> the value that carries its merged dimension apart.
  llvm::DenseMap<Value, Unmerged> unmerged;
  /// Ops replaced by new ones (erased at the end, last first).
  SmallVector<Operation *> replaced;
  /// Reshapes the pass starts from: kept if something still uses their
  /// merged result.
  llvm::DenseSet<Operation *> starts;

  /// `v` (an operand of `op`, whose results have rank `rank`), reshaped to
  /// carry `u`'s extra dimension when it is broadcast against a value
  /// unmerged like `u`; null if its dimension there is neither 1 nor the
  /// merged size. Operands that do not reach the dimension stay as they are.
  Value alignOperand(OpBuilder &b, Value v, int64_t rank, const Unmerged &u,
                     Location loc);
  bool rewrite(Operation *op);
};

Value Unmerger::alignOperand(OpBuilder &b, Value v, int64_t rank,
                             const Unmerged &u, Location loc) {
  auto it = unmerged.find(v);
  int64_t r = typeOf(v).getRank();
  int64_t pos = u.dim - (rank - r); // the dimension in v's own numbering
  if (it != unmerged.end())
    return it->second.dim == pos && it->second.outer == u.outer &&
                   it->second.inner == u.inner
               ? it->second.value
               : Value();
  if (pos < 0)
    return v;
  ArrayRef<int64_t> shape = typeOf(v).getShape();
  if (shape[pos] != 1 && shape[pos] != u.outer * u.inner)
    return {};
  SmallVector<int64_t> s = shape[pos] == 1
                               ? expandShape(shape, pos, 1, 1)
                               : expandShape(shape, pos, u.outer, u.inner);
  return ReshapeOp::create(
      b, loc, RankedTensorType::get(s, typeOf(v).getElementType()), v);
}

/// Rewrites `op`, one of whose operands is unmerged, to carry the extra
/// dimension; false if it cannot (the caller merges the operand back).
bool Unmerger::rewrite(Operation *op) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  // The first unmerged operand, which the others must agree with (a copy:
  // recording results grows the map).
  Value leadOld;
  for (Value v : op->getOperands())
    if (unmerged.count(v)) {
      leadOld = v;
      break;
    }
  const Unmerged lead = unmerged.lookup(leadOld);
  // Where the unmerged dimension is in results of rank `rank` (operands are
  // aligned to the right, as broadcasting and batched matmuls do).
  auto resultDim = [&](int64_t rank) {
    return lead.dim + (rank - typeOf(leadOld).getRank());
  };
  auto record = [&](Value old, Value now, int64_t dim) {
    unmerged[old] = {now, dim, lead.outer, lead.inner};
  };
  auto done = [&]() {
    replaced.push_back(op);
    return true;
  };

  if (auto r = dyn_cast<ReshapeOp>(op)) {
    // Any reshape can start from the unmerged value: same element order.
    Value v = ReshapeOp::create(b, loc, r.getType(), lead.value);
    r.getResult().replaceAllUsesWith(v);
    return done();
  }
  if (auto t = dyn_cast<TransposeOp>(op)) {
    SmallVector<int64_t> perm;
    int64_t at = -1;
    for (int64_t p : t.getPerm()) {
      if (p == lead.dim) {
        at = perm.size();
        perm.push_back(p);
        perm.push_back(p + 1);
      } else {
        perm.push_back(p < lead.dim ? p : p + 1);
      }
    }
    auto made = TransposeOp::create(b, loc, lead.value, perm);
    record(t.getResult(), made.getResult(), at);
    return done();
  }
  if (auto s = dyn_cast<SoftmaxOp>(op)) {
    if (s.getAxis() == lead.dim)
      return false;
    auto made = SoftmaxOp::create(b, loc, lead.value,
                                  s.getAxis() + (s.getAxis() > lead.dim));
    record(s.getResult(), made.getResult(), lead.dim);
    return done();
  }
  if (auto m = dyn_cast<MatmulOp>(op)) {
    // A batch dimension of both operands (or broadcast in one of them).
    int64_t rank = m.getType().getRank();
    int64_t dim = resultDim(rank);
    if (dim >= rank - 2)
      return false;
    Unmerged u{Value(), dim, lead.outer, lead.inner};
    Value lhs = alignOperand(b, m.getLhs(), rank, u, loc);
    Value rhs = alignOperand(b, m.getRhs(), rank, u, loc);
    if (!lhs || !rhs)
      return false;
    auto made = MatmulOp::create(b, loc, lhs, rhs);
    record(m.getResult(), made.getResult(), dim);
    return done();
  }
  // The op cloned on operands aligned to results of rank `rank` carrying
  // the dimension at `dim`; false if an operand or result cannot.
  auto cloneCarrying = [&](int64_t rank, int64_t dim) {
    Unmerged u{Value(), dim, lead.outer, lead.inner};
    IRMapping map;
    for (Value v : op->getOperands()) {
      Value a = alignOperand(b, v, rank, u, loc);
      if (!a)
        return false;
      map.map(v, a);
    }
    for (Value res : op->getResults())
      if (typeOf(res).getRank() != rank ||
          typeOf(res).getDimSize(dim) != lead.outer * lead.inner)
        return false;
    Operation *made = b.clone(*op, map);
    for (auto [old, now] : llvm::zip(op->getResults(), made->getResults())) {
      auto t = typeOf(old);
      now.setType(RankedTensorType::get(
          expandShape(t.getShape(), dim, lead.outer, lead.inner),
          t.getElementType()));
      record(old, now, dim);
    }
    return done();
  };
  if (std::optional<int64_t> trailing = trailingDimsOfSharedLeadingOp(op);
      trailing && !isElementwise(op) && op->getNumResults() >= 1) {
    // Every operand of one rank, the dimension among the shared leading
    // ones.
    int64_t rank = typeOf(leadOld).getRank();
    if (lead.dim >= rank - *trailing ||
        llvm::any_of(op->getOperands(),
                     [&](Value v) { return typeOf(v).getRank() != rank; }))
      return false;
    return cloneCarrying(rank, lead.dim);
  }
  if (isElementwise(op) && op->getNumResults() >= 1) {
    // Results have the broadcast shape of the operands: the unmerged
    // dimension is counted from the right.
    int64_t rank = typeOf(op->getResult(0)).getRank();
    return cloneCarrying(rank, resultDim(rank));
  }
  return false;
}

void Unmerger::run() {
  for (Operation &op : llvm::make_early_inc_range(body)) {
    if (auto r = dyn_cast<ReshapeOp>(op); r && !unmerged.count(r.getInput()))
      if (auto m = mergesLeadingFactor(r)) {
        auto [k, a, f] = *m;
        OpBuilder b(r);
        ArrayRef<int64_t> in = r.getInput().getType().getShape();
        // [..., A, F*G, ...] -> [..., A, F, G, ...].
        SmallVector<int64_t> shape = expandShape(in, k + 1, f, in[k + 1] / f);
        Value v = ReshapeOp::create(
            b, r.getLoc(),
            RankedTensorType::get(shape, r.getType().getElementType()),
            r.getInput());
        unmerged[r.getResult()] = {v, k, a, f};
        starts.insert(r);
        replaced.push_back(r);
        continue;
      }
    bool touched = llvm::any_of(op.getOperands(),
                                [&](Value v) { return unmerged.count(v); });
    Operation *before = op.getPrevNode();
    if (touched && !rewrite(&op)) {
      // The op keeps the merged shapes: drop what the attempt made (operand
      // reshapes) and merge its operands back.
      while (op.getPrevNode() != before)
        op.getPrevNode()->erase();
      for (OpOperand &use : op.getOpOperands()) {
        auto it = unmerged.find(use.get());
        if (it == unmerged.end() || starts.count(use.get().getDefiningOp()))
          continue;
        OpBuilder b(&op);
        use.set(ReshapeOp::create(b, op.getLoc(), use.get().getType(),
                                  it->second.value));
      }
    }
  }
  // Ops whose results are still used (a start reshape feeding an op that
  // kept the merged shape) stay; the others go, last first.
  for (Operation *op : llvm::reverse(replaced))
    if (op->use_empty())
      op->erase();
}

struct TsrUnmergeDimsPass
    : public tessera::tsr::impl::TsrUnmergeDimsBase<TsrUnmergeDimsPass> {
  void runOnOperation() override {
    getOperation()->walk([](Operation *op) {
      for (Region &region : op->getRegions())
        for (Block &block : region)
          Unmerger(block).run();
    });
  }
};

} // namespace
