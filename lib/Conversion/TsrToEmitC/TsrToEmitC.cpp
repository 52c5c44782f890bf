//===- TsrToEmitC.cpp - tsr functions to EmitC runtime calls --------------===//
//
// Lowers each tsr function to a C++ function of straight-line calls into the
// Tessera runtime (runtime/include/tessera/runtime/Runtime.h), keeping the
// ONNX node names as comments and releasing tensors after their last use.
// Lowering is a direct walk rather than a dialect conversion: the program is
// one block of value-semantic ops, each mapping to exactly one call, and the
// release points need a view of the whole emitted function.
//
//===----------------------------------------------------------------------===//

#include "tessera/Conversion/OutlinedConstants.h"
#include "tessera/Conversion/Passes.h"
#include "tessera/Dialect/Dist/IR/DistOps.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <sstream>

namespace tessera {
#define GEN_PASS_DEF_CONVERTTSRTOEMITC
#include "tessera/Conversion/Passes.h.inc"
} // namespace tessera

using namespace mlir;
using namespace tessera;
using namespace tessera::tsr;

namespace {

constexpr const char *kTensor = "tessera::rt::Tensor";

std::string joinInts(ArrayRef<int64_t> values) {
  std::string s;
  for (auto [i, v] : llvm::enumerate(values))
    s += (i ? ", " : "") + std::to_string(v);
  return s;
}

/// A C++ string literal.
std::string cppString(StringRef s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

/// The runtime's name for an element type, or "" if it has none.
std::string dtypeName(Type t) {
  if (t.isF32())
    return "f32";
  if (t.isF64())
    return "f64";
  if (t.isInteger(64))
    return "i64";
  if (t.isInteger(32))
    return "i32";
  if (t.isInteger(1))
    return "i1";
  return "";
}

/// A readable name for a location: the ONNX node name where there is one.
std::string locationText(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    for (Location inner : fused.getLocations()) {
      std::string s = locationText(inner);
      if (!s.empty())
        return s;
    }
    return "";
  }
  if (auto site = dyn_cast<CallSiteLoc>(loc))
    return locationText(site.getCallee());
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    if (file.getLine() > 0)
      return llvm::formatv("{0}:{1}",
                           llvm::sys::path::filename(file.getFilename()),
                           file.getLine())
          .str();
  return "";
}

/// The role of a step-function argument or result, from its attributes.
struct Role {
  std::string role, name;
};

std::optional<Role> roleOf(DictionaryAttr attrs) {
  if (!attrs)
    return std::nullopt;
  auto str = [&](StringRef key) -> std::optional<std::string> {
    if (auto s = attrs.getAs<StringAttr>(key))
      return s.str();
    return std::nullopt;
  };
  if (auto n = str(Tsr::ParamAttrHelper::getNameStr()))
    return Role{"Param", *n};
  if (auto n = str(Tsr::StateAttrHelper::getNameStr()))
    return Role{"State", *n};
  if (auto n = str(Tsr::InputAttrHelper::getNameStr()))
    return Role{"Input", *n};
  if (auto n = str(Tsr::HyperAttrHelper::getNameStr()))
    return Role{"Hyper", *n};
  if (attrs.get(Tsr::StepAttrHelper::getNameStr()))
    return Role{"Step", "step"};
  if (attrs.get(Tsr::LossAttrHelper::getNameStr()))
    return Role{"Loss", "loss"};
  if (auto n = str(Tsr::GradAttrHelper::getNameStr()))
    return Role{"Grad", *n};
  return std::nullopt;
}

class FunctionLowering {
public:
  /// `outlineAbove` < 0: no constants file, every constant inline.
  FunctionLowering(func::FuncOp fn, int64_t maxInlineConstant,
                   int64_t outlineAbove)
      : fn(fn), ctx(fn.getContext()), b(fn),
        maxInlineConstant(maxInlineConstant), outlineAbove(outlineAbove) {
    tensorType = emitc::OpaqueType::get(ctx, kTensor);
  }

