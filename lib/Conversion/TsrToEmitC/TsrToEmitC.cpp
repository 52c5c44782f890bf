//===- TsrToEmitC.cpp - tsr functions to EmitC runtime calls --------------===//
//
// Lowers each function of tsr and dist ops to a C++ function of
// straight-line calls into the Tessera runtime
// (runtime/include/tessera/runtime/Runtime.h), keeping the ONNX node names
// as comments and releasing tensors after their last use.
//
// The ops themselves are lowered by the conversion patterns that their
// dialects provide through ConvertToEmitCPatternInterface (tsr's is here,
// dist's in lib/Conversion/DistToEmitC, extensions bring theirs); most are
// the common pattern of lib/Conversion/RuntimeCallToEmitC, which writes
// the call that each op's record describes. This pass builds what is not
// one op's business: the function frame (the step ABI), constants (inline
// literals or the constants file), the releases, and the Program table.
//
//===----------------------------------------------------------------------===//

#include "tessera/Conversion/TsrToEmitC.h"
#include "tessera/Conversion/OutlinedConstants.h"
#include "tessera/Conversion/Passes.h"
#include "tessera/Conversion/RuntimeCallToEmitC.h"
#include "tessera/Dialect/Dist/IR/DistAttrs.h"
#include "tessera/Dialect/Dist/IR/DistDialect.h"
#include "tessera/Dialect/Dist/IR/DistOps.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Interfaces/CostInterface.h"
#include "tessera/Layout/Rvd.h"

#include "mlir/Conversion/ConvertToEmitC/ToEmitCInterface.h"
#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/DialectConversion.h"
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
  if (attrs.get(Tsr::GradNormAttrHelper::getNameStr()))
    return Role{"GradNorm", "grad_norm"};
  if (auto n = str(Tsr::GradAttrHelper::getNameStr()))
    return Role{"Grad", *n};
  return std::nullopt;
}

/// A constant's element as a C++ literal.
std::string scalarText(Attribute a, Type elementType) {
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
    return elementType.isInteger(1)
               ? std::to_string(i.getValue().getBoolValue())
               : std::to_string(i.getValue().getSExtValue());
  return "0";
}

/// tsr.constant: `full` for a splat, a read of the constants file
/// (`outlineAbove` >= 0), or the values as literals (checked against
/// max-inline-constant by validateFunction).
class ConstantLowering : public OpConversionPattern<ConstantOp> {
public:
  ConstantLowering(const TypeConverter &converter, MLIRContext *ctx,
                   int64_t outlineAbove)
      : OpConversionPattern(converter, ctx), outlineAbove(outlineAbove) {}

  LogicalResult
  matchAndRewrite(ConstantOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    MLIRContext *ctx = op.getContext();
    auto type = cast<RankedTensorType>(op.getType());
    auto dense = cast<DenseElementsAttr>(op.getValue());
    auto opaque = [&](const Twine &text) -> Attribute {
      return emitc::OpaqueAttr::get(ctx, text.str());
    };
    Attribute shape = shapeLiteral(ctx, type);
    Attribute dtype = dtypeLiteral(ctx, type);
    SmallVector<Attribute> args;
    StringRef callee;
    if (dense.isSplat()) {
      callee = "tessera::rt::full";
      args = {shape, dtype,
              opaque(scalarText(dense.getSplatValue<Attribute>(),
                                type.getElementType()))};
    } else if (outlineAbove >= 0 && isOutlinedConstant(dense, outlineAbove)) {
      callee = "tessera::rt::constant";
      args = {opaque(cppString(outlinedConstantKey(dense)))};
    } else {
      std::string values = "std::vector<double>{";
      int64_t i = 0;
      for (Attribute a : dense.getValues<Attribute>())
        values += (i++ ? ", " : "") + scalarText(a, type.getElementType());
      callee = "tessera::rt::fromValues";
      args = {shape, dtype, opaque(values + "}")};
    }
    auto call = emitc::CallOpaqueOp::create(
        rewriter, op.getLoc(),
        TypeRange{emitc::OpaqueType::get(ctx, kRuntimeTensorType)},
        rewriter.getStringAttr(callee), ValueRange{},
        rewriter.getArrayAttr(args), ArrayAttr());
    rewriter.replaceOp(op, call.getResults());
    return success();
  }

private:
  int64_t outlineAbove;
};

