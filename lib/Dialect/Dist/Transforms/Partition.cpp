//===- Partition.cpp - one function per rank ------------------------------===//
//
// Turns a planned training step into per-rank functions. The pieces:
//
//  * Layouts. Each op's plan (dist.split, and dist.batch for the temporal
//    micro-batch axis) gives, through its annotation, the layout it needs
//    for each operand and the layout of each result: per spatial mesh axis
//    (dp, tp) R, V or D<k>, and the same for the micro-batch axis "mb".
//  * Conversions. Where a consumer needs another layout than the producer
//    made, the temporal axis is handled locally (sum or concatenate the
//    micro-batch pieces; slice one), the spatial axes by the cheapest path
//    of collectives from the RVD search (lib/Layout), and a change of
//    pipeline stage by a send from the rank with the same (dp, tp)
//    coordinates in the producer's stage.
//  * Order. All ranks follow one global order of op instances: the blocks
//    (stage, forward/backward, micro-batch) in the order of the pipeline
//    schedule's start times, each block's ops in program order, ops that do
//    not carry the batch placed right before their first use. With sends
//    that never block, one global order keeps every receive matched and
//    every collective's members in step, so no rank can wait forever.
//  * Running totals. A backward value whose micro-batch pieces are partial
//    sums is kept as a running total (one piece alive at a time, not M).
//  * Every device. An op whose dist.stage is -1 (an interlaced pipeline's
//    embedding and head) runs on every rank, its batch split over pp as
//    well as dp: pp is a third spatial axis of its layouts (the pieces of
//    each micro-batch split further, pp inner to dp and to the micro-batch
//    axis). Values of a stage reach it by sends to the other devices, each
//    of which slices its piece; its values reach a stage by collectives
//    over pp that every rank makes at the same point of the global order.
//    Such an op runs as soon as its inputs are ready.
//  * Gradients reduced early. Once a backward value is complete, a conversion
//    that shrinks it for a later consumer (ZeRO-2's reduce-scatter of a
//    weight gradient into a dp shard) is made right away, so the whole
//    partial sum is freed there rather than at the update.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/Dist/Analysis/MemoryPrediction.h"
#include "tessera/Dialect/Dist/IR/DistAttrs.h"
#include "tessera/Dialect/Dist/IR/DistOps.h"
#include "tessera/Dialect/Dist/Transforms/Passes.h"
#include "tessera/Dialect/Tsr/Analysis/OpMetrics.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Layout/Rvd.h"
#include "tessera/Schedule/Builtins.h"
#include "tessera/Schedule/PipelineOrder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"

#include <functional>
#include <map>

namespace tessera::dist {
#define GEN_PASS_DEF_DISTPARTITION
#include "tessera/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace tessera::dist

using namespace mlir;
using namespace tessera;
using namespace tessera::dist;
namespace lay = tessera::layout;

namespace {

/// The spatial axes of layouts: dp, tp and pp (pp splits only the ops that
/// run on every device; elsewhere it is R).
constexpr size_t kAxes = 3, kPp = 2;
constexpr int64_t kEvery = DistDialect::kEveryStage;

/// A layout over the spatial axes (dp, tp, pp) plus the micro-batch axis.
struct FullLayout {
  lay::Layout spatial;
  lay::AxisState mb = lay::AxisState::r();
  std::string key() const { return spatial.str() + "|" + mb.str(); }
};

FullLayout replicated(size_t axes) {
  FullLayout l;
  l.spatial.states.assign(axes, lay::AxisState::r());
  return l;
}

/// Piece `index` of `pieces` equal pieces of `x` along `dim` (a local slice:
/// a rank's part of a split dimension, or one micro-batch).
tsr::SliceOp slicePiece(OpBuilder &b, Location loc, Value x, int64_t dim,
                        int64_t pieces, int64_t index) {
  auto t = cast<RankedTensorType>(x.getType());
  int64_t size = t.getDimSize(dim) / pieces;
  SmallVector<int64_t> starts(t.getRank(), 0), limits(t.getShape()),
      steps(t.getRank(), 1);
  starts[dim] = index * size;
  limits[dim] = (index + 1) * size;
  return tsr::SliceOp::create(b, loc, x, starts, limits, steps);
}

/// What the plan and the annotation say about one op.
struct OpPlan {
  Operation *op = nullptr;
  int64_t stage = 0;
  bool perMicro = false; ///< carries the batch: one instance per micro-batch
  /// The schedule block kind: 0 forward, 1 backward (for the inputs), 2
  /// backward for the weights (dist.weight_grad).
  int64_t kind = 0;
  std::map<std::string, int64_t> factors;
  SmallVector<FullLayout> operands, results;
  SmallVector<RankedTensorType> localResultTypes;
  SmallVector<SmallVector<int64_t>> localOperandShapes;
};

struct RankState {
  int64_t rank = 0;
  SmallVector<int64_t> coords; ///< dp, tp, pp
  func::FuncOp fn;
  OpBuilder builder;
  /// (global value, micro-batch piece) -> local value, in the producer's
  /// layout; values not split over micro-batches use piece 0.
  std::map<std::pair<void *, int64_t>, Value> pieces;
  /// Converted values: (global value, layout key, piece) -> local value.
  std::map<std::tuple<void *, std::string, int64_t>, Value> converted;
  /// Micro-batch partial sums kept as a running total (global value ->
  /// total so far, pieces added; -1 once a piece came out of order).
  std::map<void *, std::pair<Value, int64_t>> totals;
  /// Global block argument -> local block argument, and the local
  /// arguments' attributes (in creation order).
  llvm::DenseMap<Value, Value> args;
  SmallVector<DictionaryAttr> argAttrs;
  explicit RankState(MLIRContext *ctx) : builder(ctx) {}
};

class Partitioner {
public:
  Partitioner(func::FuncOp step, MeshAttr mesh, int64_t microBatches,
              StringRef schedule, bool early)
      : step(step), ctx(step.getContext()), mesh(mesh), M(microBatches),
        scheduleName(schedule), early(early) {}

  LogicalResult run();
  /// The rank functions made by run().
  SmallVector<func::FuncOp> rankFunctions() const {
    SmallVector<func::FuncOp> out;
    for (auto &r : ranks)
      out.push_back(r->fn);
    return out;
  }

private:
  func::FuncOp step;
  MLIRContext *ctx;
  MeshAttr mesh;
  int64_t M;
  std::string scheduleName;
  /// Whether gradients are reduced early (shrinking conversions right after
  /// the producer).
  bool early;
  int64_t dp = 1, tp = 1, pp = 1;
  lay::Mesh rvdMesh;
  lay::CostModel cost = lay::CostModel::uniform(1e-5, 1e-10);
  llvm::DenseMap<Operation *, OpPlan> plans;
  llvm::DenseMap<Value, FullLayout> argLayouts;
  llvm::DenseMap<Value, int64_t> argStages; ///< params and states
  std::vector<std::unique_ptr<RankState>> ranks;
  std::set<std::pair<Operation *, int64_t>> emitted;
  /// Ops made again for each micro-batch that uses them (rematerialized),
  /// and the micro-batch their current copy serves.
  llvm::DenseMap<Operation *, bool> remat;
  llvm::DenseMap<Operation *, int64_t> rematFor;
  int64_t nextTag = 1;
  bool failedAny = false;
  /// Whether the op being emitted is a backward op or an update (1) or a
  /// forward op (0), and the micro-batch it serves (a rematerialized op:
  /// its user's): a ZeRO-3 parameter is gathered for each micro-batch's
  /// forward and again for its backward, and released after (FSDP).
  int64_t usePhase = 0;
  int64_t useMicro = 0;
  int64_t rematMicro = -1; ///< while emitRemat runs: its micro-batch

  LogicalResult fail(Operation *op, const Twine &message) {
    failedAny = true;
    return op->emitError("dist-partition: ") << message;
  }

  /// op-order: the ops each op must follow (its dist.order_after), which
  /// emission treats like producers.
  llvm::DenseMap<Operation *, SmallVector<Operation *>> orderAfter;

  /// Pipeline stages may be virtual (several per device): the device (pp
  /// coordinate) of each is in the module's dist.pipeline.
  SmallVector<int64_t> stageDevices;
  int64_t deviceOf(int64_t stage) const {
    if (stage == kEvery)
      return kEvery;
    return stage < int64_t(stageDevices.size()) ? stageDevices[stage] : stage;
  }
  /// Whether stage `s` runs on `device` (every stage -1 runs everywhere).
  bool onDevice(int64_t s, int64_t device) const {
    return s == kEvery || deviceOf(s) == device;
  }
  int64_t deviceOfRank(int64_t r) const { return ranks[r]->coords[2]; }
  SmallVector<int64_t> ranksOfStage(int64_t s) const {
    SmallVector<int64_t> out;
    for (auto &rs : ranks)
      if (onDevice(s, rs->coords[2]))
        out.push_back(rs->rank);
    return out;
  }
  int64_t peerInStage(int64_t r, int64_t s) const {
    SmallVector<int64_t> c = ranks[r]->coords;
    c[2] = deviceOf(s);
    return mesh.rank(c);
  }