  /// Whether the lowered function reads the constants file.
  bool readsConstantsFile() const { return outlined; }

  LogicalResult run() {
    auto argsType =
        emitc::OpaqueType::get(ctx, "const std::vector<tessera::rt::Tensor>&");
    auto resultsType =
        emitc::OpaqueType::get(ctx, "std::vector<tessera::rt::Tensor>&");
    b.setInsertionPoint(fn);
    auto efn = emitc::FuncOp::create(
        b, fn.getLoc(), fn.getSymName(),
        FunctionType::get(ctx, {argsType, resultsType}, {}));
    Block *entry = efn.addEntryBlock();
    b.setInsertionPointToStart(entry);
    Value args = entry->getArgument(0), results = entry->getArgument(1);

    for (BlockArgument arg : fn.getArguments()) {
      Value index =
          emitc::LiteralOp::create(b, fn.getLoc(), emitc::SizeTType::get(ctx),
                                   std::to_string(arg.getArgNumber()));
      Value lvalue = emitc::SubscriptOp::create(
          b, fn.getLoc(), emitc::LValueType::get(tensorType), args,
          ValueRange{index});
      map[arg] = emitc::LoadOp::create(b, fn.getLoc(), tensorType, lvalue);
    }

    for (Operation &op : fn.getBody().front()) {
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        // The caller sizes `results` (one slot per result).
        for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
          Value index = emitc::LiteralOp::create(
              b, op.getLoc(), emitc::SizeTType::get(ctx), std::to_string(i));
          Value slot = emitc::SubscriptOp::create(
              b, op.getLoc(), emitc::LValueType::get(tensorType), results,
              ValueRange{index});
          emitc::AssignOp::create(b, op.getLoc(), slot, lookup(v));
        }
        continue;
      }
      if (isa<func::CallOp>(op))
        return op.emitError("convert-tsr-to-emitc: inline calls before "
                            "emission");
      Dialect *d = op.getDialect();
      if (!d || (d->getNamespace() != "tsr" && d->getNamespace() != "dist"))
        return op.emitError("convert-tsr-to-emitc: no lowering for '")
               << op.getName() << "'";
      std::string where = locationText(op.getLoc());
      std::string what = op.getName().getStringRef().str();
      if (auto rvd = getAttr<Dist::RvdAttrHelper>(&op))
        what += " (" + rvd.str() + ")";
      verbatim(op.getLoc(), "// " + (where.empty() ? "" : where + ": ") + what);
      if (failed(lower(&op)))
        return failure();
    }
    emitc::ReturnOp::create(b, fn.getLoc(), Value());
    insertReleases(efn);
    return success();
  }

