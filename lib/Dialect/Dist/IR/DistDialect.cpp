//===- DistDialect.cpp - the dist dialect ---------------------------------===//
//
// Registration, and the verifier of the discardable attributes (declared in
// DistDialect.td): the generic check of their place and kind, then what
// each one's value must satisfy beyond its kind.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/Dist/IR/DistDialect.h"
#include "tessera/Dialect/Dist/IR/DistOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace tessera;
using namespace tessera::dist;

#include "tessera/Dialect/Dist/IR/DistOpsDialect.cpp.inc"

void DistDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "tessera/Dialect/Dist/IR/DistOps.cpp.inc"
      >();
}

namespace {

/// The value of an i64 attribute, or an error naming the attribute.
FailureOr<int64_t> getI64(Operation *op, NamedAttribute attr,
                          int64_t least = 0) {
  auto value = dyn_cast<IntegerAttr>(attr.getValue());
  if (!value || !value.getType().isSignlessInteger(64)) {
    op->emitError() << "'" << attr.getName().getValue()
                    << "' must be an i64, found " << attr.getValue();
    return failure();
  }
  if (value.getInt() < least) {
    if (least < 0) {
      op->emitError() << "'" << attr.getName().getValue()
                      << "' must be >= 0, or -1 for every device, found "
                      << value.getInt();
      return failure();
    }
    op->emitError() << "'" << attr.getName().getValue()
                    << "' must be non-negative, found " << value.getInt();
    return failure();
  }
  return value.getInt();
}

LogicalResult verifyMesh(Operation *op, NamedAttribute attr) {
  if (!isa<MeshAttr>(attr.getValue()))
    return op->emitError() << "'" << attr.getName().getValue()
                           << "' must be a #dist.mesh, found "
                           << attr.getValue();
  return success();
}

LogicalResult verifySplit(Operation *op, NamedAttribute attr) {
  auto split = cast<DictionaryAttr>(attr.getValue());
  MeshAttr mesh = getEnclosingMesh(op);
  if (!mesh)
    return op->emitError()
           << "'dist.split' needs a 'dist.mesh' on the enclosing module";
  // Axis name -> the dimension already split along it.
  llvm::StringMap<StringRef> used;
  for (NamedAttribute entry : split) {
    StringRef dim = entry.getName().getValue();
    auto axis = dyn_cast<StringAttr>(entry.getValue());
    if (!axis)
      return op->emitError()
             << "'dist.split' maps dimension '" << dim << "' to "
             << entry.getValue() << ", not to a mesh axis name string";
    if (!mesh.axisIndex(axis.getValue()))
      return op->emitError()
             << "'dist.split' names mesh axis '" << axis.getValue()
             << "', but the mesh has " << mesh.axisList();
    auto [it, inserted] = used.try_emplace(axis.getValue(), dim);
    if (!inserted)
      return op->emitError()
             << "'dist.split' splits both '" << it->second << "' and '" << dim
             << "' along mesh axis '" << axis.getValue() << "'";
  }
  return success();
}

/// (offset, bytes) pairs: offsets >= 0, sizes > 0.
LogicalResult verifyArena(Operation *op, NamedAttribute attr) {
  ArrayRef<int64_t> slots =
      cast<DenseI64ArrayAttr>(attr.getValue()).asArrayRef();
  if (slots.size() % 2 != 0)
    return op->emitError() << "'dist.arena' must hold (offset, bytes) pairs, "
                              "found "
                           << slots.size() << " values";
  for (size_t i = 0; i < slots.size(); i += 2)
    if (slots[i] < 0 || slots[i + 1] <= 0)
      return op->emitError() << "'dist.arena' slot " << i / 2 << " is at "
                             << slots[i] << " with " << slots[i + 1]
                             << " bytes (expected an offset >= 0 and bytes "
                                "> 0)";
  return success();
}

LogicalResult verifyStage(Operation *op, NamedAttribute attr) {
  FailureOr<int64_t> stage = getI64(op, attr, DistDialect::kEveryStage);
  if (failed(stage))
    return failure();
  MeshAttr mesh = getEnclosingMesh(op);
  if (!mesh)
    return success();
  StringRef pp = DistDialect::getPipelineAxisName();
  std::optional<unsigned> axis = mesh.axisIndex(pp);
  if (!axis) {
    // Without a pipeline axis the whole mesh is the one stage, stage 0.
    if (*stage > 0)
      return op->emitError()
             << "'dist.stage' is " << *stage << ", but the mesh has no '" << pp
             << "' axis (only stage 0 exists)";
    return success();
  }
  int64_t stages = mesh.getSizes()[*axis];
  // With several (virtual) stages per device, dist.pipeline on the module
  // lists the device of each stage.
  PipelineAttr pipeline = getEnclosingPipeline(op);
  if (pipeline && pipeline.getStageDevices()) {
    stages = pipeline.numStages(stages);
    if (*stage >= stages)
      return op->emitError()
             << "'dist.stage' is " << *stage << ", but the pipeline has "
             << stages << " (virtual) stages";
  }
  if (*stage >= stages)
    return op->emitError() << "'dist.stage' is " << *stage
                           << ", but mesh axis '" << pp << "' has size "
                           << stages;
  return success();
}

LogicalResult verifyPipeline(Operation *op, NamedAttribute attr) {
  auto pipeline = dyn_cast<PipelineAttr>(attr.getValue());
  if (!pipeline)
    return op->emitError() << "'" << attr.getName().getValue()
                           << "' must be a #dist.pipeline, found "
                           << attr.getValue();
  // Its own form is checked by PipelineAttr::verify; here, its fit to the
  // mesh: every stage on a device of the pp axis, every block on a stage.
  MeshAttr mesh = getEnclosingMesh(op);
  if (!mesh)
    return success();
  int64_t pp = 1;
  if (std::optional<unsigned> axis =
          mesh.axisIndex(DistDialect::getPipelineAxisName()))
    pp = mesh.getSizes()[*axis];
  if (DenseI64ArrayAttr devices = pipeline.getStageDevices())
    for (auto [s, d] : llvm::enumerate(devices.asArrayRef()))
      if (d >= pp)
        return op->emitError()
               << "'dist.pipeline' places stage " << s << " on device " << d
               << ", but mesh axis 'pp' has size " << pp;
  int64_t stages = pipeline.numStages(pp);
  if (ArrayAttr order = pipeline.getOrder())
    for (auto [i, a] : llvm::enumerate(order))
      if (cast<DenseI64ArrayAttr>(a)[0] >= stages)
        return op->emitError()
               << "'dist.pipeline' order entry " << i << " " << a
               << " names a stage beyond the " << stages << " of the plan";
  return success();
}

LogicalResult verifyOrderAfter(Operation *op, NamedAttribute attr) {
  auto names = cast<ArrayAttr>(attr.getValue());
  for (auto [i, name] : llvm::enumerate(names)) {
    auto str = dyn_cast<StringAttr>(name);
    if (!str || str.getValue().empty())
      return op->emitError()
             << "'dist.order_after' entry " << i
             << " must be a non-empty op name string, found " << name;
  }
  return success();
}

LogicalResult verifyRank(Operation *op, NamedAttribute attr) {
  FailureOr<int64_t> rank = getI64(op, attr);
  if (failed(rank))
    return failure();
  MeshAttr mesh = getEnclosingMesh(op);
  if (mesh && *rank >= mesh.numRanks())
    return op->emitError() << "'dist.rank' is " << *rank
                           << ", but the mesh has " << mesh.numRanks()
                           << " ranks";
  return success();
}

LogicalResult verifyRanks(Operation *op, NamedAttribute attr) {
  ArrayRef<int64_t> ranks =
      cast<DenseI64ArrayAttr>(attr.getValue()).asArrayRef();
  if (op->hasAttr(DistDialect::RankAttrHelper::getNameStr()))
    return op->emitError("'dist.ranks' and 'dist.rank' exclude each other");
  if (ranks.size() < 2)
    return op->emitError("'dist.ranks' must list at least two ranks, found ")
           << attr.getValue();
  for (size_t i = 0; i < ranks.size(); ++i)
    if (ranks[i] < 0 || (i && ranks[i] <= ranks[i - 1]))
      return op->emitError("'dist.ranks' must be non-negative, sorted and "
                           "unique, found ")
             << attr.getValue();
  MeshAttr mesh = getEnclosingMesh(op);
  if (mesh && ranks.back() >= mesh.numRanks())
    return op->emitError() << "'dist.ranks' holds " << ranks.back()
                           << ", but the mesh has " << mesh.numRanks()
                           << " ranks";
  return success();
}

/// Each entry names a rank-variant attribute of the op and holds one value
/// per rank of the function's dist.ranks, the first being the op's own.
LogicalResult verifyRankValues(Operation *op, NamedAttribute attr) {
  auto func = op->getParentOfType<FunctionOpInterface>();
  DenseI64ArrayAttr ranks =
      func ? getAttr<DistDialect::RanksAttrHelper>(func) : DenseI64ArrayAttr();
  if (!ranks)
    return op->emitError("'dist.rank_values' needs an enclosing function "
                         "with 'dist.ranks'");
  auto variant = dyn_cast<RankVariantOpInterface>(op);
  for (NamedAttribute entry : cast<DictionaryAttr>(attr.getValue())) {
    StringRef name = entry.getName().getValue();
    if (!variant ||
        !llvm::is_contained(variant.getRankVariantAttrNames(), name))
      return op->emitError("'dist.rank_values' names '")
             << name << "', which is not a rank-variant attribute of '"
             << op->getName() << "'";
    auto rows = dyn_cast<ArrayAttr>(entry.getValue());
    if (!rows || rows.size() != ranks.size())
      return op->emitError("'dist.rank_values' must hold ")
             << ranks.size() << " values of '" << name
             << "' (one per rank of dist.ranks), found " << entry.getValue();
    Attribute own = op->getAttr(name);
    if (rows[0] != own)
      return op->emitError("the first of the 'dist.rank_values' of '")
             << name << "' must be the op's own " << own << ", found "
             << rows[0];
    for (Attribute row : rows)
      if (row.getTypeID() != own.getTypeID() ||
          !isa<IntegerAttr, DenseI64ArrayAttr>(row))
        return op->emitError("'dist.rank_values' of '")
               << name << "' must be values of the kind of " << own
               << ", found " << row;
  }
  return success();
}

} // namespace

