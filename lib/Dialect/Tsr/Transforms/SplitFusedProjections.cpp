//===- SplitFusedProjections.cpp - one projection per piece of a split
//-----===//
//
// A fused projection whose output is split along its features (GPT's
// c_attn: x @ W[C, 3C] + b, split into q, k and v; nn.MultiheadAttention's
// in_proj, cut by three slices) becomes one projection per piece, by a
// slice of the weight (and of the bias): x @ W[:, piece] + b[piece]. Each
// piece's features are then whole heads, which the tp policy's head trace
// reaches, so the fused QKV projection is split column-parallel like separate
// q, k, v projections (Megatron reorders the fused weight for the same reason).
// Every output element is the same dot product as before. Run before
// tsr-autodiff: the slices' gradients put the pieces' weight gradients back
// into the fused weight's.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Dialect/Tsr/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace tessera::tsr {
#define GEN_PASS_DEF_TSRSPLITFUSEDPROJECTIONS
#include "tessera/Dialect/Tsr/Transforms/Passes.h.inc"
} // namespace tessera::tsr

using namespace mlir;
using namespace tessera;
using namespace tessera::tsr;

namespace {

/// The matmul by a matrix (rank-2 right operand) that `v` is, or null.
MatmulOp projection(Value v) {
  auto m = v.getDefiningOp<MatmulOp>();
  if (!m || cast<RankedTensorType>(m.getRhs().getType()).getRank() != 2)
    return nullptr;
  return m;
}

/// The projection `in` is (plus an optional rank-1 bias) and the bias add,
/// or a null matmul. The caller vouches for `in`'s uses.
std::tuple<MatmulOp, Value, Operation *> projectionOf(Value in) {
  auto type = cast<RankedTensorType>(in.getType());
  MatmulOp m = projection(in);
  Value bias;
  Operation *add = nullptr;
  if (!m) {
    auto a = in.getDefiningOp<AddOp>();
    if (!a)
      return {};
    for (auto [mm, b] : {std::pair(a.getLhs(), a.getRhs()),
                         std::pair(a.getRhs(), a.getLhs())}) {
      auto bt = cast<RankedTensorType>(b.getType());
      if (MatmulOp p = projection(mm);
          p && p->hasOneUse() && bt.getRank() == 1 &&
          bt.getDimSize(0) == type.getShape().back()) {
        m = p;
        bias = b;
        break;
      }
    }
    if (!m)
      return {};
    add = a;
  }
  return {m, bias, add};
}

/// One projection per feature range [offset, offset + size) of `ranges`,
/// before `where`.
SmallVector<Value> projectPieces(Operation *where, MatmulOp m, Value bias,
                                 Operation *add,
                                 ArrayRef<std::pair<int64_t, int64_t>> ranges) {
  Value w = m.getRhs();
  int64_t k = cast<RankedTensorType>(w.getType()).getDimSize(0);
  OpBuilder b(where);
  SmallVector<Value> pieces;
  for (auto [offset, size] : ranges) {
    // The new ops keep the projection's location (its ONNX node name, by
    // which pp finds layer groups) and the bias add's.
    Value wi = SliceOp::create(b, m.getLoc(), w, ArrayRef<int64_t>{0, offset},
                               ArrayRef<int64_t>{k, offset + size},
                               ArrayRef<int64_t>{1, 1});
    Value y = MatmulOp::create(b, m.getLoc(), m.getLhs(), wi);
    if (bias) {
      Value bi = SliceOp::create(
          b, add->getLoc(), bias, ArrayRef<int64_t>{offset},
          ArrayRef<int64_t>{offset + size}, ArrayRef<int64_t>{1});
      y = AddOp::create(b, add->getLoc(), y, bi);
    }
    pieces.push_back(y);
  }
  return pieces;
}

/// Rewrites `split` when it cuts the features of a projection (plus an
/// optional rank-1 bias); true if it did.
bool splitProjection(SplitOp split) {
  Value in = split.getInput();
  auto type = cast<RankedTensorType>(in.getType());
  if (split.getAxis() != type.getRank() - 1 || !in.hasOneUse())
    return false;
  auto [m, bias, add] = projectionOf(in);
  if (!m)
    return false;
  SmallVector<std::pair<int64_t, int64_t>> ranges;
  int64_t offset = 0;
  for (int64_t size : split.getSizes()) {
    ranges.push_back({offset, size});
    offset += size;
  }
  split.replaceAllUsesWith(projectPieces(split, m, bias, add, ranges));
  split.erase();
  if (add)
    add->erase();
  m.erase();
  return true;
}

/// Rewrites a projection (plus an optional rank-1 bias) whose every use is
/// a slice of a range of its features (step 1, every other dimension
/// whole); true if it did.
bool sliceProjection(Value in) {
  auto type = cast<RankedTensorType>(in.getType());
  int64_t last = type.getRank() - 1;
  if (in.use_empty() || last < 0)
    return false;
  SmallVector<SliceOp> slices;
  for (Operation *user : in.getUsers()) {
    auto s = dyn_cast<SliceOp>(user);
    if (!s || s->getBlock() != in.getParentBlock())
      return false;
    for (int64_t d = 0; d <= last; ++d)
      if (s.getSteps()[d] != 1 ||
          (d != last &&
           (s.getStarts()[d] != 0 || s.getLimits()[d] != type.getDimSize(d))))
        return false;
    slices.push_back(s);
  }
  // The pieces in program order (a use list is in no particular order).
  llvm::sort(slices,
             [](SliceOp a, SliceOp b) { return a->isBeforeInBlock(b); });
  SmallVector<std::pair<int64_t, int64_t>> ranges;
  for (SliceOp s : slices)
    ranges.push_back(
        {s.getStarts()[last], s.getLimits()[last] - s.getStarts()[last]});
  auto [m, bias, add] = projectionOf(in);
  if (!m)
    return false;
  // The pieces go before the first slice, where the projection's result is.
  Operation *first = in.getDefiningOp()->getNextNode();
  SmallVector<Value> pieces = projectPieces(first, m, bias, add, ranges);
  for (auto [s, piece] : llvm::zip(slices, pieces)) {
    s.getResult().replaceAllUsesWith(piece);
    s.erase();
  }
  if (add)
    add->erase();
  m.erase();
  return true;
}

struct TsrSplitFusedProjectionsPass
    : public tessera::tsr::impl::TsrSplitFusedProjectionsBase<
          TsrSplitFusedProjectionsPass> {
  void runOnOperation() override {
    SmallVector<SplitOp> splits;
    getOperation()->walk([&](SplitOp s) { splits.push_back(s); });
    for (SplitOp s : splits)
      splitProjection(s);
    // Projections cut by slices: the matmul or bias add their slices read.
    SmallVector<Value> sliced;
    getOperation()->walk([&](SliceOp s) {
      if (!llvm::is_contained(sliced, s.getInput()))
        sliced.push_back(s.getInput());
    });
    for (Value v : sliced)
      sliceProjection(v);
  }
};

} // namespace
