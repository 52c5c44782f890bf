//===- Autodiff.cpp - reverse-mode automatic differentiation --------------===//
//
// Builds `<func>_grad`: the forward ops, then the backward ops in reverse
// order, each op's vector-Jacobian product coming from GradientOpInterface.
// Only "active" ops (depending on a parameter and contributing to the loss)
// are differentiated, so labels, masks and index arithmetic need no rules.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Dialect/Tsr/Transforms/Passes.h"
#include "tessera/Interfaces/GradientInterface.h"

#include "FindFunction.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

namespace tessera::tsr {
#define GEN_PASS_DEF_TSRAUTODIFF
#include "tessera/Dialect/Tsr/Transforms/Passes.h.inc"
} // namespace tessera::tsr

using namespace mlir;
using namespace tessera;
using namespace tessera::tsr;

namespace {

bool isFloatTensor(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && isa<FloatType>(t.getElementType());
}

Value zeros(OpBuilder &b, Location loc, Type type) {
  auto t = cast<RankedTensorType>(type);
  return ConstantOp::create(
      b, loc, t,
      DenseElementsAttr::get(
          t, FloatAttr::get(t.getElementType(), 0.0).getValue()));
}

/// a + b. The runtime's arithmetic is f32 and f64; gradients of a storage
/// type (bf16 values of tsr-mixed-precision) are summed in f32 and rounded
/// once.
Value addGradients(OpBuilder &b, Location loc, Value x, Value y) {
  auto t = cast<RankedTensorType>(x.getType());
  if (!t.getElementType().isBF16() && !t.getElementType().isF16())
    return AddOp::create(b, loc, x, y);
  auto wide = RankedTensorType::get(t.getShape(), b.getF32Type());
  Value wx = CastOp::create(b, loc, wide, x);
  Value wy = CastOp::create(b, loc, wide, y);
  Value sum = AddOp::create(b, loc, wx, wy);
  return CastOp::create(b, loc, t, sum);
}

struct AutodiffPass : public tsr::impl::TsrAutodiffBase<AutodiffPass> {
  using TsrAutodiffBase::TsrAutodiffBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    func::FuncOp forward = findForward(module);
    if (!forward)
      return signalPassFailure();
    if (failed(differentiate(forward)))
      return signalPassFailure();
  }

  func::FuncOp findForward(ModuleOp module) {
    return findFunction(
        module, "tsr-autodiff", funcName,
        [&](func::FuncOp f) { return lossIndex(f) >= 0; },
        "several functions have a tsr.loss result; choose one with "
        "func=<name>",
        "no function has a result marked tsr.loss");
  }