LogicalResult DistDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  if (!verifyDiscardableAttr({op, std::nullopt}, attr, kDiscardableAttrs,
                             getDialectNamespace()))
    return failure();
  // What the declared storage type does not say.
  StringRef name = attr.getName().getValue();
  if (name == MeshAttrHelper::getNameStr())
    return verifyMesh(op, attr);
  if (name == SplitAttrHelper::getNameStr())
    return verifySplit(op, attr);
  if (name == StageAttrHelper::getNameStr())
    return verifyStage(op, attr);
  if (name == OrderAfterAttrHelper::getNameStr())
    return verifyOrderAfter(op, attr);
  if (name == RankAttrHelper::getNameStr())
    return verifyRank(op, attr);
  if (name == RanksAttrHelper::getNameStr())
    return verifyRanks(op, attr);
  if (name == RankValuesAttrHelper::getNameStr())
    return verifyRankValues(op, attr);
  if (name == PipelineAttrHelper::getNameStr())
    return verifyPipeline(op, attr);
  if (name == ArenaAttrHelper::getNameStr())
    return verifyArena(op, attr);
  if (name == ArenaBytesAttrHelper::getNameStr()) {
    FailureOr<int64_t> bytes = getI64(op, attr);
    if (failed(bytes))
      return failure();
    if (*bytes < 0)
      return op->emitError()
             << "'dist.arena_bytes' is " << *bytes << " (expected >= 0)";
  }
  return success();
}

