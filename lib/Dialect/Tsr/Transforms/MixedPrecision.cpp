//===- MixedPrecision.cpp - bf16 storage around f32 computations ---------===//
//
// `--precision bf16` as casts in the forward, before autodiff: the values the
// step keeps (weights, activations, and through the casts' gradients the
// backward's values) are bf16, and every op computes in f32 as it did. The
// runtime then needs no bf16 arithmetic: bf16 is a storage type that casts
// convert and copies move (docs/training.md, "Mixed precision").
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Dialect/Tsr/Transforms/Passes.h"

#include "FindFunction.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

namespace tessera::tsr {
#define GEN_PASS_DEF_TSRMIXEDPRECISION
#include "tessera/Dialect/Tsr/Transforms/Passes.h.inc"
} // namespace tessera::tsr

using namespace mlir;
using namespace tessera;
using namespace tessera::tsr;

namespace {

RankedTensorType withElement(Type t, Type element) {
  auto tensor = cast<RankedTensorType>(t);
  return RankedTensorType::get(tensor.getShape(), element,
                               tensor.getEncoding());
}

bool hasElement(Value v, Type element) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.getElementType() == element;
}

/// Ops that only move elements: exact on any element type, and so are
/// their gradients (each other's ops, and zeros).
bool movesOnly(Operation *op) {
  return isa<ReshapeOp, TransposeOp, SplitOp, ConcatOp, SliceOp>(op);
}

/// A result kept in f32: a scalar (the loss), or a later result with fewer
/// elements than the first (a per-row statistic: layer_norm's mean and
/// rstd, attention's log-sum-exp).
bool keptWide(Operation *op, unsigned i) {
  auto t = cast<RankedTensorType>(op->getResult(i).getType());
  if (t.getRank() == 0)
    return true;
  auto first = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  return i > 0 && first && first.hasStaticShape() && t.hasStaticShape() &&
         t.getNumElements() < first.getNumElements();
}

struct MixedPrecisionPass
    : public tsr::impl::TsrMixedPrecisionBase<MixedPrecisionPass> {
  using TsrMixedPrecisionBase::TsrMixedPrecisionBase;

  void runOnOperation() override {
    func::FuncOp forward = findFunction(
        getOperation(), "tsr-mixed-precision", funcName,
        [](func::FuncOp f) { return lossIndex(f) >= 0; },
        "several functions have a tsr.loss result; choose one with "
        "func=<name>",
        "no function has a result marked tsr.loss");
    if (!forward)
      return signalPassFailure();
    if (!forward.getBody().hasOneBlock()) {
      forward.emitError("tsr-mixed-precision: the function must have a "
                        "single block");
      return signalPassFailure();
    }
    // A model that already holds bf16 values has its own precision plan.
    WalkResult bf16Found = forward.walk([&](Operation *op) {
      for (Value v : op->getResults())
        if (hasElement(v, BFloat16Type::get(&getContext()))) {
          op->emitError("tsr-mixed-precision: the model already computes in "
                        "bf16; train it with --precision fp32");
          return WalkResult::interrupt();
        }
      return WalkResult::advance();
    });
    if (bf16Found.wasInterrupted())
      return signalPassFailure();
    rewrite(forward.getBody().front());
  }

  void rewrite(Block &body) {
    MLIRContext *ctx = &getContext();
    Type f32 = Float32Type::get(ctx), bf16 = BFloat16Type::get(ctx);
    OpBuilder b(ctx);
    // The f32 view of each bf16 value, made once before its first
    // compute user.
    DenseMap<Value, Value> wide;
    auto widen = [&](Value narrow, Operation *user) {
      auto [it, inserted] = wide.try_emplace(narrow, Value());
      if (inserted) {
        b.setInsertionPoint(user);
        it->second = CastOp::create(b, user->getLoc(),
                                    withElement(narrow.getType(), f32), narrow);
      }
      return it->second;
    };
    // Replaces the f32 `v` by its bf16 rounding in every use after `after`.
    auto narrowAfter = [&](Value v, Operation *after, Location loc) {
      b.setInsertionPointAfter(after);
      auto n = CastOp::create(b, loc, withElement(v.getType(), bf16), v);
      v.replaceAllUsesExcept(n, n);
      return n;
    };

    // The working weights (and float inputs): bf16 at the top.
    Operation *first = &body.front();
    for (BlockArgument arg : body.getArguments()) {
      if (!hasElement(arg, f32) || arg.use_empty())
        continue;
      b.setInsertionPoint(first);
      auto n = CastOp::create(b, arg.getLoc(), withElement(arg.getType(), bf16),
                              arg);
      arg.replaceAllUsesExcept(n, n);
    }

    SmallVector<Operation *> ops;
    for (Operation &op : body)
      ops.push_back(&op);
    for (Operation *op : ops) {
      if (isa<CastOp>(op) && hasElement(op->getResult(0), bf16))
        continue; // the arguments' narrowing
      if (isa<ConstantOp>(op))
        continue;
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        for (OpOperand &use : ret->getOpOperands())
          if (hasElement(use.get(), bf16))
            use.set(widen(use.get(), ret));
        continue;
      }
      bool anyNarrow = false, allNarrow = true;
      for (Value v : op->getOperands()) {
        if (hasElement(v, bf16))
          anyNarrow = true;
        else if (hasElement(v, f32))
          allNarrow = false;
      }
      if (movesOnly(op) && anyNarrow && allNarrow) {
        for (Value r : op->getResults())
          if (hasElement(r, f32))
            r.setType(withElement(r.getType(), bf16));
        continue;
      }
      // Values computed from constants and integers alone stay f32: they
      // are the step's constants.
      if (!anyNarrow)
        continue;
      for (OpOperand &use : op->getOpOperands())
        if (hasElement(use.get(), bf16))
          use.set(widen(use.get(), op));
      Operation *last = op;
      for (unsigned i = 0; i < op->getNumResults(); ++i) {
        Value r = op->getResult(i);
        if (!hasElement(r, f32) || r.use_empty() || keptWide(op, i))
          continue;
        last = narrowAfter(r, last, op->getLoc());
      }
    }
  }
};

} // namespace
