//===- Optimizer.cpp - the whole training step ----------------------------===//
//
// Wraps the gradient function in a training step: the gradients' global
// norm (a result, logged by the driver), clipping by it and the SGD or
// AdamW update, with hyperparameters (clip_norm included) as run-time
// arguments. (Gradient accumulation over micro-batches is dist-partition's
// micro-batch axis.)
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Dialect/Tsr/Transforms/Passes.h"
#include "tessera/Interfaces/CostInterface.h"

#include "FindFunction.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <cmath>

namespace tessera::tsr {
#define GEN_PASS_DEF_TSROPTIMIZER
#include "tessera/Dialect/Tsr/Transforms/Passes.h.inc"
} // namespace tessera::tsr

using namespace mlir;
using namespace tessera;
using namespace tessera::tsr;

namespace {

Value scalarF32(OpBuilder &b, Location loc, double v) {
  auto t = RankedTensorType::get({}, b.getF32Type());
  return ConstantOp::create(b, loc, t, DenseElementsAttr::get(t, float(v)));
}

/// Converts a rank-0 f32 hyperparameter to `like`'s element type.
Value hyperLike(OpBuilder &b, Location loc, Value hyper, Value like) {
  Type e = cast<RankedTensorType>(like.getType()).getElementType();
  if (e.isF32())
    return hyper;
  return CastOp::create(b, loc, RankedTensorType::get({}, e), hyper);
}

struct OptimizerPass : public tsr::impl::TsrOptimizerBase<OptimizerPass> {
  using TsrOptimizerBase::TsrOptimizerBase;

  void runOnOperation() override {
    if (optimizer != "adamw" && optimizer != "sgd") {
      getOperation().emitError("tsr-optimizer: unknown optimizer '")
          << optimizer << "' (expected adamw or sgd)";
      return signalPassFailure();
    }
    // Negative or NaN would silently mean "no clipping" below (clipNorm > 0
    // is false), and a value beyond f32 (the norm's type) would clip
    // nothing: all are mistakes.
    if (!std::isfinite(static_cast<float>(clipNorm)) || clipNorm < 0) {
      getOperation().emitError("tsr-optimizer: clip-norm must be a finite "
                               "f32 number >= 0 (0: no clipping), got ")
          << double(clipNorm);
      return signalPassFailure();
    }
    func::FuncOp grad = findGradFn();
    if (!grad || failed(build(grad)))
      return signalPassFailure();
    // The model FLOPs of a step: the gradient function's forward and
    // backward ops (the update's elementwise work is not model FLOPs).
    double flops = 0;
    grad.walk([&](Operation *op) { flops += tessera::flopsOf(op); });
    setAttr<Tsr::FlopsPerStepAttrHelper>(
        getOperation(), FloatAttr::get(Float64Type::get(&getContext()), flops));
  }

  func::FuncOp findGradFn() {
    return findFunction(
        getOperation(), "tsr-optimizer", funcName,
        [](func::FuncOp f) {
          return f.getNumResults() >= 2 &&
                 f.getResultAttr(1, Tsr::GradAttrHelper::getNameStr());
        },
        "several gradient functions; choose one with func=<name>",
        "no function with tsr.grad results (run tsr-autodiff first)");
  }

