//===- Coshard.cpp - co-sharded ops run in pieces -------------------------===//
//
// nnScaler's co-shard: an op split over tp into more pieces than the tp
// ranks, the pieces of one rank run one after another. dist-plan marks the
// ops (dist.coshard = P, a plan file's coshard entries); this pass makes P
// copies of each, copy j computing the j-th P-th of every rank's tp piece
// along the dimension tp splits. Without tp (T = 1), dist-plan marks the
// dimension tp would split (Megatron's) as a split over the tp axis of
// size 1, and each rank runs its whole op in P pieces; those marks go once
// the copies are made.
//
// Piece j of a dimension of size S split over T tp ranks is, on rank r,
// the elements [r S/T + j S/(T P), r S/T + (j + 1) S/(T P)): inside the
// rank's tp piece, so entering and leaving are local. In the whole-tensor
// program that is a reshape of the dimension into [T, P, S/(T P)], the
// slice of index j of P, and a reshape back to S/P, whose tp split (of the
// outer factor T) the partitioner keeps without communication; leaving is
// the reverse (reshapes of the pieces to [T, 1, S/(T P)], a concatenation
// along P, a reshape to S). With S = heads x head size, every piece holds
// whole heads when T P divides the heads (dist-plan checks it).
//
// Consecutive marked ops form a run. Its copies are emitted piece by piece
// after the run's last op (piece 0 of every op of the run, then piece 1,
// ...), and a marked op that reads a marked op's result along the same
// dimension reads the matching piece, in the same run or a later one (the
// backward of piece j reads the forward values of piece j). So, with
// recomputation (dist-recompute, after this pass), the backward of piece j
// recomputes piece j's forward right before it, and only one piece's
// recomputed values are alive at a time.
//
//===----------------------------------------------------------------------===//

#include "PlanUtils.h"
#include "tessera/Dialect/Dist/IR/DistAttrs.h"
#include "tessera/Dialect/Dist/IR/DistDialect.h"
#include "tessera/Dialect/Dist/Transforms/Passes.h"
#include "tessera/Dialect/Tsr/Analysis/OpMetrics.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Interfaces/DimAnnotationInterface.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/FormatVariadic.h"

namespace tessera::dist {
#define GEN_PASS_DEF_DISTCOSHARD
#include "tessera/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace tessera::dist

using namespace mlir;
using namespace tessera;
using namespace tessera::dist;
using namespace tessera::dist::plan_detail;

namespace {

/// A marked op: its piece count and, per operand and result, the dimension
/// tp splits (-1: the operand is read whole).
struct Marked {
  int64_t pieces = 1;
  SmallVector<int64_t> operandDim, resultDim;
};

/// The name of `op`'s dimension that tp splits, or "".
std::string tpName(Operation *op) { return splitOver(op, "tp").value_or(""); }

RankedTensorType withDims(RankedTensorType t, int64_t dim,
                          ArrayRef<int64_t> sizes) {
  SmallVector<int64_t> shape(t.getShape().begin(), t.getShape().begin() + dim);
  shape.append(sizes.begin(), sizes.end());
  shape.append(t.getShape().begin() + dim + 1, t.getShape().end());
  return RankedTensorType::get(shape, t.getElementType());
}

class Coshard {
public:
  Coshard(func::FuncOp f, int64_t tp) : f(f), tp(tp), ctx(f.getContext()) {}

  LogicalResult run();

private:
  func::FuncOp f;
  int64_t tp;
  MLIRContext *ctx;
  llvm::DenseMap<Operation *, Marked> marked;
  /// A marked op's result -> its pieces, and the dimension they split.
  llvm::DenseMap<Value, SmallVector<Value>> piecesOf;
  llvm::DenseMap<Value, int64_t> dimOf;
  size_t copies = 0, whole = 0;

