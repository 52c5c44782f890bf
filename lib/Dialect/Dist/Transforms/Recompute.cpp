//===- Recompute.cpp - activation recomputation ---------------------------===//
//
// dist-plan marks forward ops with dist.recompute (a plan file's recompute
// entries); this pass moves their backward uses onto copies made right
// before the backward needs them, so the forward results die early. Each
// layer group is recomputed from its own inputs: a marked result that a
// forward op of another group reads (the group's output, its checkpoint)
// is kept, so recomputing group g never reruns the groups before it.
//
// With micro-batches a value computed from parameters alone is not copied:
// one copy already serves every micro-batch (CSE).
//
// The copies are ordinary backward ops (tsr.backward with the forward op's
// name, the original's dist plan), so dist-schedule and dist-partition run
// them in the backward block of their stage and micro-batch, and the
// memory prediction replays them where they run.
//
//===----------------------------------------------------------------------===//

#include "PlanUtils.h"
#include "tessera/Dialect/Dist/IR/DistAttrs.h"
#include "tessera/Dialect/Dist/IR/DistDialect.h"
#include "tessera/Dialect/Dist/Transforms/Passes.h"
#include "tessera/Dialect/Tsr/Analysis/OpMetrics.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Interfaces/CostInterface.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <functional>

namespace tessera::dist {
#define GEN_PASS_DEF_DISTRECOMPUTE
#include "tessera/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace tessera::dist

using namespace mlir;
using namespace tessera;
using namespace tessera::dist::plan_detail;

namespace {

struct DistRecomputePass
    : public dist::impl::DistRecomputeBase<DistRecomputePass> {
  using DistRecomputeBase::DistRecomputeBase;

  void runOnOperation() override {
    for (auto f : getOperation().getOps<func::FuncOp>())
      if (hasAttr<Tsr::TrainStepAttrHelper>(f))
        recompute(f);
  }

  void recompute(func::FuncOp f) {
    Block &body = f.getBody().front();
    bool any = false;
    for (Operation &op : body)
      any |= hasAttr<Dist::RecomputeAttrHelper>(&op);
    if (!any)
      return;
    Units units = groupUnits(body);
    llvm::DenseMap<Operation *, int64_t> unitOf;
    for (auto [i, op] : llvm::enumerate(units.forward))
      unitOf[op] = units.unitOf[i];

    // With micro-batches, one copy of a value computed from parameters
    // alone (a weight's transpose) serves every micro-batch's forward
    // (CSE), alive until the last of them: a copy for the backward would
    // live beside it, so the backward reads the original.
    int64_t micro = 1;
    if (dist::PipelineAttr pipeline = dist::getEnclosingPipeline(f))
      micro = pipeline.getMicroBatches();
    DenseMap<Value, bool> paramOnly;
    std::function<bool(Value)> fromParams = [&](Value v) -> bool {
      if (auto it = paramOnly.find(v); it != paramOnly.end())
        return it->second;
      bool only = true;
      if (auto arg = dyn_cast<BlockArgument>(v)) {
        only = arg.getOwner() != &body ||
               !f.getArgAttr(arg.getArgNumber(),
                             Tsr::InputAttrHelper::getNameStr());
      } else {
        paramOnly[v] = true; // (no cycles in a block; guards re-entry)
        only = llvm::all_of(v.getDefiningOp()->getOperands(), fromParams);
      }
      paramOnly[v] = only;
      return only;
    };
    auto recomputable = [&](Value v) {
      return isRecomputed(v, unitOf) && !(micro > 1 && fromParams(v));
    };

    MLIRContext *ctx = &getContext();
    DenseMap<Value, Value> copyOf;
    llvm::SetVector<Operation *> copied; ///< originals, in order of copying
    std::function<Value(Value, OpBuilder &)> copy = [&](Value v, OpBuilder &b) {
      if (!recomputable(v))
        return v;
      if (Value done = copyOf.lookup(v))
        return done;
      Operation *def = v.getDefiningOp();
      IRMapping map;
      for (Value operand : def->getOperands())
        map.map(operand, copy(operand, b));
      Operation *c = b.clone(*def, map);
      removeAttr<Dist::RecomputeAttrHelper>(c);
      removeAttr<Dist::OrderAfterAttrHelper>(c);
      std::string name = tsr::opName(def);
      setAttr<Tsr::BackwardAttrHelper>(
          c, name.empty() ? Attribute(UnitAttr::get(ctx))
                          : Attribute(StringAttr::get(ctx, name)));
      for (auto [old, fresh] : llvm::zip(def->getResults(), c->getResults()))
        copyOf[old] = fresh;
      copied.insert(def);
      return copyOf.lookup(v);
    };

    // The backward and update ops, in program order: each copy goes right
    // before the first of them that needs it.
    SmallVector<Operation *> users;
    for (Operation &op : body)
      if (!tsr::isForward(&op))
        users.push_back(&op);
    llvm::SetVector<Value> redirected; ///< originals the backward read
    for (Operation *user : users)
      for (OpOperand &use : user->getOpOperands())
        if (recomputable(use.get())) {
          redirected.insert(use.get());
          OpBuilder b(user);
          use.set(copy(use.get(), b));
        }

    // What the plan report says: the groups and the activations no longer
    // kept (results of the whole step, before the plan splits them).
    llvm::SetVector<int64_t> groups;
    int64_t freed = 0;
    for (Operation *op : copied)
      if (auto it = unitOf.find(op); it != unitOf.end())
        groups.insert(it->second);
    for (Value v : redirected)
      freed += tessera::tensorBytes(v.getType());
    for (Operation &op : body)
      removeAttr<Dist::RecomputeAttrHelper>(&op);
    SmallVector<int64_t> sorted(groups.begin(), groups.end());
    llvm::sort(sorted);
    SmallVector<std::string> names;
    for (int64_t g : sorted)
      names.push_back(units.names[g]);
    std::string line =
        copied.empty()
            ? std::string("recompute: no marked op has a result the backward "
                          "reads outside its group's checkpoints; nothing is "
                          "recomputed")
            : llvm::formatv("recompute: {0} forward op(s) of {1} layer "
                            "group(s) ({2}) run again in the backward; {3} "
                            "bytes of the step's activations (whole batch) "
                            "are not kept from the forward",
                            copied.size(), groups.size(),
                            llvm::join(names, ", "), freed)
                  .str();
    appendPlanReport(f, {StringAttr::get(ctx, line)});
  }
};

} // namespace

bool tessera::dist::plan_detail::isRecomputed(
    Value v, const llvm::DenseMap<Operation *, int64_t> &unitOf) {
  Operation *def = v.getDefiningOp();
  if (!def || !hasAttr<Dist::RecomputeAttrHelper>(def) || !tsr::isForward(def))
    return false;
  auto unit = unitOf.find(def);
  if (unit == unitOf.end())
    return false;
  for (Operation *user : v.getUsers()) {
    if (!tsr::isForward(user))
      continue;
    auto other = unitOf.find(user);
    if (other == unitOf.end() || other->second != unit->second)
      return false;
  }
  return true;
}