  LogicalResult build(func::FuncOp grad) {
    MLIRContext *ctx = &getContext();
    Location loc = grad.getLoc();
    bool adamw = optimizer == "adamw";

    // Classify the gradient function's arguments.
    struct Arg {
      unsigned index;
      Type type;
      Attribute name;
    };
    // `params` are the trained (float) parameters, in the order of the
    // gradient results; `frozen` are integer parameters, passed through.
    SmallVector<Arg> params, frozen, inputs;
    for (unsigned i = 0; i < grad.getNumArguments(); ++i) {
      Type t = grad.getArgumentTypes()[i];
      auto name = grad.getArgAttr(i, Tsr::ParamAttrHelper::getNameStr());
      if (name && isa<FloatType>(cast<RankedTensorType>(t).getElementType()))
        params.push_back({i, t, name});
      else if (name)
        frozen.push_back({i, t, name});
      else if (auto name =
                   grad.getArgAttr(i, Tsr::InputAttrHelper::getNameStr()))
        inputs.push_back({i, t, name});
      else
        return grad.emitError("argument ")
               << i << " is neither tsr.param nor tsr.input";
    }
    if (grad.getNumResults() != params.size() + 1)
      return grad.emitError("expects the loss and one gradient per parameter "
                            "as results");
    // The training step's signature.
    SmallVector<Type> argTypes;
    SmallVector<DictionaryAttr> argAttrs;
    auto attr = [&](StringRef key, Attribute value) {
      return DictionaryAttr::get(
          ctx, {NamedAttribute(StringAttr::get(ctx, key), value)});
    };
    auto str = [&](const Twine &s) { return StringAttr::get(ctx, s); };
    for (const Arg &p : params) {
      argTypes.push_back(p.type);
      argAttrs.push_back(attr(Tsr::ParamAttrHelper::getNameStr(), p.name));
    }
    for (const Arg &p : frozen) {
      argTypes.push_back(p.type);
      argAttrs.push_back(attr(Tsr::ParamAttrHelper::getNameStr(), p.name));
    }
    SmallVector<std::string> stateNames;
    if (adamw)
      for (const char *moment : {"m", "v"})
        for (const Arg &p : params) {
          argTypes.push_back(p.type);
          stateNames.push_back(std::string("adamw.") + moment + "/" +
                               cast<StringAttr>(p.name).str());
          argAttrs.push_back(
              attr(Tsr::StateAttrHelper::getNameStr(), str(stateNames.back())));
        }
    for (const Arg &in : inputs) {
      argTypes.push_back(in.type);
      argAttrs.push_back(attr(Tsr::InputAttrHelper::getNameStr(), in.name));
    }
    auto f32 = RankedTensorType::get({}, Float32Type::get(ctx));
    SmallVector<StringRef> hyperNames =
        adamw ? SmallVector<StringRef>{"lr",  "beta1",        "beta2",
                                       "eps", "weight_decay", "clip_norm"}
              : SmallVector<StringRef>{"lr", "weight_decay", "clip_norm"};
    for (StringRef h : hyperNames) {
      argTypes.push_back(f32);
      SmallVector<NamedAttribute> attrs{NamedAttribute(
          StringAttr::get(ctx, Tsr::HyperAttrHelper::getNameStr()), str(h))};
      // The run's --clip-norm overrides the compiler's.
      if (h == "clip_norm")
        attrs.push_back(NamedAttribute(
            StringAttr::get(ctx, Tsr::HyperDefaultAttrHelper::getNameStr()),
            FloatAttr::get(Float64Type::get(ctx), clipNorm)));
      argAttrs.push_back(DictionaryAttr::get(ctx, attrs));
    }
    argTypes.push_back(RankedTensorType::get({}, IntegerType::get(ctx, 64)));
    argAttrs.push_back(
        attr(Tsr::StepAttrHelper::getNameStr(), UnitAttr::get(ctx)));

    Type lossType = grad.getResultTypes()[0];
    SmallVector<Type> resultTypes{lossType};
    SmallVector<DictionaryAttr> resultAttrs{
        attr(Tsr::LossAttrHelper::getNameStr(), UnitAttr::get(ctx))};
    resultTypes.push_back(f32);
    resultAttrs.push_back(
        attr(Tsr::GradNormAttrHelper::getNameStr(), UnitAttr::get(ctx)));
    for (const Arg &p : params) {
      resultTypes.push_back(p.type);
      resultAttrs.push_back(attr(Tsr::ParamAttrHelper::getNameStr(), p.name));
    }
    for (auto [i, name] : llvm::enumerate(stateNames)) {
      resultTypes.push_back(params[i % params.size()].type);
      resultAttrs.push_back(
          attr(Tsr::StateAttrHelper::getNameStr(), str(name)));
    }

    OpBuilder mb(grad);
    mb.setInsertionPointAfter(grad);
    // The name is for readers (and the emitted C++); passes find the step
    // by its tsr.train_step attribute.
    auto step =
        func::FuncOp::create(mb, loc, "train_step_" + optimizer.getValue(),
                             FunctionType::get(ctx, argTypes, resultTypes));
    setAttr<Tsr::TrainStepAttrHelper>(step, StringAttr::get(ctx, optimizer));
    step.setAllArgAttrs(argAttrs);
    step.setAllResultAttrs(resultAttrs);
    Block *entry = step.addEntryBlock();
    OpBuilder b = OpBuilder::atBlockBegin(entry);

    unsigned next = 0;
    SmallVector<Value> paramValues, frozenValues, mValues, vValues, inputValues;
    for (size_t i = 0; i < params.size(); ++i)
      paramValues.push_back(entry->getArgument(next++));
    for (size_t i = 0; i < frozen.size(); ++i)
      frozenValues.push_back(entry->getArgument(next++));
    if (adamw) {
      for (size_t i = 0; i < params.size(); ++i)
        mValues.push_back(entry->getArgument(next++));
      for (size_t i = 0; i < params.size(); ++i)
        vValues.push_back(entry->getArgument(next++));
    }
    for (size_t i = 0; i < inputs.size(); ++i)
      inputValues.push_back(entry->getArgument(next++));
    llvm::StringMap<Value> hyper;
    for (StringRef h : hyperNames)
      hyper[h] = entry->getArgument(next++);
    Value stepValue = entry->getArgument(next++);

    // The gradients of the whole batch.
    SmallVector<Value> callArgs(grad.getNumArguments());
    for (auto [i, p] : llvm::enumerate(params))
      callArgs[p.index] = paramValues[i];
    for (auto [i, p] : llvm::enumerate(frozen))
      callArgs[p.index] = frozenValues[i];
    for (auto [i, in] : llvm::enumerate(inputs))
      callArgs[in.index] = inputValues[i];
    auto call = func::CallOp::create(b, loc, grad, callArgs);
    Value loss = call.getResult(0);
    SmallVector<Value> grads;
    for (size_t i = 0; i < params.size(); ++i)
      grads.push_back(call.getResult(i + 1));

    // The global norm, and clipping by it as torch.nn.utils.clip_grad_norm_
    // when the run's clip_norm is > 0: the gradients are scaled by
    // min(1, clip_norm / (norm + 1e-6)). With clip_norm 0 the scale is
    // exactly 1 and the gradients pass unchanged (x * 1 == x).
    Value total;
    for (Value g : grads) {
      auto t = cast<RankedTensorType>(g.getType());
      SmallVector<int64_t> all;
      for (int64_t d = 0; d < t.getRank(); ++d)
        all.push_back(d);
      Value sq = MulOp::create(b, loc, g, g);
      if (!all.empty())
        sq = ReduceSumOp::create(b, loc, sq, all, /*keepdims=*/false);
      if (!t.getElementType().isF32())
        sq = CastOp::create(b, loc, f32, sq);
      total = total ? AddOp::create(b, loc, total, sq).getResult() : sq;
    }
    Value norm = SqrtOp::create(b, loc, total ? total : scalarF32(b, loc, 0));
    Value clip = hyper["clip_norm"];
    Value coef = DivOp::create(
        b, loc, clip, AddOp::create(b, loc, norm, scalarF32(b, loc, 1e-6)));
    Value one = scalarF32(b, loc, 1.0);
    Value below = CompareOp::create(b, loc, ComparePredicate::lt, coef, one);
    Value clipping = CompareOp::create(b, loc, ComparePredicate::gt, clip,
                                       scalarF32(b, loc, 0.0));
    Value scale = WhereOp::create(
        b, loc, clipping, WhereOp::create(b, loc, below, coef, one), one);
    for (Value &g : grads)
      g = MulOp::create(b, loc, g, hyperLike(b, loc, scale, g));

    // The update.
    SmallVector<Value> results{loss, norm}, newM, newV;
    for (size_t i = 0; i < params.size(); ++i) {
      Value p = paramValues[i], g = grads[i];
      if (!adamw) {
        results.push_back(SgdUpdateOp::create(b, loc, p, g, hyper["lr"],
                                              hyper["weight_decay"]));
        continue;
      }
      auto upd = AdamwUpdateOp::create(
          b, loc, p, g, mValues[i], vValues[i], stepValue, hyper["lr"],
          hyper["beta1"], hyper["beta2"], hyper["eps"], hyper["weight_decay"]);
      results.push_back(upd.getNewParam());
      newM.push_back(upd.getNewM());
      newV.push_back(upd.getNewV());
    }
    llvm::append_range(results, newM);
    llvm::append_range(results, newV);
    func::ReturnOp::create(b, loc, results);
    // Mark the update (clipping and optimizer ops) for later passes.
    UnitAttr unit = UnitAttr::get(ctx);
    for (Operation &op : *entry)
      if (!isa<func::CallOp, func::ReturnOp>(op))
        op.setAttr(Tsr::UpdateAttrHelper::getNameStr(), unit);
    return success();
  }
};

} // namespace