  /// The plan of a new op: the op it serves gives its stage, phase,
  /// recomputation and name; dimension `dim` of its result is tp's.
  void inherit(Operation *fresh, Operation *from, int64_t dim) {
    fresh->setLoc(from->getLoc());
    for (StringRef name : {Dist::StageAttrHelper::getNameStr(),
                           Tsr::BackwardAttrHelper::getNameStr(),
                           Dist::RecomputeAttrHelper::getNameStr()})
      if (Attribute a = from->getAttr(name))
        fresh->setAttr(name, a);
    // Without tp (a mesh axis of size 1) there is no split to keep: the
    // reshapes' outer factor T is a dimension of size 1, without a name.
    if (tp < 2)
      return;
    auto iface = cast<DimAnnotationOpInterface>(fresh);
    if (auto bound = bindOpAnnotation(iface))
      addSplit(fresh, bound->annotation.outputs[0].dims[dim].atoms.front().name,
               "tp");
  }

  Value reshape(OpBuilder &b, Operation *from, Value x, RankedTensorType to,
                int64_t dim) {
    auto r = tsr::ReshapeOp::create(b, from->getLoc(), to, x);
    inherit(r, from, dim);
    return r.getResult();
  }

  /// Piece j of P of `v` along `dim` (entering a run); `split` caches the
  /// reshape into [T, P, rest] that every piece slices.
  Value enter(OpBuilder &b, Operation *from, Value v, int64_t dim, int64_t P,
              int64_t j, Value &split) {
    auto t = cast<RankedTensorType>(v.getType());
    int64_t S = t.getDimSize(dim);
    if (!split)
      split = reshape(b, from, v, withDims(t, dim, {tp, P, S / (tp * P)}), dim);
    auto st = cast<RankedTensorType>(split.getType());
    SmallVector<int64_t> starts(st.getRank(), 0), limits(st.getShape()),
        steps(st.getRank(), 1);
    starts[dim + 1] = j;
    limits[dim + 1] = j + 1;
    auto slice =
        tsr::SliceOp::create(b, from->getLoc(), split, starts, limits, steps);
    inherit(slice, from, dim);
    return reshape(b, from, slice.getResult(), withDims(t, dim, {S / P}), dim);
  }

  /// The whole of a marked result from its pieces (leaving a run).
  Value leave(OpBuilder &b, Operation *from, Value v) {
    auto t = cast<RankedTensorType>(v.getType());
    int64_t dim = dimOf.lookup(v);
    const SmallVector<Value> &pieces = piecesOf[v];
    int64_t P = pieces.size(), S = t.getDimSize(dim);
    SmallVector<Value> parts;
    for (Value piece : pieces)
      parts.push_back(reshape(b, from, piece,
                              withDims(t, dim, {tp, 1, S / (tp * P)}), dim));
    auto cat = tsr::ConcatOp::create(b, from->getLoc(), parts, dim + 1);
    inherit(cat, from, dim);
    return reshape(b, from, cat.getResult(), t, dim);
  }

  /// Whether `user` reads operand `i` as the pieces of `v`.
  bool readsPieces(Operation *user, unsigned i, Value v, int64_t P) {
    auto it = marked.find(user);
    return it != marked.end() && it->second.pieces == P &&
           it->second.operandDim[i] >= 0 &&
           it->second.operandDim[i] == dimOf.lookup(v);
  }