/// func.return in the emitted function: result i is stored to
/// `results[i]` (the caller sizes `results`).
class ReturnLowering : public OpConversionPattern<func::ReturnOp> {
public:
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(func::ReturnOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto efn = op->getParentOfType<emitc::FuncOp>();
    if (!efn)
      return failure();
    Value results = efn.getArgument(1);
    for (auto [i, v] : llvm::enumerate(adaptor.getOperands()))
      emitc::AssignOp::create(rewriter, op.getLoc(),
                              tensorSlot(rewriter, op.getLoc(), results, i), v);
    rewriter.replaceOpWithNewOp<emitc::ReturnOp>(op, Value());
    return success();
  }
};

/// Reports, before any rewriting, every reason a function cannot be
/// emitted. Sets `outlined` when a constant goes to the constants file and
/// adds the headers that runtime calls name.
LogicalResult validateFunction(func::FuncOp fn, int64_t maxInlineConstant,
                               int64_t outlineAbove, bool &outlined,
                               SmallVectorImpl<std::string> &headers) {
  for (Operation &op : fn.getBody().front()) {
    if (isa<func::ReturnOp>(op))
      continue;
    if (isa<func::CallOp>(op))
      return op.emitError("convert-tsr-to-emitc: inline calls before "
                          "emission");
    Dialect *d = op.getDialect();
    if (!d || !isa<ConvertToEmitCPatternInterface>(d))
      return op.emitError("convert-tsr-to-emitc: no lowering for '")
             << op.getName() << "'";
    auto iface = dyn_cast<RuntimeCallOpInterface>(op);
    if (iface && failed(verifyEmittable(iface.getRuntimeCall())))
      return failure();
    if (auto c = dyn_cast<ConstantOp>(op)) {
      auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
      if (!dense)
        return op.emitError("convert-tsr-to-emitc: only dense constants");
      if (dense.isSplat())
        continue;
      if (outlineAbove >= 0 && isOutlinedConstant(dense, outlineAbove)) {
        outlined = true;
        continue;
      }
      if (dense.getNumElements() > maxInlineConstant)
        return op.emitError("convert-tsr-to-emitc: constant of ")
               << dense.getNumElements()
               << " elements exceeds max-inline-constant=" << maxInlineConstant;
      continue;
    }
    if (iface) {
      RuntimeCall call = iface.getRuntimeCall();
      if (!call.isCall())
        return op.emitError("convert-tsr-to-emitc: no lowering for '")
               << op.getName() << "'";
      if (!call.headerPath().empty() &&
          !llvm::is_contained(headers, call.headerPath()))
        headers.push_back(call.headerPath().str());
    }
  }
  return success();
}

