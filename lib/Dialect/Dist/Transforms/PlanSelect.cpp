//===- PlanSelect.cpp - which ops a plan-file entry means -----------------===//
//
// A plan file's entries (trans, assign, recompute) select the step's ops by
// name, parameter, layer group and kind (docs/plans.md, "Selecting ops").
// dist-plan applies them to the written plan; the auto policy reads the
// same selections as constraints on its search (a constrained plan file),
// so both see the same ops.
//
//===----------------------------------------------------------------------===//

#include "PlanUtils.h"
#include "tessera/Dialect/Dist/IR/DistAttrs.h"
#include "tessera/Dialect/Tsr/Analysis/OpMetrics.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"

#include "llvm/Support/Regex.h"

using namespace mlir;
using namespace tessera;

namespace tessera::dist::plan_detail {

SelectionContext selectionContext(func::FuncOp f) {
  SelectionContext cx;
  Block &body = f.getBody().front();
  Units units = groupUnits(body);
  for (auto [i, op] : llvm::enumerate(units.forward)) {
    const std::string &group = units.names[units.unitOf[i]];
    cx.groupOf[op] = group;
    std::string name = tsr::opName(op);
    if (!name.empty())
      cx.groupOfName.try_emplace(name, group);
  }
  for (BlockArgument arg : body.getArguments())
    if (auto param = getArgAttr<Tsr::ParamAttrHelper>(f, arg.getArgNumber()))
      cx.paramName[arg] = param.getValue().str();
  return cx;
}

Value sourceThroughViews(Value v, SmallVectorImpl<Operation *> *chain) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<tsr::TransposeOp, tsr::ReshapeOp, tsr::CastOp>(def))
      break;
    if (chain)
      chain->push_back(def);
    v = def->getOperand(0);
  }
  return v;
}

StringRef forwardNameOf(Operation *op) {
  auto of = dyn_cast_or_null<StringAttr>(getAttr<Tsr::BackwardAttrHelper>(op));
  return of ? of.getValue() : StringRef();
}

SmallVector<Operation *> selectOps(func::FuncOp f,
                                   const PlanFile::Selector &sel,
                                   const SelectionContext &cx) {
  auto whole = [](const std::optional<std::string> &p) {
    return llvm::Regex(p ? "^(" + *p + ")$" : "");
  };
  llvm::Regex opsRe(sel.ops.value_or("")), paramsRe = whole(sel.params),
                                           groupRe = whole(sel.group);
  // A parameter read directly, through views of it, or through the slices
  // that tsr-split-fused-projections takes of a fused weight.
  auto source = [](Value v) {
    while (true) {
      v = sourceThroughViews(v);
      auto slice = v.getDefiningOp<tsr::SliceOp>();
      if (!slice)
        return v;
      v = slice.getInput();
    }
  };
  auto readsParam = [&](Operation &op) {
    for (Value v : op.getOperands()) {
      auto it = cx.paramName.find(source(v));
      if (it != cx.paramName.end() && paramsRe.match(it->second))
        return true;
    }
    return false;
  };
  SmallVector<Operation *> out;
  for (Operation &op : f.getBody().front()) {
    if (isa<func::ReturnOp, tsr::ConstantOp>(op))
      continue;
    // A backward op is known by the forward op it differentiates.
    std::string name, group;
    if (sel.backward) {
      name = forwardNameOf(&op).str();
      if (name.empty())
        continue;
      group = cx.groupOfName.lookup(name);
    } else {
      if (!tsr::isForward(&op))
        continue;
      name = tsr::opName(&op);
      group = cx.groupOf.lookup(&op);
    }
    if ((sel.kind && op.getName().getStringRef() != *sel.kind) ||
        (sel.ops && !opsRe.match(name)) ||
        (sel.group && !groupRe.match(group)) || (sel.params && !readsParam(op)))
      continue;
    out.push_back(&op);
  }
  return out;
}

LogicalResult matchesNothing(Operation *where, StringRef entry, size_t index,
                             const PlanFile::Selector &select) {
  return where->emitError("dist-plan: plan entry")
         << " " << entry << "[" << index << "] (" << select.str()
         << ") matches no " << (select.backward ? "backward" : "forward")
         << " op";
}

} // namespace tessera::dist::plan_detail