  LogicalResult differentiate(func::FuncOp forward) {
    int loss = lossIndex(forward);
    if (loss < 0)
      return forward.emitError("has no result marked tsr.loss");
    if (!forward.getBody().hasOneBlock())
      return forward.emitError("must have a single block to differentiate");
    auto lossType = dyn_cast<RankedTensorType>(forward.getResultTypes()[loss]);
    if (!lossType || lossType.getRank() != 0 ||
        !isa<FloatType>(lossType.getElementType()))
      return forward.emitError("the loss must be a rank-0 float tensor, found ")
             << forward.getResultTypes()[loss];

    // The gradient function starts as a copy of the forward.
    OpBuilder moduleBuilder(forward);
    moduleBuilder.setInsertionPointAfter(forward);
    auto gradFn = cast<func::FuncOp>(moduleBuilder.clone(*forward));
    gradFn.setSymName((forward.getSymName() + "_grad").str());
    Block &body = gradFn.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    Value lossValue = ret.getOperand(loss);

    // Active values: reachable from a parameter and reaching the loss.
    // Integer parameters (e.g. constant tables the importer kept as
    // initializers) are not differentiable: they get no gradient result.
    SmallVector<BlockArgument> params;
    for (BlockArgument arg : body.getArguments())
      if (gradFn.getArgAttr(arg.getArgNumber(),
                            Tsr::ParamAttrHelper::getNameStr()) &&
          isFloatTensor(arg))
        params.push_back(arg);
    DenseSet<Value> fromParams;
    for (BlockArgument p : params)
      if (isFloatTensor(p))
        fromParams.insert(p);
    for (Operation &op : body.without_terminator())
      if (llvm::any_of(op.getOperands(),
                       [&](Value v) { return fromParams.contains(v); }))
        for (Value r : op.getResults())
          if (isFloatTensor(r))
            fromParams.insert(r);
    DenseSet<Value> toLoss;
    toLoss.insert(lossValue);
    for (Operation &op : llvm::reverse(body.without_terminator()))
      if (llvm::any_of(op.getResults(),
                       [&](Value v) { return toLoss.contains(v); }))
        for (Value v : op.getOperands())
          toLoss.insert(v);
    auto active = [&](Value v) {
      return fromParams.contains(v) && toLoss.contains(v);
    };

    // Backward: seed d(loss) = 1 and walk the ops in reverse.
    OpBuilder b(ret);
    Location loc = ret.getLoc();
    auto one = ConstantOp::create(
        b, loc, lossType,
        DenseElementsAttr::get(
            lossType,
            FloatAttr::get(lossType.getElementType(), 1.0).getValue()));
    Operation *backwardStart = one;
    DenseMap<Value, Value> adjoint;
    adjoint[lossValue] = one;
    auto accumulate = [&](Value v, Value g) {
      auto [it, inserted] = adjoint.try_emplace(v, g);
      if (!inserted)
        it->second = addGradients(b, g.getLoc(), it->second, g);
    };

    SmallVector<Operation *> forwardOps;
    for (Operation &op : body.without_terminator())
      if (&op != backwardStart)
        forwardOps.push_back(&op);
    for (Operation *op : llvm::reverse(forwardOps)) {
      SmallVector<Value> resultGrads;
      bool any = false;
      for (Value r : op->getResults()) {
        Value g = active(r) ? adjoint.lookup(r) : Value();
        resultGrads.push_back(g);
        any |= bool(g);
      }
      if (!any)
        continue;
      auto rule = dyn_cast<GradientOpInterface>(op);
      if (!rule)
        return op->emitError("tsr-autodiff: '")
               << op->getName() << "' has no gradient rule "
               << "(it lies between a parameter and the loss)";
      b.setInsertionPoint(ret);
      Operation *before = ret->getPrevNode();
      SmallVector<Value> operandGrads;
      if (failed(rule.buildGradient(b, resultGrads, operandGrads)))
        return failure();
      if (operandGrads.size() != op->getNumOperands())
        return op->emitError("tsr-autodiff: gradient rule gave ")
               << operandGrads.size() << " operand gradients for "
               << op->getNumOperands() << " operands";
      for (auto [operand, grad] : llvm::zip(op->getOperands(), operandGrads)) {
        if (!grad || !active(operand))
          continue;
        if (grad.getType() != operand.getType())
          return op->emitError("tsr-autodiff: gradient rule gave ")
                 << grad.getType() << " for an operand of type "
                 << operand.getType();
        accumulate(operand, grad);
      }
      // The ops just built (the gradient and its accumulations) belong to
      // `op`: pipeline staging puts them on `op`'s stage.
      if (StringAttr name = forwardName(op))
        for (Operation *n = before->getNextNode(); n != ret.getOperation();
             n = n->getNextNode())
          gradOf[n] = name;
    }

    // New results: the loss, then each parameter's gradient.
    b.setInsertionPoint(ret);
    SmallVector<Value> results{lossValue};
    SmallVector<Type> resultTypes{lossType};
    for (BlockArgument p : params) {
      Value g = adjoint.lookup(p);
      if (!g)
        g = zeros(b, loc, p.getType());
      results.push_back(g);
      resultTypes.push_back(p.getType());
    }
    func::ReturnOp::create(b, ret.getLoc(), results);
    ret.erase();
    gradFn.setType(FunctionType::get(&getContext(), gradFn.getArgumentTypes(),
                                     resultTypes));
    SmallVector<DictionaryAttr> resultAttrs;
    MLIRContext *ctx = &getContext();
    resultAttrs.push_back(DictionaryAttr::get(
        ctx,
        {NamedAttribute(StringAttr::get(ctx, Tsr::LossAttrHelper::getNameStr()),
                        UnitAttr::get(ctx))}));
    for (BlockArgument p : params)
      resultAttrs.push_back(DictionaryAttr::get(
          ctx, {NamedAttribute(
                   StringAttr::get(ctx, Tsr::GradAttrHelper::getNameStr()),
                   gradFn.getArgAttr(p.getArgNumber(),
                                     Tsr::ParamAttrHelper::getNameStr()))}));
    gradFn.setAllResultAttrs(resultAttrs);

    // Mark the backward so that later passes (pipeline staging, schedules)
    // can tell it from the forward without re-deriving it.
    UnitAttr unit = UnitAttr::get(&getContext());
    for (Operation &op : body)
      if (!op.isBeforeInBlock(backwardStart) && !isa<func::ReturnOp>(op)) {
        StringAttr name = gradOf.lookup(&op);
        op.setAttr(Tsr::BackwardAttrHelper::getNameStr(),
                   name ? Attribute(name) : Attribute(unit));
      }
    return success();
  }

  /// Backward op -> the name of the forward op it differentiates.
  DenseMap<Operation *, StringAttr> gradOf;

  /// The op's name from its location (the ONNX node name), if it has one.
  static StringAttr forwardName(Operation *op) {
    Location loc = op->getLoc();
    while (auto site = dyn_cast<CallSiteLoc>(loc))
      loc = site.getCallee();
    if (auto name = dyn_cast<NameLoc>(loc))
      return name.getName();
    if (auto fused = dyn_cast<FusedLoc>(loc))
      for (Location l : fused.getLocations())
        if (auto name = dyn_cast<NameLoc>(l))
          return name.getName();
    return {};
  }
};

} // namespace