  LogicalResult planOps();
  LogicalResult planArgs();
  LogicalResult emitAll();
  LogicalResult emitInstance(Operation *op, int64_t m);
  bool rematerialized(Operation *op);
  /// A parameter of the step that ZeRO-3 keeps sharded (dist.zero3).
  bool isZero3Param(Value v) {
    auto arg = dyn_cast<BlockArgument>(v);
    return arg && arg.getOwner() == &step.getBody().front() &&
           getArgAttr<Dist::Zero3AttrHelper>(step, arg.getArgNumber());
  }
  FailureOr<bool> emitVocabPiece(RankState &rs, Operation *op, const OpPlan &p,
                                 IRMapping &map,
                                 SmallVectorImpl<Value> &results);
  bool readyOnEveryDevice(Operation *op, int64_t m);
  /// readyOnEveryDevice's memo: whether an op depends on a stage's value of
  /// the micro-batches.
  llvm::DenseMap<Operation *, bool> fed;
  LogicalResult emitRemat(Operation *op, int64_t m);
  bool summedByEveryUse(Value v);
  void addToTotal(RankState &rs, Value v, int64_t m, Value piece);
  LogicalResult reduceEarly(Operation *op);
  LogicalResult markDropoutPiece(RankState &rs, tsr::DropoutOp d,
                                 const OpPlan &p, int64_t m);
  FailureOr<Value> materialize(RankState &r, Value v, const FullLayout &want,
                               int64_t m);
  FailureOr<Value> convertLocal(RankState &r, Operation *where,
                                ArrayRef<Value> pieces, const FullLayout &have,
                                const FullLayout &want, int64_t m,
                                RankedTensorType global);
  FailureOr<Value> applyStep(RankState &r, Operation *where, Value x,
                             const lay::Step &step);
  Value argValue(RankState &r, BlockArgument arg);
  Value zerosLike(OpBuilder &b, Location loc, Type type);
  LogicalResult finish();
};

//===----------------------------------------------------------------------===//
// Plans and layouts
//===----------------------------------------------------------------------===//

/// The layout of one annotation entry under the op's splits.
using AxisPairs = std::vector<std::pair<std::string, std::string>>;

FullLayout entryLayout(const annotation::BoundAnnotation &bound,
                       const annotation::TensorSpec &spec,
                       const AxisPairs &axisOf, bool isResult) {
  FullLayout l = replicated(kAxes);
  for (auto &[name, axis] : axisOf) {
    lay::AxisState state = lay::AxisState::r();
    int64_t dim = -1;
    for (auto [i, d] : llvm::enumerate(spec.dims))
      if (!d.atoms.front().isBroadcast() && d.atoms.front().name == name)
        dim = i;
    if (dim >= 0)
      state = lay::AxisState::d(dim);
    else if (isResult && bound.marks.at(name) == annotation::DimMark::Reduced)
      state = lay::AxisState::v();
    if (axis == "dp")
      l.spatial.states[0] = state;
    else if (axis == "tp")
      l.spatial.states[1] = state;
    else if (axis == "pp")
      l.spatial.states[kPp] = state;
    else
      l.mb = state;
  }
  return l;
}

LogicalResult Partitioner::planOps() {
  Block &body = step.getBody().front();
  // op-order names ops by their NameLoc names (as plan files do).
  llvm::StringMap<Operation *> byName;
  for (Operation &op : body)
    if (std::string n = tsr::opName(&op); !n.empty())
      byName.try_emplace(n, &op);
  for (Operation &op : body)
    if (ArrayAttr names = getAttr<Dist::OrderAfterAttrHelper>(&op))
      for (Attribute name : names) {
        Operation *before = byName.lookup(cast<StringAttr>(name).getValue());
        if (!before)
          return fail(&op, "dist.order_after names '" +
                               cast<StringAttr>(name).getValue() +
                               "', which is no op of the step");
        orderAfter[&op].push_back(before);
      }
  for (Operation &op : body) {
    if (isa<func::ReturnOp>(op))
      continue;
    OpPlan p;
    p.op = &op;
    if (auto s = getAttr<Dist::StageAttrHelper>(&op))
      p.stage = s.getInt();
    p.kind = !hasAttr<Tsr::BackwardAttrHelper>(&op)     ? 0
             : hasAttr<Dist::WeightGradAttrHelper>(&op) ? 2
                                                        : 1;
    AxisPairs axisOf;
    if (auto split = getAttr<Dist::SplitAttrHelper>(&op))
      for (NamedAttribute e : split) {
        StringRef axis = cast<StringAttr>(e.getValue()).getValue();
        if (axis == "pp" && p.stage != kEvery)
          return fail(&op, "cannot split '" + tsr::opNameOrKind(&op) + "' (" +
                               op.getName().getStringRef() +
                               ") over 'pp' on stage " + Twine(p.stage) +
                               ": only an op on every device (dist.stage "
                               "-1) is split over pp");
        axisOf.push_back({e.getName().str(), axis.str()});
        p.factors[e.getName().str()] = axis == "dp"   ? dp
                                       : axis == "tp" ? tp
                                                      : pp;
      }
    // The batch, when split over micro-batches, is D on the temporal axis,
    // inner to dp (which splits the same dimension first); on every
    // device, pp splits each micro-batch's piece further.
    std::string mbName;
    if (auto batch = getAttr<Dist::BatchAttrHelper>(&op)) {
      p.perMicro = true;
      std::string name = batch.str();
      auto it = llvm::find_if(axisOf, [&](auto &e) { return e.first == name; });
      if (M > 1 && it != axisOf.end() && it->second != "dp")
        return fail(&op, "the batch dimension '" + name + "' is split over '" +
                             it->second + "', not dp");
      int64_t factor = it == axisOf.end() ? 1 : p.factors[name];
      // (unless pp splits another dimension of it: the vocabulary)
      if (p.stage == kEvery && pp > 1 &&
          llvm::none_of(axisOf, [](auto &e) { return e.second == "pp"; })) {
        axisOf.push_back({name, "pp"});
        factor *= pp;
      }
      if (M > 1) {
        mbName = name;
        factor *= M;
      }
      if (factor > 1)
        p.factors[name] = factor;
    }
    auto iface = dyn_cast<DimAnnotationOpInterface>(&op);
    if (!iface) {
      // Every op of a step is a tsr or dist op once its calls are inlined;
      // another has no layouts to partition by.
      StringRef dialect = op.getName().getDialectNamespace();
      if (dialect != "tsr" && dialect != "dist")
        return fail(&op, "cannot partition '" + op.getName().getStringRef() +
                             "', which is not a tsr or dist op" +
                             (isa<func::CallOp>(op)
                                  ? " (inline the step's calls first: -inline)"
                                  : ""));
      if (!p.factors.empty())
        return fail(&op, "'" + op.getName().getStringRef() +
                             "' has no dimension annotation but is split");
      plans[&op] = p;
      continue;
    }
    auto bound = bindOpAnnotation(iface);
    if (!bound)
      return fail(&op, bound.message());
    auto split = annotation::split(*bound, p.factors);
    if (!split)
      return fail(&op, "cannot apply the plan to '" + tsr::opNameOrKind(&op) +
                           "' (" + bound->annotation.str() +
                           "): " + split.message());
    const AxisPairs &spatial = axisOf;
    for (auto [i, spec] : llvm::enumerate(bound->annotation.inputs)) {
      FullLayout l = entryLayout(*bound, spec, spatial, false);
      if (!mbName.empty())
        l.mb = entryLayout(*bound, spec, {{mbName, "mb"}}, false).mb;
      p.operands.push_back(l);
      p.localOperandShapes.push_back(SmallVector<int64_t>(
          split->inputShapes[i].begin(), split->inputShapes[i].end()));
    }
    for (auto [i, spec] : llvm::enumerate(bound->annotation.outputs)) {
      FullLayout l = entryLayout(*bound, spec, spatial, true);
      if (!mbName.empty())
        l.mb = entryLayout(*bound, spec, {{mbName, "mb"}}, true).mb;
      p.results.push_back(l);
      auto t = cast<RankedTensorType>(op.getResult(i).getType());
      p.localResultTypes.push_back(
          RankedTensorType::get(split->outputShapes[i], t.getElementType()));
    }
    plans[&op] = p;
  }
  return success();
}

LogicalResult Partitioner::planArgs() {
  Block &body = step.getBody().front();
  llvm::StringMap<int64_t> paramStage;
  for (BlockArgument arg : body.getArguments()) {
    argLayouts[arg] = replicated(kAxes);
    unsigned i = arg.getArgNumber();
    if (auto s = getArgAttr<Dist::StageAttrHelper>(step, i))
      argStages[arg] = s.getInt();
    if (auto param = getArgAttr<Tsr::ParamAttrHelper>(step, i)) {
      int64_t s = 0;
      // A parameter lives with its first forward use.
      for (Operation &op : body)
        if (!hasAttr<Tsr::BackwardAttrHelper>(&op) &&
            !hasAttr<Tsr::UpdateAttrHelper>(&op) &&
            llvm::is_contained(op.getOperands(), Value(arg))) {
          s = plans[&op].stage;
          break;
        }
      if (!argStages.count(arg))
        argStages[arg] = s;
      paramStage[param.getValue()] = argStages[arg];
    }
  }
  for (BlockArgument arg : body.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto state = getArgAttr<Tsr::StateAttrHelper>(step, i);
    bool param = getArgAttr<Tsr::ParamAttrHelper>(step, i) != nullptr;
    if (!state && !param)
      continue;
    if (state)
      argStages[arg] = paramStage.lookup(state.getValue().split('/').second);
    // Optimizer state stays in the layout its update wants (sharded under
    // ZeRO-1 or tensor parallelism), across steps. So does a parameter,
    // except that without ZeRO-3 it stays whole over dp: tp keeps its
    // piece of a split weight (Megatron), ZeRO-3 also its dp shard.
    for (OpOperand &use : arg.getUses()) {
      Operation *owner = use.getOwner();
      if (param && !hasAttr<Tsr::UpdateAttrHelper>(owner))
        continue;
      OpPlan &p = plans[owner];
      if (use.getOperandNumber() < p.operands.size()) {
        FullLayout l = p.operands[use.getOperandNumber()];
        l.mb = lay::AxisState::r();
        if (param && !getArgAttr<Dist::Zero3AttrHelper>(step, i) &&
            l.spatial.states[0].kind == lay::AxisKind::D)
          l.spatial.states[0] = lay::AxisState::r();
        argLayouts[arg] = l;
      }
      break;
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Local values and conversions
//===----------------------------------------------------------------------===//

Value Partitioner::zerosLike(OpBuilder &b, Location loc, Type type) {
  auto t = cast<RankedTensorType>(type);
  Attribute zero = isa<FloatType>(t.getElementType())
                       ? Attribute(FloatAttr::get(t.getElementType(), 0.0))
                       : Attribute(IntegerAttr::get(t.getElementType(), 0));
  return tsr::ConstantOp::create(b, loc, t, DenseElementsAttr::get(t, zero));
}

Value Partitioner::argValue(RankState &r, BlockArgument arg) {
  auto it = r.args.find(arg);
  if (it != r.args.end())
    return it->second;
  // Created on first use; unused ones are never added. The local type is
  // the argument's layout's local shape.
  auto global = cast<RankedTensorType>(arg.getType());
  lay::TensorShape shape{
      std::vector<int64_t>(global.getShape().begin(), global.getShape().end()),
      4};
  auto local = lay::localShape(rvdMesh, shape, argLayouts[arg].spatial);
  auto type = RankedTensorType::get(local ? *local : shape.dims,
                                    global.getElementType());
  Block &entry = r.fn.getBody().front();
  Value v = entry.addArgument(type, arg.getLoc());
  r.args[arg] = v;
  SmallVector<NamedAttribute> attrs;
  if (DictionaryAttr d = step.getArgAttrDict(arg.getArgNumber()))
    for (NamedAttribute a : d)
      if (a.getName().getValue().starts_with("tsr."))
        attrs.push_back(a);
  // A piece of a parameter or of optimizer state: which mesh axes split
  // each dimension, so that checkpoints (and the driver, loading the
  // weights) can say where the piece lies in the whole (the same
  // for every rank; each rank's offset follows from its coordinates).
  const lay::Layout &layout = argLayouts[arg].spatial;
  if (local && *local != shape.dims) {
    SmallVector<Attribute> dims;
    for (int64_t k = 0; k < global.getRank(); ++k) {
      SmallVector<Attribute> axes;
      for (size_t a = 0; a < layout.states.size(); ++a)
        if (layout.states[a].isSplit(static_cast<int>(k)))
          axes.push_back(StringAttr::get(ctx, rvdMesh.axis(a).name));
      dims.push_back(ArrayAttr::get(ctx, axes));
    }
    attrs.push_back(NamedAttribute(
        StringAttr::get(ctx, Dist::ShardAttrHelper::getNameStr()),
        ArrayAttr::get(ctx, dims)));
  }
  r.argAttrs.push_back(DictionaryAttr::get(ctx, attrs));
  return v;
}

FailureOr<Value> Partitioner::applyStep(RankState &r, Operation *where, Value x,
                                        const lay::Step &st) {
  OpBuilder &b = r.builder;
  Location loc = where->getLoc();
  StringRef axisName = rvdMesh.axis(st.transition.axis).name;
  SmallVector<int64_t> group = mesh.groupOf(r.rank, {axisName});
  int64_t n = group.size();
  int64_t coord = llvm::find(group, r.rank) - group.begin();
  auto rvd = StringAttr::get(ctx, lay::formatStep(rvdMesh, st));
  Operation *made = nullptr;
  switch (st.transition.primitive) {
  case lay::Primitive::AllReduce:
    made = AllReduceOp::create(b, loc, x.getType(), x, group);
    break;
  case lay::Primitive::ReduceScatter:
    made = ReduceScatterOp::create(b, loc, x, group, st.transition.toDim);
    break;
  case lay::Primitive::AllGather:
    made = AllGatherOp::create(b, loc, x, group, st.transition.fromDim);
    break;
  case lay::Primitive::AllToAll:
    made = AllToAllOp::create(b, loc, x, group, st.transition.toDim,
                              st.transition.fromDim);
    break;
  case lay::Primitive::LocalSlice:
    made = slicePiece(b, loc, x, st.transition.toDim, n, coord);
    break;
  case lay::Primitive::LocalZero:
    if (coord == 0)
      return x;
    return zerosLike(b, loc, x.getType());
  }
  setAttr<Dist::RvdAttrHelper>(made, rvd);
  return made->getResult(0);
}

FailureOr<Value> Partitioner::convertLocal(RankState &r, Operation *where,
                                           ArrayRef<Value> pieces,
                                           const FullLayout &have,
                                           const FullLayout &want, int64_t m,
                                           RankedTensorType global) {
  OpBuilder &b = r.builder;
  Location loc = where->getLoc();
  lay::AxisState mb = have.mb;
  Value x;
  // 1. Micro-batch pieces the consumer wants whole: sum or concatenate.
  if (!(mb.kind == lay::AxisKind::R) && !(mb == want.mb)) {
    if (int64_t(pieces.size()) != M ||
        llvm::any_of(pieces, [](Value v) { return !v; }))
      return fail(where, "internal: not every micro-batch piece of an operand "
                         "exists before its use");
    // pp cuts each micro-batch piece: concatenated pieces would interleave.
    if (mb.kind == lay::AxisKind::D && M > 1 &&
        have.spatial.states[kPp].kind == lay::AxisKind::D)
      return fail(where, "cannot concatenate the micro-batch pieces of a value "
                         "split over pp (made on every device): gather it "
                         "over pp first");
    x = pieces[0];
    if (mb.kind == lay::AxisKind::V) {
      for (int64_t i = 1; i < M; ++i)
        x = tsr::AddOp::create(b, loc, x, pieces[i]);
    } else if (M > 1) {
      x = tsr::ConcatOp::create(b, loc, SmallVector<Value>(pieces), mb.dim);
    }
    mb = lay::AxisState::r();
  } else {
    x = (mb.kind == lay::AxisKind::R) ? pieces[0] : pieces[m];
  }
  if (!x)
    return fail(where, "internal: an operand's piece does not exist yet");
  // 2. The spatial axes, on the tensor of one micro-batch piece if the value
  // is split over micro-batches.
  SmallVector<int64_t> shape(global.getShape());
  if (mb.kind == lay::AxisKind::D)
    shape[mb.dim] /= M;
  int64_t elementBytes =
      int64_t(global.getElementType().getIntOrFloatBitWidth() / 8) ?: 1;
  auto convertSpatial = [&](const lay::Layout &from, const lay::Layout &to,
                            ArrayRef<int64_t> dims) -> LogicalResult {
    if (from == to)
      return success();
    lay::TensorShape ts{std::vector<int64_t>(dims.begin(), dims.end()),
                        elementBytes};
    auto path = lay::findPath(rvdMesh, ts, from, to, cost);
    if (!path)
      return fail(where, "no layout conversion from " + from.str() + " to " +
                             to.str() + ": " + path.message());
    for (const lay::Step &st : path->steps) {
      auto next = applyStep(r, where, x, st);
      if (failed(next))
        return failure();
      x = *next;
    }
    return success();
  };
  bool sliceMb =
      mb.kind == lay::AxisKind::R && !(want.mb.kind == lay::AxisKind::R);
  lay::Layout to = want.spatial;
  // pp cuts a micro-batch's piece (inner to the micro-batch axis): from a
  // whole value, the micro-batch is sliced before pp.
  if (sliceMb && have.spatial.states[kPp] != want.spatial.states[kPp])
    to.states[kPp] = have.spatial.states[kPp];
  if (failed(convertSpatial(have.spatial, to, shape)))
    return failure();
  // 3. Micro-batch pieces the consumer wants from a whole value.
  if (sliceMb) {
    if (want.mb.kind == lay::AxisKind::V) {
      if (m != 0)
        x = zerosLike(b, loc, x.getType());
    } else {
      x = slicePiece(b, loc, x, want.mb.dim, M, m);
      shape[want.mb.dim] /= M;
    }
    if (failed(convertSpatial(to, want.spatial, shape)))
      return failure();
  }
  return x;
}

FailureOr<Value> Partitioner::materialize(RankState &r, Value v,
                                          const FullLayout &want, int64_t m) {
  int64_t piece = (want.mb.kind == lay::AxisKind::R) ? 0 : m;
  // A ZeRO-3 parameter is gathered for each micro-batch's forward and
  // again for its backward, so that no whole copy lives from one use to
  // the next (one key per micro-batch and phase). A stage that reads it
  // without holding it (a tied embedding's head) receives it whole once
  // per phase, as without ZeRO-3.
  if (isZero3Param(v)) {
    auto home = argStages.find(cast<BlockArgument>(v));
    bool held = home == argStages.end() || home->second < 0 ||
                onDevice(home->second, deviceOfRank(r.rank));
    piece = -1 - ((held ? 2 * useMicro : 0) + usePhase);
  }
  auto key = std::make_tuple(v.getAsOpaquePointer(), want.key(), piece);
  auto hit = r.converted.find(key);
  if (hit != r.converted.end())
    return hit->second;
  auto global = cast<RankedTensorType>(v.getType());
  Operation *where =
      v.getDefiningOp() ? v.getDefiningOp() : step.getOperation();
  FailureOr<Value> out = failure();
  int64_t myDevice = deviceOfRank(r.rank);
  // The value made on `stage` by the rank with this rank's (dp, tp)
  // coordinates, sent over. For an op on every device (pp splits its
  // batch), the peer sends its whole micro-batch piece and this rank takes
  // its own part.
  auto receive = [&](int64_t stage) -> FailureOr<Value> {
    RankState &q = *ranks[peerInStage(r.rank, stage)];
    FullLayout sendLayout = want;
    sendLayout.spatial.states[kPp] = lay::AxisState::r();
    auto sent = materialize(q, v, sendLayout, m);
    if (failed(sent))
      return failure();
    int64_t tag = nextTag++;
    SendOp::create(q.builder, where->getLoc(), *sent, r.rank, tag);
    Value got =
        RecvOp::create(r.builder, where->getLoc(), sent->getType(), q.rank, tag)
            .getResult();
    if (sendLayout.spatial == want.spatial)
      return got;
    FullLayout whole = sendLayout;
    whole.mb = lay::AxisState::r(); // one piece, as received
    FullLayout part = want;
    part.mb = lay::AxisState::r();
    SmallVector<int64_t> dims(global.getShape());
    if (want.mb.kind == lay::AxisKind::D)
      dims[want.mb.dim] /= M;
    return convertLocal(r, where, {got}, whole, part, 0,
                        RankedTensorType::get(dims, global.getElementType()));
  };

  if (auto arg = dyn_cast<BlockArgument>(v)) {
    auto st = argStages.find(arg);
    int64_t home = st == argStages.end() ? -1 : st->second;
    if (home < 0 || onDevice(home, myDevice)) {
      out = convertLocal(r, where, {argValue(r, arg)}, argLayouts[arg], want, m,
                         global);
    } else {
      out = receive(home);
    }
  } else if (auto c = dyn_cast<tsr::ConstantOp>(v.getDefiningOp())) {
    // Constants are made wherever they are needed.
    Value full = r.builder.clone(*c)->getResult(0);
    for (auto attr :
         llvm::to_vector(full.getDefiningOp()->getDiscardableAttrs()))
      full.getDefiningOp()->removeDiscardableAttr(attr.getName());
    out = convertLocal(r, where, {full}, replicated(kAxes), want, m, global);
  } else {
    Operation *prod = v.getDefiningOp();
    OpPlan &p = plans[prod];
    unsigned idx = cast<OpResult>(v).getResultNumber();
    FullLayout have = p.results[idx];
    auto total = r.totals.find(v.getAsOpaquePointer());
    if (onDevice(p.stage, myDevice) && total != r.totals.end() &&
        total->second.second == M) {
      // The micro-batch pieces' sum, already made as they came.
      have.mb = lay::AxisState::r();
      out =
          convertLocal(r, where, {total->second.first}, have, want, m, global);
    } else if (onDevice(p.stage, myDevice)) {
      SmallVector<Value> pcs;
      if (have.mb.kind == lay::AxisKind::R) {
        pcs.push_back(r.pieces[{v.getAsOpaquePointer(), 0}]);
      } else {
        for (int64_t i = 0; i < M; ++i) {
          auto it = r.pieces.find({v.getAsOpaquePointer(), i});
          pcs.push_back(it == r.pieces.end() ? Value() : it->second);
        }
      }
      out = convertLocal(r, where, pcs, have, want, m, global);
    } else {
      out = receive(p.stage);
    }
  }
  if (failed(out))
    return failure();
  r.converted[key] = *out;
  return out;
}

//===----------------------------------------------------------------------===//
// Instances and the global order
//===----------------------------------------------------------------------===//

LogicalResult Partitioner::emitInstance(Operation *op, int64_t m) {
  OpPlan &p = plans[op];
  int64_t piece = p.perMicro ? m : 0;
  if (emitted.count({op, piece}))
    return success();
  emitted.insert({op, piece});
  // op-order: the ops this one must follow come first, the same
  // micro-batch's piece (or every piece, for an op that is not split).
  for (Operation *before : orderAfter.lookup(op)) {
    if (isa<tsr::ConstantOp>(before)) // materialised where used
      continue;
    bool each = plans[before].perMicro;
    for (int64_t i = 0; i < (each ? M : 1); ++i)
      if ((!each || !p.perMicro || i == m) && failed(emitInstance(before, i)))
        return failure();
  }
  // Producers first: ops not split over micro-batches are placed right
  // before their first use; split ones must be there already, or (for a
  // consumer that gathers all pieces) are placed now.
  for (Value v : op->getOperands()) {
    Operation *prod = v.getDefiningOp();
    if (!prod || isa<tsr::ConstantOp>(prod))
      continue;
    OpPlan &pp = plans[prod];
    if (!pp.perMicro) {
      if (failed(p.perMicro && rematerialized(prod) ? emitRemat(prod, m)
                                                    : emitInstance(prod, 0)))
        return failure();
      continue;
    }
    unsigned idx = cast<OpResult>(v).getResultNumber();
    FullLayout have = pp.results[idx];
    unsigned operandIdx =
        llvm::find(op->getOperands(), v) - op->getOperands().begin();
    bool samePiece = p.perMicro && !(have.mb.kind == lay::AxisKind::R) &&
                     operandIdx < p.operands.size() &&
                     have.mb == p.operands[operandIdx].mb;
    if (samePiece) {
      if (failed(emitInstance(prod, m)))
        return failure();
    } else {
      for (int64_t i = 0; i < M; ++i)
        if (failed(emitInstance(prod, i)))
          return failure();
    }
  }
  usePhase = (p.kind > 0 || hasAttr<Tsr::UpdateAttrHelper>(op)) ? 1 : 0;
  useMicro = p.perMicro ? m : std::max<int64_t>(rematMicro, 0);
  // A value made on every device that this stage's op wants whole over pp
  // is gathered (or summed) over pp by every rank, here, so that each pp
  // group's members make the same collectives at the same point.
  if (p.stage != kEvery)
    for (auto [i, v] : llvm::enumerate(op->getOperands())) {
      Operation *prod = v.getDefiningOp();
      if (!prod || !plans.count(prod) || plans[prod].stage != kEvery ||
          i >= p.operands.size())
        continue;
      const FullLayout &have =
          plans[prod].results[cast<OpResult>(v).getResultNumber()];
      if (have.spatial.states[kPp] == p.operands[i].spatial.states[kPp])
        continue;
      for (auto &rs : ranks)
        if (failed(materialize(*rs, v, p.operands[i], m)))
          return failure();
    }
  for (int64_t r : ranksOfStage(p.stage)) {
    RankState &rs = *ranks[r];
    IRMapping map;
    for (auto [i, v] : llvm::enumerate(op->getOperands())) {
      FullLayout want =
          i < p.operands.size() ? p.operands[i] : replicated(kAxes);
      auto local = materialize(rs, v, want, m);
      if (failed(local))
        return failure();
      if (i < p.localOperandShapes.size() &&
          cast<RankedTensorType>(local->getType()).getShape() !=
              ArrayRef<int64_t>(p.localOperandShapes[i]))
        return fail(op, "internal: operand " + Twine(i) + " of '" +
                            tsr::opNameOrKind(op) +
                            "' has a local shape that does "
                            "not match its plan");
      map.map(v, *local);
    }
    SmallVector<Value> results;
    FailureOr<bool> vocab = emitVocabPiece(rs, op, p, map, results);
    if (failed(vocab))
      return failure();
    if (!*vocab) {
      Operation *copy = rs.builder.clone(*op, map);
      for (auto attr : llvm::to_vector(copy->getDiscardableAttrs()))
        if (attr.getName().getValue().starts_with("dist."))
          copy->removeDiscardableAttr(attr.getName());
      for (auto [res, type] : llvm::zip(copy->getResults(), p.localResultTypes))
        res.setType(type);
      // A slice keeps the whole of every split dimension: its limit there
      // is the local size.
      if (auto s = dyn_cast<tsr::SliceOp>(copy)) {
        SmallVector<int64_t> limits(s.getLimits());
        auto in = s.getInput().getType();
        auto orig = cast<tsr::SliceOp>(op).getInput().getType();
        for (int64_t d = 0; d < in.getRank(); ++d)
          if (in.getDimSize(d) != orig.getDimSize(d))
            limits[d] = in.getDimSize(d);
        s.setLimits(limits);
      }
      if (auto d = dyn_cast<tsr::DropoutOp>(copy))
        if (failed(markDropoutPiece(rs, d, p, m)))
          return failure();
      results.assign(copy->getResults().begin(), copy->getResults().end());
    }
    for (auto [i, orig, res] : llvm::enumerate(op->getResults(), results)) {
      rs.pieces[{orig.getAsOpaquePointer(), piece}] = res;
      // Local adds in the order the use would sum the pieces: one piece
      // alive at a time instead of M, with or without early reduction.
      if (p.perMicro && M > 1 && p.results[i].mb.kind == lay::AxisKind::V &&
          summedByEveryUse(orig))
        addToTotal(rs, orig, m, res);
    }
  }
  return reduceEarly(op);
}

/// A scalar constant of `type`'s element type.
static Value scalar(OpBuilder &b, Location loc, Type elementType, double x) {
  auto t = RankedTensorType::get({}, elementType);
  Attribute a = isa<FloatType>(elementType)
                    ? Attribute(FloatAttr::get(elementType, x))
                    : Attribute(IntegerAttr::get(elementType, int64_t(x)));
  return tsr::ConstantOp::create(b, loc, t, DenseElementsAttr::get(t, a));
}

/// `x` with a dimension of size 1 appended (a per-row value against rows).
static Value column(OpBuilder &b, Location loc, Value x) {
  auto t = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape(t.getShape());
  shape.push_back(1);
  return tsr::ReshapeOp::create(
      b, loc, RankedTensorType::get(shape, t.getElementType()), x);
}

/// The piece of a vocabulary (the rows of an embedding table, the classes
/// of a cross-entropy) that op `op` computes on rank `rs` when its plan
/// splits that dimension, made of plain ops and collectives over the axes
/// that split it; false when the op is not one of those or is not split
/// there (the op is then copied as it is).
///  * gather (axis 0) on a piece of the table: the rows of the indices in
///    the piece's range, zeros for the others (their sum over the pieces is
///    the whole lookup: the annotation's `v+`);
///  * embedding_grad into a piece of the table: the rows of the indices in
///    its range;
///  * softmax_cross_entropy on a piece of the classes (sum, none): the row
///    maximum and the sum of exponentials over all pieces (all_reduce max
///    and sum), then each piece's share of the loss: -x[label] where the
///    label is its class, plus log(sum) + max on the first piece, so that
///    the shares add up to the loss (the annotation's `c+`);
///  * softmax_cross_entropy_grad: (softmax - onehot) * dloss on the piece.
FailureOr<bool> Partitioner::emitVocabPiece(RankState &rs, Operation *op,
                                            const OpPlan &p, IRMapping &map,
                                            SmallVectorImpl<Value> &results) {
  const lay::Layout *layout = nullptr;
  int64_t dim = 0;
  RankedTensorType whole;
  if (auto g = dyn_cast<tsr::GatherOp>(op)) {
    if (g.getAxis() != 0)
      return false;
    layout = &p.operands[0].spatial;
    whole = cast<RankedTensorType>(g.getData().getType());
  } else if (auto e = dyn_cast<tsr::EmbeddingGradOp>(op)) {
    layout = &p.results[0].spatial;
    whole = cast<RankedTensorType>(e.getType());
  } else if (isa<tsr::SoftmaxCrossEntropyOp, tsr::SoftmaxCrossEntropyGradOp>(
                 op)) {
    layout = &p.operands[0].spatial;
    whole = cast<RankedTensorType>(op->getOperand(0).getType());
    dim = 1;
  } else {
    return false;
  }
  // The axes that split the vocabulary, the piece's offset and size.
  lay::Layout only;
  only.states.assign(kAxes, lay::AxisState::r());
  SmallVector<StringRef> axes;
  int64_t pieces = 1;
  for (size_t a = 0; a < kAxes; ++a)
    if (layout->states[a].isSplit(static_cast<int>(dim))) {
      only.states[a] = lay::AxisState::d(static_cast<int>(dim));
      axes.push_back(rvdMesh.axis(a).name);
      pieces *= rvdMesh.axis(a).size;
    }
  if (axes.empty() || pieces == 1)
    return false;
  std::vector<int64_t> coords;
  for (size_t a = 0; a < kAxes; ++a) {
    SmallVector<int64_t> g = mesh.groupOf(rs.rank, {rvdMesh.axis(a).name});
    coords.push_back(llvm::find(g, rs.rank) - g.begin());
  }
  auto offsets = lay::pieceOffsets(
      rvdMesh,
      {std::vector<int64_t>(whole.getShape().begin(), whole.getShape().end())},
      only, coords);
  if (!offsets)
    return fail(op, "internal: the piece of a split vocabulary: " +
                        offsets.message());
  int64_t offset = (*offsets)[dim];
  int64_t size = whole.getDimSize(dim) / pieces;
  SmallVector<int64_t> group = mesh.groupOf(rs.rank, axes);
  OpBuilder &b = rs.builder;
  Location loc = op->getLoc();
  using Pred = tsr::ComparePredicate;

  // The indices in [offset, offset + size), and each one's row in the
  // piece (0 for the others). The shift is done in f32, exact for
  // vocabularies below 2^24.
  auto rowsOfPiece = [&](Value idx) -> FailureOr<std::pair<Value, Value>> {
    if (whole.getDimSize(0) > (int64_t(1) << 24))
      return fail(op, "a split vocabulary of " + Twine(whole.getDimSize(0)) +
                          " rows: the pieces' indices are shifted in f32, "
                          "exact up to 2^24 rows");
    auto t = cast<RankedTensorType>(idx.getType());
    Type et = t.getElementType();
    Value lo = tsr::CompareOp::create(b, loc, Pred::ge, idx,
                                      scalar(b, loc, et, offset));
    Value hi = tsr::CompareOp::create(b, loc, Pred::lt, idx,
                                      scalar(b, loc, et, offset + size));
    Value in = tsr::WhereOp::create(b, loc, lo, hi, lo);
    Type f32 = b.getF32Type();
    Value f = tsr::CastOp::create(
        b, loc, RankedTensorType::get(t.getShape(), f32), idx);
    Value shifted =
        tsr::SubOp::create(b, loc, f, scalar(b, loc, f32, double(offset)));
    Value clamped =
        tsr::WhereOp::create(b, loc, in, shifted, scalar(b, loc, f32, 0.0));
    return std::make_pair(in, Value(tsr::CastOp::create(b, loc, t, clamped)));
  };

  if (auto g = dyn_cast<tsr::GatherOp>(op)) {
    Value data = map.lookup(g.getData());
    auto rows = rowsOfPiece(map.lookup(g.getIndices()));
    if (failed(rows))
      return failure();
    Value got = tsr::GatherOp::create(b, loc, data, rows->second, 0);
    Type et = cast<RankedTensorType>(data.getType()).getElementType();
    Value in = rows->first;
    for (int64_t k = 1; k < whole.getRank(); ++k)
      in = column(b, loc, in);
    results.push_back(
        tsr::WhereOp::create(b, loc, in, got, scalar(b, loc, et, 0.0)));
    return true;
  }
  if (auto e = dyn_cast<tsr::EmbeddingGradOp>(op)) {
    Value grad = map.lookup(e.getGrad());
    auto rows = rowsOfPiece(map.lookup(e.getIndices()));
    if (failed(rows))
      return failure();
    Type et = cast<RankedTensorType>(grad.getType()).getElementType();
    Value mine = tsr::WhereOp::create(b, loc, column(b, loc, rows->first), grad,
                                      scalar(b, loc, et, 0.0));
    results.push_back(tsr::EmbeddingGradOp::create(
        b, loc, p.localResultTypes[0], mine, rows->second));
    return true;
  }

  // The cross-entropy and its gradient on a piece of the classes.
  auto reduction =
      isa<tsr::SoftmaxCrossEntropyOp>(op)
          ? cast<tsr::SoftmaxCrossEntropyOp>(op).getReduction()
          : cast<tsr::SoftmaxCrossEntropyGradOp>(op).getReduction();
  int64_t ignore =
      isa<tsr::SoftmaxCrossEntropyOp>(op)
          ? cast<tsr::SoftmaxCrossEntropyOp>(op).getIgnoreIndex()
          : cast<tsr::SoftmaxCrossEntropyGradOp>(op).getIgnoreIndex();
  if (reduction == tsr::LossReduction::mean)
    return fail(op, "a cross-entropy with mean reduction cannot have its "
                    "classes split (tsr-decompose-means makes a distributed "
                    "step's loss a sum, which can)");
  Value x = map.lookup(op->getOperand(0));
  Value labels = map.lookup(op->getOperand(1));
  auto xt = cast<RankedTensorType>(x.getType());
  Type et = xt.getElementType();
  int64_t n = xt.getDimSize(0);
  auto rowType = RankedTensorType::get({n, 1}, et);
  Value maxHere = tsr::ReduceMaxOp::create(b, loc, x, {1}, true);
  Value max =
      AllReduceOp::create(b, loc, rowType, maxHere, group, ReductionKind::max);
  Value ex = tsr::ExpOp::create(b, loc, tsr::SubOp::create(b, loc, x, max));
  Value sumHere = tsr::ReduceSumOp::create(b, loc, ex, {1}, true);
  Value sum = AllReduceOp::create(b, loc, rowType, sumHere, group);
  // The label's column in this piece: the classes' ids beside each label.
  auto lt = cast<RankedTensorType>(labels.getType());
  auto idsType = RankedTensorType::get({1, size}, lt.getElementType());
  SmallVector<APInt> ids;
  for (int64_t c = 0; c < size; ++c)
    ids.push_back(APInt(lt.getElementTypeBitWidth(), offset + c, true));
  Value classes = tsr::ConstantOp::create(b, loc, idsType,
                                          DenseElementsAttr::get(idsType, ids));
  Value labelCol = column(b, loc, labels);
  Value hot = tsr::CompareOp::create(b, loc, Pred::eq, classes, labelCol);
  Value valid = tsr::CompareOp::create(
      b, loc, Pred::ne, labelCol, scalar(b, loc, lt.getElementType(), ignore));
  Value zero = scalar(b, loc, et, 0.0);
  if (isa<tsr::SoftmaxCrossEntropyOp>(op)) {
    Value picked = tsr::ReduceSumOp::create(
        b, loc, tsr::WhereOp::create(b, loc, hot, x, zero), {1}, true);
    Value share = offset == 0
                      ? Value(tsr::SubOp::create(
                            b, loc,
                            tsr::AddOp::create(
                                b, loc, tsr::LogOp::create(b, loc, sum), max),
                            picked))
                      : Value(tsr::NegOp::create(b, loc, picked));
    share = tsr::WhereOp::create(b, loc, valid, share, zero);
    if (reduction == tsr::LossReduction::sum)
      results.push_back(tsr::ReduceSumOp::create(b, loc, share, {0, 1}));
    else
      results.push_back(tsr::ReshapeOp::create(
          b, loc, RankedTensorType::get({n}, et), share));
    return true;
  }
  Value dloss = map.lookup(op->getOperand(2));
  if (reduction == tsr::LossReduction::none)
    dloss = column(b, loc, dloss);
  Value softmax = tsr::DivOp::create(b, loc, ex, sum);
  Value onehot =
      tsr::WhereOp::create(b, loc, hot, scalar(b, loc, et, 1.0), zero);
  Value d = tsr::MulOp::create(
      b, loc, tsr::SubOp::create(b, loc, softmax, onehot), dloss);
  results.push_back(tsr::WhereOp::create(b, loc, valid, d, zero));
  return true;
}

/// Whether op `op` (on every device, one instance per micro-batch) can run
/// for micro-batch m now: it depends on a value of the micro-batches a
/// stage makes, and every value of the micro-batches it needs is made or
/// can be made on every device now (ops without the batch, such as a
/// weight's transpose, are made on demand).
bool Partitioner::readyOnEveryDevice(Operation *op, int64_t m) {
  // Whether an op depends on a stage's value of the micro-batches (in
  // program order, producers first).
  std::function<bool(Operation *)> fedByStage = [&](Operation *o) {
    auto [it, fresh] = fed.try_emplace(o, false);
    if (!fresh)
      return it->second;
    bool any = false;
    for (Value v : o->getOperands())
      if (Operation *prod = v.getDefiningOp(); prod && plans.count(prod))
        any |= (plans[prod].perMicro && plans[prod].stage != kEvery) ||
               fedByStage(prod);
    fed[o] = any;
    return any;
  };
  if (!fedByStage(op))
    return false;
  std::map<std::pair<Operation *, int64_t>, bool> memo;
  std::function<bool(Operation *, int64_t)> ready = [&](Operation *o,
                                                        int64_t k) {
    auto [it, fresh] = memo.try_emplace({o, k}, false);
    if (!fresh)
      return it->second;
    OpPlan &p = plans[o];
    for (auto [i, v] : llvm::enumerate(o->getOperands())) {
      Operation *prod = v.getDefiningOp();
      if (!prod || isa<tsr::ConstantOp>(prod) || !plans.count(prod))
        continue;
      OpPlan &q = plans[prod];
      if (!q.perMicro) {
        if (q.kind != 0 && !emitted.count({prod, 0}))
          return false;
        continue;
      }
      FullLayout have = q.results[cast<OpResult>(v).getResultNumber()];
      bool samePiece = !(have.mb.kind == lay::AxisKind::R) &&
                       i < p.operands.size() && have.mb == p.operands[i].mb;
      for (int64_t j = 0; j < M; ++j)
        if ((!samePiece || j == k) && !emitted.count({prod, j}) &&
            (q.stage != kEvery || !ready(prod, j)))
          return false;
    }
    memo[{o, k}] = true;
    return true;
  };
  return ready(op, m);
}

/// Whether `op` is made again right before each micro-batch's use: a
/// widening cast of a value the batch does not reach (a bf16 weight's f32
/// copy, tsr-widen-at-use), or a transpose or reshape of one or of a ZeRO-3
/// parameter, used only by ops of each micro-batch and other such ops. Made
/// once, CSE's single copy would live from the first micro-batch's use to
/// the last one's, beside the narrow value it is cheap to widen again (the
/// shard it is gathered from again).
bool Partitioner::rematerialized(Operation *op) {
  if (auto it = remat.find(op); it != remat.end())
    return it->second;
  // A widening cast, or a transpose or reshape of one (through others).
  std::function<bool(Operation *)> kind = [&](Operation *o) {
    if (auto c = dyn_cast<tsr::CastOp>(o)) {
      auto from = dyn_cast<FloatType>(c.getInput().getType().getElementType());
      auto to = dyn_cast<FloatType>(c.getType().getElementType());
      return from && to && to.getWidth() > from.getWidth();
    }
    // ... or of a ZeRO-3 parameter, gathered for each micro-batch anyway.
    if (isa<tsr::TransposeOp, tsr::ReshapeOp>(o)) {
      if (isZero3Param(o->getOperand(0)))
        return true;
      if (Operation *in = o->getOperand(0).getDefiningOp())
        return kind(in);
    }
    return false;
  };
  bool ok = kind(op) && plans.count(op) && !plans[op].perMicro &&
            llvm::all_of(op->getUsers(), [&](Operation *user) {
              return plans.count(user) &&
                     (plans[user].perMicro || rematerialized(user));
            });
  remat[op] = ok;
  return ok;
}

/// Emits rematerialized op `op` (and the rematerialized ops it reads) for
/// micro-batch m's users, unless its current copy already serves them.
LogicalResult Partitioner::emitRemat(Operation *op, int64_t m) {
  auto it = rematFor.find(op);
  if (it != rematFor.end() && it->second == m)
    return success();
  // (The producers' emission inserts into rematFor: no iterator past it.)
  bool madeBefore = it != rematFor.end();
  for (Value v : op->getOperands())
    if (Operation *prod = v.getDefiningOp();
        prod && plans.count(prod) && rematerialized(prod))
      if (failed(emitRemat(prod, m)))
        return failure();
  if (madeBefore) {
    // The new copy replaces the old one, and so do conversions of it.
    emitted.erase({op, 0});
    for (Value r : op->getResults()) {
      void *key = r.getAsOpaquePointer();
      for (auto &rs : ranks) {
        auto lo = rs->converted.lower_bound(
            {key, std::string(), std::numeric_limits<int64_t>::min()});
        while (lo != rs->converted.end() && std::get<0>(lo->first) == key)
          lo = rs->converted.erase(lo);
      }
    }
  }
  rematFor[op] = m;
  int64_t outer = rematMicro;
  rematMicro = m;
  LogicalResult made = emitInstance(op, 0);
  rematMicro = outer;
  return made;
}

/// Whether every use of `v` wants its micro-batch pieces summed (as the
/// update wants a weight gradient), so none needs a piece by itself.
bool Partitioner::summedByEveryUse(Value v) {
  for (OpOperand &use : v.getUses()) {
    auto it = plans.find(use.getOwner());
    if (it == plans.end())
      continue; // the step's return: whole values
    const OpPlan &u = it->second;
    unsigned i = use.getOperandNumber();
    if (i < u.operands.size() && !(u.operands[i].mb.kind == lay::AxisKind::R))
      return false;
  }
  return true;
}

/// Adds micro-batch piece `m` of `v` to the rank's running total, in the
/// order convertLocal would sum the pieces ((p0 + p1) + p2 ...: the same
/// float operations). Pieces must come in order; otherwise the total is
/// abandoned and the pieces are summed at the first use, as without it.
void Partitioner::addToTotal(RankState &rs, Value v, int64_t m, Value piece) {
  auto &[sum, count] = rs.totals[v.getAsOpaquePointer()];
  if (count != m) {
    count = -1;
    return;
  }
  sum =
      count == 0
          ? piece
          : tsr::AddOp::create(rs.builder, v.getLoc(), sum, piece).getResult();
  ++count;
}

/// The number of pieces a layout cuts a tensor into on each rank.
static int64_t splitPieces(const lay::Mesh &mesh, const lay::Layout &l) {
  int64_t n = 1;
  for (auto [a, state] : llvm::enumerate(l.states))
    if (state.kind == lay::AxisKind::D)
      n *= mesh.axis(a).size;
  return n;
}

/// Once the last instance of backward op `op` is emitted, its results are
/// complete: each conversion that makes one smaller for a consumer still
/// to come (a partial sum reduce-scattered into shards, a whole value
/// sliced) is made now, on the ranks of the producer's device, so the
/// larger value dies here. Every rank of a device makes the same
/// conversions at the same point of the global order, so collectives stay
/// matched.
LogicalResult Partitioner::reduceEarly(Operation *op) {
  OpPlan &p = plans[op];
  if (!early || p.kind == 0)
    return success();
  for (int64_t i = 0; p.perMicro && i < M; ++i)
    if (!emitted.count({op, i}))
      return success();
  for (auto [idx, v] : llvm::enumerate(op->getResults())) {
    FullLayout have = p.results[idx];
    if (have.mb.kind == lay::AxisKind::D)
      continue; // concatenating micro-batches would grow it
    for (OpOperand &use : v.getUses()) {
      auto it = plans.find(use.getOwner());
      if (it == plans.end())
        continue;
      const OpPlan &u = it->second;
      unsigned i = use.getOperandNumber();
      if (u.perMicro || emitted.count({u.op, 0}) ||
          deviceOf(u.stage) != deviceOf(p.stage) || i >= u.operands.size() ||
          splitPieces(rvdMesh, u.operands[i].spatial) <=
              splitPieces(rvdMesh, have.spatial))
        continue;
      for (int64_t r : ranksOfStage(p.stage))
        if (failed(materialize(*ranks[r], v, u.operands[i], 0)))
          return failure();
    }
  }
  return success();
}

/// A dropout split over ranks or micro-batches draws, piece by piece, the
/// single-device mask (runtime/common/Dropout.h): each piece names where it
/// lies in the whole tensor. The batch dimension's micro-batch pieces are
/// inner to dp's, as the inputs are sliced (convertLocal).
LogicalResult Partitioner::markDropoutPiece(RankState &rs, tsr::DropoutOp d,
                                            const OpPlan &p, int64_t m) {
  ArrayRef<int64_t> global =
      cast<tsr::DropoutOp>(p.op).getInput().getType().getShape();
  if (d.getInput().getType().getShape() == global)
    return success();
  // The micro-batch axis is inner to dp and tp, pp (on every device)
  // inner to it (convertLocal's order).
  auto mesh4 =
      lay::Mesh::create({{"dp", dp}, {"tp", tp}, {"mb", M}, {"pp", pp}});
  if (!mesh4)
    return fail(p.op, mesh4.message());
  const lay::Layout &spatial = p.results[0].spatial;
  lay::Layout layout;
  layout.states = {spatial.states[0], spatial.states[1], p.results[0].mb,
                   spatial.states[kPp]};
  SmallVector<int64_t> dpGroup = mesh.groupOf(rs.rank, {"dp"}),
                       tpGroup = mesh.groupOf(rs.rank, {"tp"});
  std::vector<int64_t> coords = {llvm::find(dpGroup, rs.rank) - dpGroup.begin(),
                                 llvm::find(tpGroup, rs.rank) - tpGroup.begin(),
                                 p.perMicro ? m : 0, deviceOfRank(rs.rank)};
  auto offsets = lay::pieceOffsets(
      *mesh4, {std::vector<int64_t>(global.begin(), global.end())}, layout,
      coords);
  if (!offsets)
    return fail(p.op, "internal: the piece of a dropout: " + offsets.message());
  d.setOffsets(*offsets);
  d.setGlobalShape(global);
  return success();
}

LogicalResult Partitioner::emitAll() {
  Block &body = step.getBody().front();
  // The blocks of the pipeline schedule: (stage, kind, micro-batch), from
  // dist-schedule's order or a built-in GPipe / 1F1B.
  std::vector<std::tuple<int64_t, int64_t, int64_t>> blocks;
  ModuleOp module = step->getParentOfType<ModuleOp>();
  PipelineAttr pipeline = getEnclosingPipeline(module);
  if (ArrayAttr order = pipeline ? pipeline.getOrder() : nullptr) {
    for (Attribute a : order) {
      auto b = cast<DenseI64ArrayAttr>(a);
      blocks.push_back({b[0], b[1], b[2]});
    }
  } else {
    auto method = schedule::parseBuiltinMethod(scheduleName);
    if (!method || (*method != schedule::BuiltinMethod::GPipe &&
                    *method != schedule::BuiltinMethod::OneFOneB))
      return fail(step, "unknown schedule '" + scheduleName +
                            "' (without dist-schedule: gpipe or 1f1b)");
    schedule::PipelineSpec spec;
    spec.stages = pp;
    auto builtin = schedule::pipelineOrder(scheduleName, spec, M, std::nullopt);
    if (!builtin.error.empty())
      return fail(step, builtin.error);
    for (const schedule::OrderedBlock &b : builtin.blocks)
      blocks.push_back({b.stage, int64_t(b.kind), b.micro});
  }
  bool hasW = llvm::any_of(blocks, [](auto &b) { return std::get<1>(b) == 2; });
  for (auto [s, kind, m] : blocks) {
    for (Operation &op : body) {
      auto it = plans.find(&op);
      if (it == plans.end() || isa<tsr::ConstantOp>(op))
        continue;
      OpPlan &p = it->second;
      int64_t opKind = (p.kind == 2 && !hasW) ? 1 : p.kind;
      if (p.perMicro && p.stage == s && opKind == kind &&
          failed(emitInstance(&op, m)))
        return failure();
    }
    // Ops on every device, once the stages made their inputs: the head
    // after the last stage's forward, the embedding's gradient after the
    // first stage's backward. (Those that read no stage's value, such as
    // the embedding itself, come when a stage asks for them.)
    for (Operation &op : body) {
      auto it = plans.find(&op);
      if (it == plans.end() || isa<tsr::ConstantOp>(op) ||
          it->second.stage != kEvery || !it->second.perMicro)
        continue;
      for (int64_t i = 0; i < M; ++i)
        if (!emitted.count({&op, i}) && readyOnEveryDevice(&op, i) &&
            failed(emitInstance(&op, i)))
          return failure();
    }
  }
  // Whatever remains (the update, ops the blocks did not need), in order.
  for (Operation &op : body) {
    if (isa<func::ReturnOp, tsr::ConstantOp>(op))
      continue;
    OpPlan &p = plans[&op];
    for (int64_t m = 0; m < (p.perMicro ? M : 1); ++m)
      if (failed(emitInstance(&op, m)))
        return failure();
  }
  return finish();
}

LogicalResult Partitioner::finish() {
  Block &body = step.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  // The home stage of a parameter or state result: its argument's.
  llvm::StringMap<BlockArgument> argByName;
  for (BlockArgument arg : body.getArguments())
    for (StringRef key : {Tsr::ParamAttrHelper::getNameStr(),
                          Tsr::StateAttrHelper::getNameStr()})
      if (auto n = step.getArgAttrOfType<StringAttr>(arg.getArgNumber(), key))
        argByName[(Twine(key) + ":" + n.getValue()).str()] = arg;
  // Phase 1: every rank materialises its results (this may add sends to
  // other ranks); phase 2: the returns.
  std::vector<SmallVector<Value>> values(ranks.size());
  std::vector<SmallVector<Attribute>> attrs(ranks.size());
  for (auto &rp : ranks) {
    RankState &r = *rp;
    for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
      DictionaryAttr a = step.getResultAttrDict(i);
      FullLayout want = replicated(kAxes);
      // The loss and the gradient norm: replicated on every rank.
      if (!a || !(a.get(Tsr::LossAttrHelper::getNameStr()) ||
                  a.get(Tsr::GradNormAttrHelper::getNameStr()))) {
        BlockArgument home;
        for (StringRef key : {Tsr::ParamAttrHelper::getNameStr(),
                              Tsr::StateAttrHelper::getNameStr()})
          if (auto n = a ? a.getAs<StringAttr>(key) : StringAttr())
            home = argByName.lookup((Twine(key) + ":" + n.getValue()).str());
        if (!home)
          return fail(step, "result " + Twine(i) +
                                " is neither the loss nor a parameter or "
                                "state with a matching argument");
        if (!onDevice(argStages.lookup(home), deviceOfRank(r.rank)))
          continue;
        want = argLayouts[home];
      }
      auto local = materialize(r, v, want, 0);
      if (failed(local))
        return failure();
      values[r.rank].push_back(*local);
      attrs[r.rank].push_back(a ? Attribute(a) : DictionaryAttr::get(ctx));
    }
  }
  for (auto &rp : ranks) {
    RankState &r = *rp;
    func::ReturnOp::create(r.builder, ret.getLoc(), values[r.rank]);
    Block &entry = r.fn.getBody().front();
    SmallVector<Type> results;
    for (Value v : values[r.rank])
      results.push_back(v.getType());
    r.fn.setType(FunctionType::get(ctx, entry.getArgumentTypes(), results));
    r.fn.setAllArgAttrs(r.argAttrs);
    r.fn.setAllResultAttrs(attrs[r.rank]);
  }
  return success();
}

LogicalResult Partitioner::run() {
  for (auto [name, size] : llvm::zip(mesh.getNames(), mesh.getSizes())) {
    if (name.getValue() == "dp")
      dp = size;
    else if (name.getValue() == "tp")
      tp = size;
    else if (name.getValue() == "pp")
      pp = size;
    else
      return step.emitError("dist-partition: the mesh must have axes dp, tp "
                            "and pp, found '")
             << name.getValue() << "'";
  }
  if (PipelineAttr pipeline = getEnclosingPipeline(step))
    if (DenseI64ArrayAttr devices = pipeline.getStageDevices())
      stageDevices.assign(devices.asArrayRef().begin(),
                          devices.asArrayRef().end());
  auto m = lay::Mesh::create({{"dp", dp}, {"tp", tp}, {"pp", pp}});
  if (!m)
    return step.emitError("dist-partition: ") << m.message();
  rvdMesh = *m;
  if (failed(planOps()) || failed(planArgs()))
    return failure();

  OpBuilder mb(step);
  mb.setInsertionPointAfter(step);
  for (int64_t r = 0; r < mesh.numRanks(); ++r) {
    auto rs = std::make_unique<RankState>(ctx);
    rs->rank = r;
    rs->coords = mesh.coords(r);
    // A unique name for readers; the roles are in the attributes:
    // dist.rank, dist.origin (the step it came from, whose name
    // dist-extract-rank restores) and the step's tsr.train_step.
    rs->fn = func::FuncOp::create(
        mb, step.getLoc(), (step.getSymName() + "_rank" + Twine(r)).str(),
        FunctionType::get(ctx, {}, {}));
    setAttr<Dist::RankAttrHelper>(
        rs->fn, IntegerAttr::get(IntegerType::get(ctx, 64), r));
    setAttr<Dist::OriginAttrHelper>(
        rs->fn, FlatSymbolRefAttr::get(step.getSymNameAttr()));
    if (auto role = getAttr<Tsr::TrainStepAttrHelper>(step))
      setAttr<Tsr::TrainStepAttrHelper>(rs->fn, role);
    Block *entry = rs->fn.addEntryBlock();
    rs->builder.setInsertionPointToEnd(entry);
    mb.setInsertionPointAfter(rs->fn);
    ranks.push_back(std::move(rs));
  }
  if (failed(emitAll()) || failedAny)
    return failure();
  step.erase();
  return success();
}

struct DistPartitionPass
    : public dist::impl::DistPartitionBase<DistPartitionPass> {
  using DistPartitionBase::DistPartitionBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MeshAttr mesh = requireMesh(module, "dist-partition");
    if (!mesh)
      return signalPassFailure();
    int64_t microBatches = 1;
    if (PipelineAttr pipeline = getEnclosingPipeline(module))
      microBatches = pipeline.getMicroBatches();
    SmallVector<func::FuncOp> steps;
    for (auto f : module.getOps<func::FuncOp>())
      if (hasAttr<Tsr::TrainStepAttrHelper>(f))
        steps.push_back(f);
    if (reduceEarly != "auto" && reduceEarly != "always" &&
        reduceEarly != "never") {
      module.emitError("dist-partition: reduce-early must be auto, always or "
                       "never, got '")
          << reduceEarly << "'";
      return signalPassFailure();
    }
    for (func::FuncOp f : steps)
      if (failed(partition(f, mesh, microBatches)))
        return signalPassFailure();
  }

  /// The larger predicted peak over `fns` (dist::predictPeakBytes).
  static int64_t worstPeak(ArrayRef<func::FuncOp> fns) {
    int64_t worst = 0;
    for (func::FuncOp fn : fns)
      worst = std::max(worst, predictPeakBytes(fn));
    return worst;
  }

  /// Partitions `f`. Reducing gradients early frees whole partial sums
  /// sooner but moves the reductions (and a collective's scratch buffers)
  /// into the backward, where activations are still alive; which order has
  /// the lower peak depends on the model, so with reduce-early=auto both
  /// are made and the one with the lower predicted peak over the ranks is
  /// kept (the other on a tie: the order of the step's own ops). Both run
  /// the same float operations, so results are the same bit for bit.
  LogicalResult partition(func::FuncOp f, MeshAttr mesh, int64_t M) {
    if (reduceEarly != "auto")
      return Partitioner(f, mesh, M, schedule, reduceEarly == "always").run();
    OpBuilder b(f);
    b.setInsertionPointAfter(f);
    auto copy = cast<func::FuncOp>(b.clone(*f));
    Partitioner early(copy, mesh, M, schedule, true);
    if (failed(early.run()))
      return failure();
    Partitioner late(f, mesh, M, schedule, false);
    if (failed(late.run()))
      return failure();
    SmallVector<func::FuncOp> earlyFns = early.rankFunctions(),
                              lateFns = late.rankFunctions();
    bool keepEarly = worstPeak(earlyFns) < worstPeak(lateFns);
    for (func::FuncOp fn : keepEarly ? lateFns : earlyFns)
      fn.erase();
    return success();
  }
};

} // namespace