/// The emitted function with the runtime's step ABI, `void
/// f(std::vector<Tensor>& args, std::vector<Tensor>& results)`, holding
/// `fn`'s ops (still to be converted) after a comment naming each: argument
/// i is loaded from `args[i]` and cast back to its tensor type until the
/// conversion replaces its users. Then `args` is cleared: the function
/// takes its arguments over, and insertReleases drops each after its last
/// use, so that a donated argument (the driver's parameters and optimizer
/// state) is freed there rather than when the step returns.
emitc::FuncOp buildFrame(func::FuncOp fn,
                         const llvm::DenseMap<Operation *, int64_t> &opIds) {
  MLIRContext *ctx = fn.getContext();
  OpBuilder b(fn);
  Type tensorType = emitc::OpaqueType::get(ctx, kRuntimeTensorType);
  auto argsType =
      emitc::OpaqueType::get(ctx, "std::vector<tessera::rt::Tensor>&");
  auto resultsType =
      emitc::OpaqueType::get(ctx, "std::vector<tessera::rt::Tensor>&");
  auto efn = emitc::FuncOp::create(
      b, fn.getLoc(), fn.getSymName(),
      FunctionType::get(ctx, {argsType, resultsType}, {}));
  Block *entry = efn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value args = entry->getArgument(0);
  Block &body = fn.getBody().front();
  for (BlockArgument arg : body.getArguments()) {
    Value loaded = emitc::LoadOp::create(
        b, fn.getLoc(), tensorType,
        tensorSlot(b, fn.getLoc(), args, arg.getArgNumber()));
    arg.replaceAllUsesWith(UnrealizedConversionCastOp::create(
                               b, fn.getLoc(), arg.getType(), loaded)
                               .getResult(0));
  }
  if (body.getNumArguments() > 0) {
    emitc::VerbatimOp::create(
        b, fn.getLoc(),
        b.getStringAttr("// The step owns its arguments: each is released "
                        "after its last use."),
        ValueRange{});
    emitc::VerbatimOp::create(b, fn.getLoc(), b.getStringAttr("{}.clear();"),
                              ValueRange{args});
  }
  // The static memory plan (dist-static-memory), when there is one: the
  // arena, then before each op the slots its allocations go to. An op
  // without slots right after one with slots clears them, so that a slot
  // an op left unused (a scratch buffer the backend does not need) is not
  // taken by an allocation the plan did not make for it.
  auto arenaBytes = getAttr<Dist::ArenaBytesAttrHelper>(fn.getOperation());
  if (arenaBytes) {
    emitc::VerbatimOp::create(
        b, fn.getLoc(),
        b.getStringAttr("// The static memory plan: the step's activations, "
                        "gradients and messages lie in one arena, at the "
                        "offsets `memory.place` gives before each op."),
        ValueRange{});
    emitc::VerbatimOp::create(
        b, fn.getLoc(),
        b.getStringAttr(llvm::formatv("tessera::rt::StaticMemory memory({0});",
                                      arenaBytes.getInt())
                            .str()),
        ValueRange{});
  }
  bool placed = false;
  for (Operation &op : body) {
    if (isa<func::ReturnOp>(op))
      continue;
    std::string where = locationText(op.getLoc());
    std::string what = op.getName().getStringRef().str();
    if (auto rvd = getAttr<Dist::RvdAttrHelper>(&op))
      what += " (" + rvd.str() + ")";
    OpBuilder cb(&op);
    emitc::VerbatimOp::create(
        cb, op.getLoc(),
        cb.getStringAttr("// " + (where.empty() ? "" : where + ": ") + what),
        ValueRange{});
    // profile-ops: the op's time runs from its mark to the next one.
    if (auto id = opIds.find(&op); id != opIds.end())
      emitc::VerbatimOp::create(
          cb, op.getLoc(),
          cb.getStringAttr("tessera::rt::opMark(" +
                           std::to_string(id->second) + ");"),
          ValueRange{});
    if (!arenaBytes)
      continue;
    auto slots = getAttr<Dist::ArenaAttrHelper>(&op);
    if (!slots && !placed)
      continue;
    // A verbatim op without operands is printed as it is (no format).
    std::string text = "memory.place({";
    ArrayRef<int64_t> flat = slots ? slots.asArrayRef() : ArrayRef<int64_t>{};
    for (size_t i = 0; i + 1 < flat.size(); i += 2)
      text += std::string(i ? ", " : "") + "{" + std::to_string(flat[i]) +
              ", " + std::to_string(flat[i + 1]) + "}";
    text += "});";
    emitc::VerbatimOp::create(cb, op.getLoc(), cb.getStringAttr(text),
                              ValueRange{});
    placed = static_cast<bool>(slots);
  }
  entry->getOperations().splice(entry->end(), body.getOperations());
  return efn;
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
    const char *text =
        type == kRuntimeTensorType ? "{}.release();" : "{} = {{};";
    emitc::VerbatimOp::create(rb, v.getLoc(), rb.getStringAttr(text),
                              ValueRange{v});
  }
}

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
                          int64_t worldSize, StringRef constants,
                          double peakFlops, ArrayRef<std::string> opKeys) {
  std::string text;
  llvm::raw_string_ostream os(text);
  // A piece of optimizer state (dist.shard): the whole tensor's shape and,
  // for each rank of this program, where its piece starts
  // (layout::pieceOffsets of the layout the attribute describes).
  auto emitShard = [&](func::FuncOp f, unsigned i, RankedTensorType type,
                       ArrayAttr shard) -> LogicalResult {
    auto meshAttr = dyn_cast_or_null<dist::MeshAttr>(
        module->getAttr(dist::DistDialect::MeshAttrHelper::getNameStr()));
    if (!meshAttr)
      return f.emitError("convert-tsr-to-emitc: argument ")
             << i << " has dist.shard but the module has no dist.mesh";
    layout::Mesh mesh = meshAttr.getMesh();
    layout::Layout split;
    split.states.assign(mesh.numAxes(), layout::AxisState::r());
    layout::TensorShape whole{
        std::vector<int64_t>(type.getShape().begin(), type.getShape().end())};
    for (auto [k, dim] : llvm::enumerate(shard.getAsRange<ArrayAttr>()))
      for (auto name : dim.getAsRange<StringAttr>()) {
        std::optional<size_t> a = mesh.axisIndex(name.str());
        if (!a)
          return f.emitError("convert-tsr-to-emitc: dist.shard of argument ")
                 << i << " names '" << name.getValue()
                 << "', which is not an axis of the mesh";
        split.states[*a] = layout::AxisState::d(static_cast<int>(k));
        whole.dims[k] *= mesh.axis(*a).size;
      }
    os << ", /*bound=*/0, /*defaultValue=*/0, /*global=*/{"
       << joinInts(whole.dims) << "}, /*offsets=*/{";
    for (auto [j, rank] : llvm::enumerate(ranks)) {
      auto offsets =
          layout::pieceOffsets(mesh, whole, split, mesh.coordinates(rank));
      if (!offsets)
        return f.emitError("convert-tsr-to-emitc: dist.shard of argument ")
               << i << ": " << offsets.message();
      os << (j ? ", " : "") << "{" << joinInts(*offsets) << "}";
    }
    os << "}";
    return success();
  };
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
         << ", tessera::rt::DType::" << runtimeDTypeName(type.getElementType())
         << ", {" << joinInts(type.getShape()) << "}";
      if (!results && role->role == "Input" &&
          isa<IntegerType>(type.getElementType()))
        if (int64_t bound = indexBound(f, i))
          os << ", /*bound=*/" << bound;
      if (!results && role->role == "Hyper")
        if (auto value = attrs.getAs<FloatAttr>(
                Tsr::HyperDefaultAttrHelper::getNameStr()))
          os << ", /*bound=*/0, /*defaultValue=*/"
             << scalarText(value, value.getType());
      if (!results)
        if (auto shard = attrs.getAs<ArrayAttr>(
                dist::DistDialect::ShardAttrHelper::getNameStr()))
          if (failed(emitShard(f, i, type, shard)))
            return failure();
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
  // Model FLOPs of one step (tsr-optimizer's tsr.flops_per_step: the whole
  // model's forward and backward, the same on every rank) and the device's
  // peak: the driver logs the model FLOPs utilisation.
  double flopsPerStep = 0;
  if (FloatAttr flops = getAttr<Tsr::FlopsPerStepAttrHelper>(module))
    flopsPerStep = flops.getValueAsDouble();
  os << "  /*flopsPerStep=*/" << llvm::formatv("{0:e}", flopsPerStep).str()
     << ", /*peakFlopsPerRank=*/" << llvm::formatv("{0:e}", peakFlops).str()
     << ",\n";
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
  // The plan, in words, for checkpoints' index.json: the mesh, the
  // micro-batches and the pipeline schedule.
  std::string plan = "one device";
  if (auto meshAttr = dyn_cast_or_null<dist::MeshAttr>(
          module->getAttr(dist::DistDialect::MeshAttrHelper::getNameStr()))) {
    plan = "mesh " + meshAttr.getMesh().str();
    if (auto pipeline = dyn_cast_or_null<dist::PipelineAttr>(module->getAttr(
            dist::DistDialect::PipelineAttrHelper::getNameStr()))) {
      plan += ", " + std::to_string(pipeline.getMicroBatches()) +
              " micro-batch(es)";
      if (StringAttr schedule = pipeline.getSchedule())
        plan += ", schedule " + schedule.str();
    }
  }
  // The model's data inputs in graph order, when the importer recorded
  // them: the driver maps a token file onto the first two.
  auto inputs = getAttr<Tsr::InputsAttrHelper>(module);
  // The state_dict names --save writes, each with its initializer.
  auto stateDict = getAttr<Tsr::StateDictAttrHelper>(module);
  os << "  /*constants=*/" << cppString(constants) << ",\n";
  os << "  /*inputs=*/{";
  if (inputs)
    for (auto [i, name] : llvm::enumerate(inputs.getAsRange<StringAttr>()))
      os << (i ? ", " : "") << cppString(name.getValue());
  os << "},\n";
  os << "  /*stateDict=*/{";
  if (stateDict)
    for (auto [i, entry] : llvm::enumerate(stateDict.getValue())) {
      auto pair = dyn_cast<ArrayAttr>(entry);
      if (!pair || pair.size() != 2 ||
          !llvm::all_of(pair, llvm::IsaPred<StringAttr>))
        return module.emitError("convert-tsr-to-emitc: tsr.state_dict entries "
                                "must be [name, initializer] string pairs");
      os << (i ? ",\n    " : "\n    ") << "{"
         << cppString(cast<StringAttr>(pair[0]).getValue()) << ", "
         << cppString(cast<StringAttr>(pair[1]).getValue()) << "}";
    }
  os << "},\n";
  os << "  /*plan=*/" << cppString(plan) << ",\n";
  // profile-ops: what each opMark id times, as the profile database keys
  // it (--profile-ops FILE writes the database).
  if (!opKeys.empty()) {
    os << "  /*opKeys=*/{";
    for (auto [i, key] : llvm::enumerate(opKeys))
      os << (i ? ",\n    " : "\n    ") << key;
    os << "},\n";
  }
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
    MLIRContext *ctx = &getContext();
    if (outlineConstantsAbove < 0) {
      module.emitError("convert-tsr-to-emitc: outline-constants-above must "
                       "be >= 0, got ")
          << int64_t(outlineConstantsAbove);
      return signalPassFailure();
    }
    int64_t outlineAbove =
        constantsFile.empty() ? -1 : int64_t(outlineConstantsAbove);

    SmallVector<func::FuncOp> funcs;
    for (func::FuncOp f : module.getOps<func::FuncOp>())
      if (!f.isExternal())
        funcs.push_back(f);
    bool outlined = false;
    SmallVector<std::string> headers;
    for (func::FuncOp f : funcs)
      if (failed(validateFunction(f, maxInlineConstant, outlineAbove, outlined,
                                  headers)))
        return signalPassFailure();

    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    emitc::IncludeOp::create(b, module.getLoc(), "tessera/runtime/Runtime.h",
                             /*is_standard_include=*/false);
    for (const std::string &header : headers)
      emitc::IncludeOp::create(b, module.getLoc(), header,
                               /*is_standard_include=*/false);
    for (const char *header : {"cmath", "cstdint", "tuple", "vector"})
      emitc::IncludeOp::create(b, module.getLoc(), header,
                               /*is_standard_include=*/true);

    // The Program table reads the functions' roles and their uses of
    // arguments, so it is written before their bodies move.
    SmallVector<func::FuncOp> steps;
    func::FuncOp gradStep;
    for (func::FuncOp f : funcs) {
      if (hasAttr<Tsr::TrainStepAttrHelper>(f))
        steps.push_back(f);
      else if (hasAttr<Tsr::GradStepAttrHelper>(f))
        gradStep = f;
    }
    // profile-ops: an id per op of every function, in emission order, and
    // its key: the op's name without its dialect, the element type the
    // cost model prices it in, its operand shapes (the auto planner's
    // OpCost for the same op; docs/planner.md "Profiling a model's ops").
    llvm::DenseMap<Operation *, int64_t> opIds;
    SmallVector<std::string> opKeys;
    if (profileOps && emitMain && !steps.empty()) {
      for (func::FuncOp f : funcs) {
        std::string mainDtype;
        for (unsigned i = 0; i < f.getNumArguments() && mainDtype.empty(); ++i)
          if (getArgAttr<Tsr::ParamAttrHelper>(f, i))
            mainDtype = costDtypeName(f.getArgumentTypes()[i]);
        if (mainDtype.empty())
          mainDtype = "fp32";
        for (Operation &op : f.getBody().front()) {
          if (isa<func::ReturnOp>(op))
            continue;
          std::string key = "{" +
                            cppString(op.getName().stripDialect()) + ", " +
                            cppString(costDtypeOf(&op, mainDtype)) + ", {";
          for (auto [i, t] : llvm::enumerate(op.getOperandTypes())) {
            auto ranked = dyn_cast<RankedTensorType>(t);
            key += std::string(i ? ", " : "") + "{" +
                   (ranked ? joinInts(ranked.getShape()) : "") + "}";
          }
          key += "}}";
          opIds[&op] = int64_t(opKeys.size());
          opKeys.push_back(std::move(key));
        }
      }
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
      if (failed(emitProgram(
              module, steps, gradStep, model, initWeights, ranks, worldSize,
              outlined ? StringRef(constantsFile) : "", peakFlops, opKeys)))
        return signalPassFailure();
    }

    SmallVector<emitc::FuncOp> emitted;
    for (func::FuncOp f : funcs) {
      emitted.push_back(buildFrame(f, opIds));
      f.erase();
    }
    for (func::FuncOp f : llvm::to_vector(module.getOps<func::FuncOp>()))
      f.erase();

    // Every dialect lowers its own ops (ConvertToEmitCPatternInterface).
    RuntimeTypeConverter typeConverter(ctx);
    ConversionTarget target(*ctx);
    target.addLegalDialect<emitc::EmitCDialect>();
    target.addLegalOp<UnrealizedConversionCastOp>();
    target.addIllegalOp<func::ReturnOp>();
    RewritePatternSet patterns(ctx);
    for (Dialect *d : ctx->getLoadedDialects())
      if (auto *iface = dyn_cast<ConvertToEmitCPatternInterface>(d))
        iface->populateConvertToEmitCConversionPatterns(target, typeConverter,
                                                        patterns);
    patterns.add<ConstantLowering>(typeConverter, ctx, outlineAbove);
    patterns.add<ReturnLowering>(typeConverter, ctx);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();
    SmallVector<UnrealizedConversionCastOp> casts;
    module.walk([&](UnrealizedConversionCastOp c) { casts.push_back(c); });
    SmallVector<UnrealizedConversionCastOp> left;
    reconcileUnrealizedCasts(casts, &left);
    for (UnrealizedConversionCastOp c : left) {
      if (!c->use_empty()) {
        c.emitError("convert-tsr-to-emitc: a value was left unconverted");
        return signalPassFailure();
      }
      c.erase();
    }
    for (emitc::FuncOp efn : emitted)
      insertReleases(efn);

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

void tessera::registerConvertTsrToEmitCInterface(DialectRegistry &registry) {
  registerRuntimeCallToEmitCInterface<tsr::TsrDialect>(registry);
}