private:
  func::FuncOp fn;
  MLIRContext *ctx;
  OpBuilder b;
  int64_t maxInlineConstant;
  int64_t outlineAbove;
  /// Whether a constant was read from the constants file.
  bool outlined = false;
  /// The rank-value tables declared so far in this function.
  int64_t rankTables = 0;
  Type tensorType;
  DenseMap<Value, Value> map;

  Value lookup(Value v) { return map.lookup(v); }

  void verbatim(Location loc, StringRef text, ValueRange fmtArgs = {}) {
    std::string escaped = text.str();
    if (fmtArgs.empty()) {
      // A verbatim without arguments is not a format string: no escaping.
      emitc::VerbatimOp::create(b, loc, b.getStringAttr(escaped), ValueRange{});
      return;
    }
    emitc::VerbatimOp::create(b, loc, b.getStringAttr(escaped), fmtArgs);
  }

  Attribute opaque(const Twine &text) {
    return emitc::OpaqueAttr::get(ctx, text.str());
  }
  Attribute i64(int64_t v) { return b.getI64IntegerAttr(v); }
  Attribute f64(double v) { return b.getF64FloatAttr(v); }
  Attribute boolean(bool v) { return opaque(v ? "true" : "false"); }
  Attribute ints(ArrayRef<int64_t> v) {
    return opaque("std::vector<int64_t>{" + joinInts(v) + "}");
  }
  /// A rank-variant argument (RankVariantOpInterface): the op's own value,
  /// or in a function shared by several ranks, where the values differ
  /// (dist.rank_values), a table of one value per rank declared before the
  /// call and indexed at run time by the running rank's position in the
  /// program's ranks.
  Attribute perRank(Operation *op, StringRef name, Attribute own) {
    auto values = getAttr<Dist::RankValuesAttrHelper>(op);
    auto rows = values ? values.getAs<ArrayAttr>(name) : ArrayAttr();
    if (!rows)
      return own;
    std::string table = "kRankValues" + std::to_string(rankTables++);
    std::string text = "static const ";
    if (isa<DenseI64ArrayAttr>(rows[0])) {
      text += "std::vector<int64_t> " + table + "[] = {";
      for (auto [i, row] : llvm::enumerate(rows))
        text += std::string(i ? ", " : "") + "{" +
                joinInts(cast<DenseI64ArrayAttr>(row).asArrayRef()) + "}";
    } else {
      text += "int64_t " + table + "[] = {";
      for (auto [i, row] : llvm::enumerate(rows))
        text += std::string(i ? ", " : "") +
                std::to_string(cast<IntegerAttr>(row).getInt());
    }
    verbatim(op->getLoc(), text + "};");
    return opaque("tessera::rt::rankValue(" + table + ")");
  }
  Attribute ints(Operation *op, StringRef name, ArrayRef<int64_t> v) {
    return perRank(op, name, ints(v));
  }
  Attribute i64(Operation *op, StringRef name, int64_t v) {
    return perRank(op, name, i64(v));
  }
  Attribute shape(Type t) {
    return opaque("tessera::rt::Shape{" +
                  joinInts(cast<RankedTensorType>(t).getShape()) + "}");
  }
  FailureOr<Attribute> dtype(Operation *op, Type t) {
    Type e = cast<RankedTensorType>(t).getElementType();
    std::string name = dtypeName(e);
    if (name.empty())
      return op->emitError("convert-tsr-to-emitc: the CPU runtime has no ")
             << e << " tensors";
    return opaque("tessera::rt::DType::" + name);
  }

  /// One runtime call: `args` lists call arguments, where an operand is
  /// written as its index into `operands` (an IndexAttr).
  Value call(Operation *op, StringRef callee, ValueRange operands,
             ArrayRef<Attribute> args, Type resultType = {}) {
    SmallVector<Value> mapped;
    for (Value v : operands)
      mapped.push_back(lookup(v));
    auto c = emitc::CallOpaqueOp::create(
        b, op->getLoc(), TypeRange{resultType ? resultType : tensorType},
        b.getStringAttr(("tessera::rt::" + callee).str()), mapped,
        b.getArrayAttr(args), ArrayAttr());
    return c.getResult(0);
  }

  Attribute operand(unsigned i) { return b.getIndexAttr(i); }

  Attribute reduceKind(dist::ReductionKind kind) {
    return opaque("tessera::rt::ReduceKind::" +
                  dist::stringifyReductionKind(kind));
  }

  /// A call returning one tensor, with the operands first then `extra`.
  LogicalResult simple(Operation *op, StringRef callee,
                       ArrayRef<Attribute> extra = {}) {
    SmallVector<Attribute> args;
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      args.push_back(operand(i));
    llvm::append_range(args, extra);
    map[op->getResult(0)] = call(op, callee, op->getOperands(), args);
    return success();
  }

  /// A call returning a std::tuple of tensors, unpacked with std::get.
  LogicalResult tuple(Operation *op, StringRef callee, ValueRange operands,
                      ArrayRef<Attribute> args) {
    std::string tupleType = "std::tuple<";
    for (unsigned i = 0; i < op->getNumResults(); ++i)
      tupleType += std::string(i ? ", " : "") + kTensor;
    tupleType += ">";
    Value t = call(op, callee, operands, args,
                   emitc::OpaqueType::get(ctx, tupleType));
    for (unsigned i = 0; i < op->getNumResults(); ++i) {
      auto get = emitc::CallOpaqueOp::create(
          b, op->getLoc(), TypeRange{tensorType}, "std::get", ValueRange{t},
          ArrayAttr(), b.getArrayAttr({b.getI32IntegerAttr(i)}));
      map[op->getResult(i)] = get.getResult(0);
    }
    return success();
  }

  LogicalResult lowerConstant(ConstantOp op) {
    auto type = cast<RankedTensorType>(op.getType());
    auto dt = dtype(op, type);
    if (failed(dt))
      return failure();
    auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
    if (!dense)
      return op.emitError("convert-tsr-to-emitc: only dense constants");
    auto scalarText = [&](Attribute a) -> std::string {
      if (auto f = dyn_cast<FloatAttr>(a)) {
        double v = f.getValueAsDouble();
        if (std::isinf(v))
          return v > 0 ? "INFINITY" : "-INFINITY";
        if (std::isnan(v))
          return "NAN";
        std::ostringstream os;
        os.precision(17);
        os << v;
        return os.str();
      }
      if (auto i = dyn_cast<IntegerAttr>(a))
        return type.getElementType().isInteger(1)
                   ? std::to_string(i.getValue().getBoolValue())
                   : std::to_string(i.getValue().getSExtValue());
      return "0";
    };
    if (dense.isSplat()) {
      map[op.getResult()] =
          call(op, "full", {},
               {shape(type), *dt,
                opaque(scalarText(dense.getSplatValue<Attribute>()))});
      return success();
    }
    if (outlineAbove >= 0 && isOutlinedConstant(dense, outlineAbove)) {
      outlined = true;
      map[op.getResult()] = call(
          op, "constant", {}, {opaque(cppString(outlinedConstantKey(dense)))});
      return success();
    }
    if (dense.getNumElements() > maxInlineConstant)
      return op.emitError("convert-tsr-to-emitc: constant of ")
             << dense.getNumElements()
             << " elements exceeds max-inline-constant=" << maxInlineConstant;
    std::string values = "std::vector<double>{";
    int64_t i = 0;
    for (Attribute a : dense.getValues<Attribute>())
      values += (i++ ? ", " : "") + scalarText(a);
    values += "}";
    map[op.getResult()] =
        call(op, "fromValues", {}, {shape(type), *dt, opaque(values)});
    return success();
  }

  LogicalResult lower(Operation *op) {
    auto ln = [&](auto o) { return simple(o, o->getName().stripDialect()); };
    return llvm::TypeSwitch<Operation *, LogicalResult>(op)
        .Case<NegOp, ExpOp, LogOp, SqrtOp, RsqrtOp, ErfOp, TanhOp, ReluOp, SigmoidOp,
              SinOp, CosOp,
              AddOp, SubOp, MulOp, DivOp, PowOp, WhereOp, MatmulOp>(ln)
        .Case([&](GeluOp o) {
          return simple(
              o, "gelu",
              {boolean(o.getApproximate() == GeluApproximation::tanh)});
        })
        .Case([&](CompareOp o) {
          std::string pred = stringifyComparePredicate(o.getPredicate()).str();
          map[o.getResult()] = call(o, "compare", o->getOperands(),
                                    {opaque("tessera::rt::Compare::" + pred),
                                     operand(0), operand(1)});
          return success();
        })
        .Case([&](CastOp o) {
          auto dt = dtype(o, o.getType());
          if (failed(dt))
            return failure();
          return simple(o, "cast", {*dt});
        })
        .Case([&](ConstantOp o) { return lowerConstant(o); })
        .Case([&](DropoutOp o) {
          return tuple(o, "dropout", o->getOperands(),
                       {operand(0), f64(o.getRatio().convertToDouble()),
                        i64(o.getSeed())});
        })
        .Case([&](SoftmaxOp o) {
          return simple(o, "softmax", {i64(o.getAxis())});
        })
        .Case([&](LogSoftmaxOp o) {
          return simple(o, "log_softmax", {i64(o.getAxis())});
        })
        .Case([&](LayerNormOp o) {
          SmallVector<Attribute> args{operand(0), operand(1)};
          args.push_back(o.getBias() ? operand(2)
                                     : opaque("tessera::rt::Tensor()"));
          args.push_back(i64(o.getAxis()));
          args.push_back(f64(o.getEpsilon().convertToDouble()));
          return tuple(o, "layer_norm", o->getOperands(), args);
        })
        .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>([&](auto o) {
          return simple(o, o->getName().stripDialect(),
                        {ints(o.getAxes()), boolean(o.getKeepdims())});
        })
        .Case([&](ReshapeOp o) {
          return simple(o, "reshape", {shape(o.getType())});
        })
        .Case([&](TransposeOp o) {
          return simple(o, "transpose", {ints(o.getPerm())});
        })
        .Case([&](BroadcastToOp o) {
          return simple(o, "broadcast_to", {shape(o.getType())});
        })
        .Case([&](SliceOp o) {
          return simple(o, "slice",
                        {ints(o, "starts", o.getStarts()),
                         ints(o, "limits", o.getLimits()), ints(o.getSteps())});
        })
        .Case([&](SplitOp o) {
          auto vecType =
              emitc::OpaqueType::get(ctx, "std::vector<tessera::rt::Tensor>");
          Value pieces =
              call(o, "split", o->getOperands(),
                   {operand(0), i64(o.getAxis()), ints(o.getSizes())}, vecType);
          for (auto [i, r] : llvm::enumerate(o.getResults())) {
            Value index = emitc::LiteralOp::create(
                b, o.getLoc(), emitc::SizeTType::get(ctx), std::to_string(i));
            Value lv = emitc::SubscriptOp::create(
                b, o.getLoc(), emitc::LValueType::get(tensorType), pieces,
                ValueRange{index});
            map[r] = emitc::LoadOp::create(b, o.getLoc(), tensorType, lv);
          }
          return success();
        })
        .Case([&](ConcatOp o) {
          // tensorList(a, b, ...) builds the std::vector<Tensor> operand.
          auto list = emitc::CallOpaqueOp::create(
              b, o.getLoc(),
              TypeRange{emitc::OpaqueType::get(
                  ctx, "std::vector<tessera::rt::Tensor>")},
              "tessera::rt::tensorList",
              llvm::map_to_vector(o.getInputs(),
                                  [&](Value v) { return lookup(v); }),
              ArrayAttr(), ArrayAttr());
          auto c = emitc::CallOpaqueOp::create(
              b, o.getLoc(), TypeRange{tensorType}, "tessera::rt::concat",
              ValueRange{list.getResult(0)},
              b.getArrayAttr({operand(0), i64(o.getAxis())}), ArrayAttr());
          map[o.getResult()] = c.getResult(0);
          return success();
        })
        .Case(
            [&](GatherOp o) { return simple(o, "gather", {i64(o.getAxis())}); })
        .Case([&](SoftmaxCrossEntropyOp o) {
          std::string red = stringifyLossReduction(o.getReduction()).str();
          return simple(o, "softmax_cross_entropy",
                        {i64(o.getIgnoreIndex()),
                         opaque("tessera::rt::Reduction::" + red)});
        })
        .Case([&](SoftmaxGradOp o) {
          return simple(o, "softmax_grad", {i64(o.getAxis())});
        })
        .Case([&](LogSoftmaxGradOp o) {
          return simple(o, "log_softmax_grad", {i64(o.getAxis())});
        })
        .Case([&](GeluGradOp o) {
          return simple(
              o, "gelu_grad",
              {boolean(o.getApproximate() == GeluApproximation::tanh)});
        })
        .Case([&](LayerNormGradOp o) {
          SmallVector<Attribute> args;
          for (unsigned i = 0; i < 5; ++i)
            args.push_back(operand(i));
          args.push_back(i64(o.getAxis()));
          return tuple(o, "layer_norm_grad", o->getOperands(), args);
        })
        .Case([&](SoftmaxCrossEntropyGradOp o) {
          std::string red = stringifyLossReduction(o.getReduction()).str();
          return simple(o, "softmax_cross_entropy_grad",
                        {i64(o.getIgnoreIndex()),
                         opaque("tessera::rt::Reduction::" + red)});
        })
        .Case([&](EmbeddingGradOp o) {
          return simple(o, "embedding_grad", {shape(o.getType())});
        })
        .Case([&](SgdUpdateOp o) { return simple(o, "sgd_update"); })
        .Case([&](AdamwUpdateOp o) {
          SmallVector<Attribute> args;
          for (unsigned i = 0; i < o->getNumOperands(); ++i)
            args.push_back(operand(i));
          return tuple(o, "adamw_update", o->getOperands(), args);
        })
        .Case([&](dist::AllReduceOp o) {
          return simple(
              o, "all_reduce",
              {ints(o, "ranks", o.getRanks()), reduceKind(o.getKind())});
        })
        .Case([&](dist::AllGatherOp o) {
          return simple(o, "all_gather",
                        {ints(o, "ranks", o.getRanks()), i64(o.getDim())});
        })
        .Case([&](dist::ReduceScatterOp o) {
          return simple(o, "reduce_scatter",
                        {ints(o, "ranks", o.getRanks()), i64(o.getDim()),
                         reduceKind(o.getKind())});
        })
        .Case([&](dist::AllToAllOp o) {
          return simple(o, "all_to_all",
                        {ints(o, "ranks", o.getRanks()), i64(o.getSplitDim()),
                         i64(o.getConcatDim())});
        })
        .Case([&](dist::BroadcastOp o) {
          return simple(
              o, "broadcast",
              {ints(o, "ranks", o.getRanks()), i64(o, "root", o.getRoot())});
        })
        .Case([&](dist::SendOp o) {
          emitc::CallOpaqueOp::create(
              b, o.getLoc(), TypeRange{}, "tessera::rt::send",
              ValueRange{lookup(o.getInput())},
              b.getArrayAttr({operand(0), i64(o, "peer", o.getPeer()),
                              i64(o, "tag", o.getTag())}),
              ArrayAttr());
          return success();
        })
        .Case([&](dist::RecvOp o) {
          auto dt = dtype(o, o.getType());
          if (failed(dt))
            return failure();
          map[o.getResult()] =
              call(o, "recv", {},
                   {shape(o.getType()), *dt, i64(o, "peer", o.getPeer()),
                    i64(o, "tag", o.getTag())});
          return success();
        })
        .Default([&](Operation *o) {
          return o->emitError("convert-tsr-to-emitc: no lowering for '")
                 << o->getName() << "'";
        });
  }

  /// Drops each tensor (or tuple/vector of tensors) after its last use, so
  /// the runtime's allocator can reuse its storage.
  void insertReleases(emitc::FuncOp efn) {
    Block &body = efn.getBody().front();
    SmallVector<std::pair<Operation *, Value>> releases;
    for (Operation &op : body) {
      for (Value v : op.getResults()) {
        auto type = dyn_cast<emitc::OpaqueType>(v.getType());
        if (!type)
          continue;
        // The last user in block order; a subscript's load counts as its use.
        Operation *last = &op;
        for (Operation *user : v.getUsers()) {
          Operation *u = user;
          if (isa<emitc::SubscriptOp>(u))
            for (Operation *load : u->getUsers())
              if (last->isBeforeInBlock(load))
                last = load;
          if (last->isBeforeInBlock(u))
            last = u;
        }
        releases.push_back({last, v});
      }
    }
    for (auto [after, v] : releases) {
      if (isa<emitc::ReturnOp>(after))
        continue;
      OpBuilder rb(after->getContext());
      rb.setInsertionPointAfter(after);
      StringRef type = cast<emitc::OpaqueType>(v.getType()).getValue();
      const char *text = type == kTensor ? "{}.release();" : "{} = {{};";
      emitc::VerbatimOp::create(rb, v.getLoc(), rb.getStringAttr(text),
                                ValueRange{v});
    }
  }
};