  LogicalResult emitRun(ArrayRef<Operation *> ops);
};

LogicalResult Coshard::run() {
  Block &body = f.getBody().front();
  for (Operation &op : body) {
    auto attr = getAttr<Dist::CoshardAttrHelper>(&op);
    if (!attr)
      continue;
    removeAttr<Dist::CoshardAttrHelper>(&op);
    std::string name = tpName(&op);
    auto iface = dyn_cast<DimAnnotationOpInterface>(&op);
    if (name.empty() || !iface)
      return op.emitError("dist-coshard: '")
             << tsr::opNameOrKind(&op)
             << "' is marked dist.coshard but tp does not split it";
    if (attr.getInt() < 2)
      return op.emitError("dist-coshard: '")
             << tsr::opNameOrKind(&op)
             << "' is marked dist.coshard = " << attr.getInt()
             << ", but a co-shard has at least 2 pieces";
    auto bound = bindOpAnnotation(iface);
    if (!bound)
      return op.emitError("dist-coshard: ") << bound.message();
    Marked m;
    m.pieces = attr.getInt();
    for (const annotation::TensorSpec &spec : bound->annotation.inputs)
      m.operandDim.push_back(dimOfName(spec, name));
    for (const annotation::TensorSpec &spec : bound->annotation.outputs)
      m.resultDim.push_back(dimOfName(spec, name));
    // An op whose result does not carry the dimension (a projection that
    // sums over it) and a dropout (whose mask is drawn per whole tensor)
    // run whole, on whole operands.
    if (llvm::is_contained(m.resultDim, -1) || isa<tsr::DropoutOp>(op)) {
      ++whole;
      continue;
    }
    marked[&op] = std::move(m);
  }
  if (marked.empty())
    return success();

  // Runs: consecutive marked ops (constants between them do not count)
  // with one piece count, cut before an op that needs a value of its own
  // run whole.
  SmallVector<SmallVector<Operation *>> runs;
  SmallVector<Operation *> current;
  llvm::DenseMap<Value, int64_t> inRun; ///< result -> its dimension
  auto close = [&]() {
    if (!current.empty())
      runs.push_back(current);
    current.clear();
    inRun.clear();
  };
  for (Operation &op : body) {
    if (isa<tsr::ConstantOp>(op))
      continue;
    auto it = marked.find(&op);
    if (it == marked.end()) {
      close();
      continue;
    }
    const Marked &m = it->second;
    bool cut = !current.empty() && marked[current.front()].pieces != m.pieces;
    for (auto [i, v] : llvm::enumerate(op.getOperands()))
      if (auto in = inRun.find(v);
          in != inRun.end() && m.operandDim[i] != in->second)
        cut = true;
    if (cut)
      close();
    current.push_back(&op);
    for (auto [r, d] : llvm::zip(op.getResults(), m.resultDim))
      inRun[r] = d;
  }
  close();

  for (const SmallVector<Operation *> &ops : runs)
    if (failed(emitRun(ops)))
      return failure();
  // Every use moved to the pieces or to the whole; a use left would be a
  // bug here, reported rather than left dangling.
  for (const SmallVector<Operation *> &ops : llvm::reverse(runs))
    for (Operation *op : llvm::reverse(ops)) {
      if (!op->use_empty())
        return op->emitError("dist-coshard: '")
               << tsr::opNameOrKind(op)
               << "' is still read after its pieces replaced it";
      op->erase();
    }
  appendPlanReport(
      f, {StringAttr::get(
             ctx, llvm::formatv("coshard: {0} op(s) in {1} run(s) compute "
                                "each {4} in parts, one after another "
                                "({2} op copies){3}",
                                marked.size(), runs.size(), copies,
                                whole ? llvm::formatv("; {0} marked op(s) "
                                                      "with a result that "
                                                      "does not carry the "
                                                      "split run whole",
                                                      whole)
                                            .str()
                                      : std::string(),
                                tp > 1 ? "tp piece" : "op")
                      .str())});
  return success();
}

LogicalResult Coshard::emitRun(ArrayRef<Operation *> ops) {
  int64_t P = marked[ops.front()].pieces;
  OpBuilder b(ctx);
  b.setInsertionPointAfter(ops.back());
  for (int64_t j = 0; j < P; ++j) {
    llvm::DenseMap<std::pair<Value, int64_t>, Value> entered;
    llvm::DenseMap<std::pair<Value, int64_t>, Value> splitOf;
    for (Operation *op : ops) {
      const Marked &m = marked[op];
      IRMapping map;
      for (auto [i, v] : llvm::enumerate(op->getOperands())) {
        int64_t d = m.operandDim[i];
        if (piecesOf.count(v)) {
          // A marked result: its piece, or (read whole) the whole, which
          // leaving its run made already.
          if (readsPieces(op, i, v, P))
            map.map(v, piecesOf[v][j]);
          continue;
        }
        if (d < 0)
          continue;
        Value &piece = entered[{v, d}];
        if (!piece)
          piece = enter(b, op, v, d, P, j, splitOf[{v, d}]);
        map.map(v, piece);
      }
      Operation *c = b.clone(*op, map);
      ++copies;
      for (auto [k, r] : llvm::enumerate(c->getResults())) {
        auto t = cast<RankedTensorType>(r.getType());
        int64_t d = m.resultDim[k];
        r.setType(withDims(t, d, {t.getDimSize(d) / P}));
      }
      // A slice keeps the whole extent of the split dimension (its
      // annotation allows no split of a sliced one): the piece's extent.
      if (auto s = dyn_cast<tsr::SliceOp>(c)) {
        SmallVector<int64_t> limits(s.getLimits());
        int64_t d = m.resultDim[0];
        limits[d] = s.getStarts()[d] +
                    cast<RankedTensorType>(s.getType()).getDimSize(d);
        s.setLimits(limits);
      }
      if (failed(mlir::verify(c)))
        return op->emitError("dist-coshard: cannot compute '")
               << tsr::opNameOrKind(op) << "' in " << P << " pieces";
      for (auto [r, piece, d] :
           llvm::zip(op->getResults(), c->getResults(), m.resultDim)) {
        piecesOf[r].push_back(piece);
        dimOf[r] = d;
      }
    }
  }
  // Results that something reads whole leave the run as one tensor.
  for (Operation *op : ops)
    for (Value r : op->getResults()) {
      SmallVector<OpOperand *> wholeUses;
      for (OpOperand &use : r.getUses())
        if (!readsPieces(use.getOwner(), use.getOperandNumber(), r, P))
          wholeUses.push_back(&use);
      if (wholeUses.empty())
        continue;
      Value w = leave(b, op, r);
      for (OpOperand *use : wholeUses)
        use->set(w);
    }
  return success();
}

/// Without tp, the splits over tp (an axis of size 1) only said where the
/// pieces lie (a copy of one head has no head dimension left to name):
/// none stays.
void dropTpSplits(func::FuncOp f) {
  for (Operation &op : f.getBody().front())
    if (auto split = getAttr<Dist::SplitAttrHelper>(&op)) {
      SmallVector<NamedAttribute> keep;
      for (NamedAttribute e : split)
        if (cast<StringAttr>(e.getValue()).getValue() != "tp")
          keep.push_back(e);
      if (keep.empty())
        removeAttr<Dist::SplitAttrHelper>(&op);
      else
        op.setAttr(Dist::SplitAttrHelper::getNameStr(),
                   DictionaryAttr::get(f.getContext(), keep));
    }
}

} // namespace

LogicalResult tessera::dist::plan_detail::runCoshard(ModuleOp module) {
  bool any = false;
  module.walk(
      [&](Operation *op) { any |= hasAttr<Dist::CoshardAttrHelper>(op); });
  if (!any)
    return success();
  MeshAttr mesh = requireMesh(module, "dist-coshard");
  if (!mesh)
    return failure();
  planner::PlanShape shape;
  for (auto [name, size] : llvm::zip(mesh.getNames(), mesh.getSizes()))
    (name.getValue() == "dp"   ? shape.dp
     : name.getValue() == "tp" ? shape.tp
                               : shape.pp) = size;
  if (PipelineAttr pipeline = getEnclosingPipeline(module))
    shape.microBatches = pipeline.getMicroBatches();
  for (auto f : module.getOps<func::FuncOp>()) {
    if (!hasAttr<Tsr::TrainStepAttrHelper>(f))
      continue;
    Coshard c(f, shape.tp);
    // The new ops carry the batch like the ops they serve: traced again
    // as dist-plan traced it (the marks it made stay).
    if (failed(c.run()) || failed(planBatch(f, shape)))
      return failure();
    if (shape.tp < 2)
      dropTpSplits(f);
  }
  return success();
}

namespace {
struct DistCoshardPass : public dist::impl::DistCoshardBase<DistCoshardPass> {
  using DistCoshardBase::DistCoshardBase;

  void runOnOperation() override {
    if (failed(runCoshard(getOperation())))
      signalPassFailure();
  }
};

} // namespace