LogicalResult DistDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned region,
                                                    unsigned arg,
                                                    NamedAttribute attr) {
  if (failed(verifyDiscardableValueAttr(op, false, arg, attr, kDiscardableAttrs,
                                        getDialectNamespace())))
    return failure();
  if (attr.getName().getValue() != ShardAttrHelper::getNameStr())
    return success();
  // One list of axis names per dimension of the argument.
  auto dims = cast<ArrayAttr>(attr.getValue());
  for (Attribute dim : dims) {
    auto axes = dyn_cast<ArrayAttr>(dim);
    if (!axes || !llvm::all_of(axes, llvm::IsaPred<StringAttr>))
      return op->emitError("'dist.shard' of argument ")
             << arg << " must hold one array of axis names per dimension, "
             << "found " << dim;
  }
  if (region < op->getNumRegions() && !op->getRegion(region).empty() &&
      arg < op->getRegion(region).getNumArguments())
    if (auto type = dyn_cast<RankedTensorType>(
            op->getRegion(region).getArgument(arg).getType()))
      if (type.getRank() != static_cast<int64_t>(dims.size()))
        return op->emitError("'dist.shard' of argument ")
               << arg << " has " << dims.size()
               << " entries for a tensor of rank " << type.getRank();
  return success();
}

LogicalResult DistDialect::verifyRegionResultAttribute(Operation *op, unsigned,
                                                       unsigned res,
                                                       NamedAttribute attr) {
  return verifyDiscardableValueAttr(op, true, res, attr, kDiscardableAttrs,
                                    getDialectNamespace());
}