/// For an integer input of a step function: the exclusive upper bound of
/// its values, from the ops that index with it (gather's data dimension,
/// cross-entropy's classes, embedding_grad's table rows), following the
/// ops that only move values (reshape, slice, split, transpose, concat,
/// cast). 0 when nothing bounds it. The driver checks every batch against
/// it, so a token outside the vocabulary is reported with its file offset
/// rather than by a kernel.
int64_t indexBound(func::FuncOp f, unsigned argNumber) {
  int64_t bound = 0;
  auto bind = [&](int64_t b) {
    if (b > 0 && (bound == 0 || b < bound))
      bound = b;
  };
  SmallVector<Value> work{f.getArgument(argNumber)};
  llvm::DenseSet<Value> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (auto g = dyn_cast<GatherOp>(user)) {
        if (use.get() == g.getIndices()) {
          auto data = cast<RankedTensorType>(g.getData().getType());
          int64_t axis = g.getAxis();
          if (axis < 0)
            axis += data.getRank();
          if (axis >= 0 && axis < data.getRank())
            bind(data.getDimSize(axis));
        }
      } else if (auto ce = dyn_cast<SoftmaxCrossEntropyOp>(user)) {
        if (use.get() == ce.getLabels())
          bind(cast<RankedTensorType>(ce.getLogits().getType())
                   .getShape()
                   .back());
      } else if (auto ceg = dyn_cast<SoftmaxCrossEntropyGradOp>(user)) {
        if (use.get() == ceg.getLabels())
          bind(cast<RankedTensorType>(ceg.getLogits().getType())
                   .getShape()
                   .back());
      } else if (auto eg = dyn_cast<EmbeddingGradOp>(user)) {
        if (use.get() == eg.getIndices())
          bind(cast<RankedTensorType>(eg.getType()).getDimSize(0));
      } else if (isa<ReshapeOp, SliceOp, SplitOp, TransposeOp, ConcatOp,
                     CastOp>(user)) {
        for (Value r : user->getResults())
          work.push_back(r);
      }
    }
  }
  return bound;
}

/// The Program table and main() for the train_step_* functions.
LogicalResult emitProgram(ModuleOp module, ArrayRef<func::FuncOp> steps,
                          func::FuncOp gradStep, StringRef model,
                          StringRef init, ArrayRef<int64_t> ranks,
                          int64_t worldSize, StringRef constants) {
  std::string text;
  llvm::raw_string_ostream os(text);
  auto specs = [&](func::FuncOp f, bool results) -> LogicalResult {
    unsigned n = results ? f.getNumResults() : f.getNumArguments();
    os << "    {\n";
    for (unsigned i = 0; i < n; ++i) {
      DictionaryAttr attrs =
          results ? f.getResultAttrDict(i) : f.getArgAttrDict(i);
      auto role = roleOf(attrs);
      if (!role)
        return f.emitError("convert-tsr-to-emitc: ")
               << (results ? "result " : "argument ") << i
               << " of a training step has no role attribute";
      auto type = cast<RankedTensorType>(results ? f.getResultTypes()[i]
                                                 : f.getArgumentTypes()[i]);
      os << "      {tessera::rt::Role::" << role->role << ", "
         << cppString(role->name)
         << ", tessera::rt::DType::" << dtypeName(type.getElementType())
         << ", {" << joinInts(type.getShape()) << "}";
      if (!results && role->role == "Input" &&
          isa<IntegerType>(type.getElementType()))
        if (int64_t bound = indexBound(f, i))
          os << ", /*bound=*/" << bound;
      os << "},\n";
    }
    os << "    },\n";
    return success();
  };
  os << "// The training steps of this program, for tessera::rt::runMain.\n";
  os << "static const tessera::rt::Program kProgram = {\n";
  os << "  " << cppString(model) << ",\n  " << cppString(init) << ",\n  {\n";
  for (func::FuncOp f : steps) {
    StringRef opt = getAttr<Tsr::TrainStepAttrHelper>(f).getValue();
    os << "   {" << cppString(opt) << ",\n";
    if (failed(specs(f, false)) || failed(specs(f, true)))
      return failure();
    os << "    &" << f.getSymName() << "},\n";
  }
  os << "  },\n";
  os << "  /*flopsPerStep=*/0.0,\n";
  if (gradStep) {
    os << "  {\"grad\",\n";
    if (failed(specs(gradStep, false)) || failed(specs(gradStep, true)))
      return failure();
    os << "   &" << gradStep.getSymName() << "},\n";
  } else {
    os << "  /*gradient=*/{},\n";
  }
  os << "  /*ranks=*/{" << joinInts(ranks) << "}, /*worldSize=*/" << worldSize
     << ",\n";
  if (!constants.empty())
    os << "  /*constants=*/" << cppString(constants) << ",\n";
  os << "};\n\n";
  os << "int main(int argc, char **argv) {\n"
        "  return tessera::rt::runMain(argc, argv, kProgram);\n}";
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  emitc::VerbatimOp::create(b, module.getLoc(), b.getStringAttr(os.str()),
                            ValueRange{});
  return success();
}

struct ConvertTsrToEmitCPass
    : public tessera::impl::ConvertTsrToEmitCBase<ConvertTsrToEmitCPass> {
  using ConvertTsrToEmitCBase::ConvertTsrToEmitCBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    emitc::IncludeOp::create(b, module.getLoc(), "tessera/runtime/Runtime.h",
                             /*is_standard_include=*/false);
    for (const char *header : {"cmath", "cstdint", "tuple", "vector"})
      emitc::IncludeOp::create(b, module.getLoc(), header,
                               /*is_standard_include=*/true);

    SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
    SmallVector<func::FuncOp> steps;
    func::FuncOp gradStep;
    if (outlineConstantsAbove < 0) {
      module.emitError("convert-tsr-to-emitc: outline-constants-above must "
                       "be >= 0, got ")
          << int64_t(outlineConstantsAbove);
      return signalPassFailure();
    }
    bool outlined = false;
    for (func::FuncOp f : funcs) {
      if (f.isExternal())
        continue;
      FunctionLowering lowering(
          f, maxInlineConstant,
          constantsFile.empty() ? -1 : int64_t(outlineConstantsAbove));
      if (failed(lowering.run()))
        return signalPassFailure();
      outlined |= lowering.readsConstantsFile();
      if (hasAttr<Tsr::TrainStepAttrHelper>(f))
        steps.push_back(f);
      else if (hasAttr<Tsr::GradStepAttrHelper>(f))
        gradStep = f;
    }
    if (emitMain && !steps.empty()) {
      std::string model = modelName;
      if (model.empty())
        if (auto src = getAttr<Tsr::SourceAttrHelper>(module))
          model = src.str();
      // A per-rank program (dist-partition's output) knows its rank, or
      // the ranks that share it.
      SmallVector<int64_t> ranks = dist::ranksOf(steps.front());
      if (ranks.empty())
        ranks.push_back(0);
      int64_t worldSize = 1;
      if (auto mesh = module->getAttrOfType<dist::MeshAttr>(
              Dist::MeshAttrHelper::getNameStr()))
        worldSize = mesh.numRanks();
      if (failed(emitProgram(module, steps, gradStep, model, initWeights, ranks,
                             worldSize,
                             outlined ? StringRef(constantsFile) : "")))
        return signalPassFailure();
    }
    for (func::FuncOp f : funcs)
      f.erase();
    // The plan's module attributes (dist.mesh, dist.pipeline, tsr.source)
    // described the functions just lowered; the emitted module is EmitC
    // alone, which any C++ translator reads.
    for (NamedAttribute a : llvm::to_vector(module->getDiscardableAttrs()))
      if (isa_and_nonnull<dist::DistDialect, tsr::TsrDialect>(
              a.getName().getReferencedDialect()))
        module->removeDiscardableAttr(a.getName());
  }
};

} // namespace
