//===- DistAttrs.cpp - dist attributes ------------------------------------===//
//
// Assembly and verifier of #dist.mesh (its rank arithmetic is
// layout::Mesh's, lib/Layout); the verifier and accessors of #dist.pipeline.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/Dist/IR/DistAttrs.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

#include <limits>

using namespace mlir;
using namespace tessera;
using namespace tessera::dist;

#define GET_ATTRDEF_CLASSES
#include "tessera/Dialect/Dist/IR/DistAttrs.cpp.inc"

// Here rather than in DistDialect.cpp: registration needs the storage
// classes, which only this file sees.
void DistDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "tessera/Dialect/Dist/IR/DistAttrs.cpp.inc"
      >();
}

namespace {
/// The attribute `name` of type A on `op` or its closest ancestor with one.
template <class A> A getEnclosing(Operation *op, StringRef name) {
  for (; op; op = op->getParentOp())
    if (auto attr = op->getAttrOfType<A>(name))
      return attr;
  return {};
}
} // namespace

MeshAttr tessera::dist::getEnclosingMesh(Operation *op) {
  return getEnclosing<MeshAttr>(op, DistDialect::MeshAttrHelper::getNameStr());
}

PipelineAttr tessera::dist::getEnclosingPipeline(Operation *op) {
  return getEnclosing<PipelineAttr>(
      op, DistDialect::PipelineAttrHelper::getNameStr());
}

MeshAttr tessera::dist::requireMesh(ModuleOp module, StringRef pass,
                                    StringRef prerequisites) {
  auto mesh = module->getAttrOfType<MeshAttr>(
      DistDialect::MeshAttrHelper::getNameStr());
  if (!mesh)
    module.emitError(pass) << ": the module has no dist.mesh (run "
                           << prerequisites << " first)";
  return mesh;
}

SmallVector<int64_t> tessera::dist::ranksOf(Operation *func) {
  if (auto rank = getAttr<DistDialect::RankAttrHelper>(func))
    return {rank.getInt()};
  if (auto ranks = getAttr<DistDialect::RanksAttrHelper>(func))
    return SmallVector<int64_t>(ranks.asArrayRef());
  return {};
}

//===----------------------------------------------------------------------===//
// PipelineAttr
//===----------------------------------------------------------------------===//

LogicalResult PipelineAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   int64_t microBatches,
                                   DenseI64ArrayAttr stageDevices,
                                   StringAttr schedule, ArrayAttr order) {
  if (microBatches < 1)
    return emitError() << "#dist.pipeline: micro_batches must be >= 1, got "
                       << microBatches;
  if (stageDevices) {
    if (stageDevices.empty())
      return emitError() << "#dist.pipeline: stage_devices is empty";
    for (auto [s, d] : llvm::enumerate(stageDevices.asArrayRef()))
      if (d < 0)
        return emitError() << "#dist.pipeline: stage " << s << " has device "
                           << d << " (must be >= 0)";
  }
  if (static_cast<bool>(schedule) != static_cast<bool>(order))
    return emitError() << "#dist.pipeline: schedule and order come together "
                          "(dist-schedule sets both)";
  if (schedule && schedule.getValue().empty())
    return emitError() << "#dist.pipeline: the schedule name is empty";
  if (!order)
    return success();
  for (auto [i, a] : llvm::enumerate(order)) {
    auto block = dyn_cast<DenseI64ArrayAttr>(a);
    if (!block || block.size() != 3)
      return emitError() << "#dist.pipeline: order entry " << i
                         << " must be an array<i64: stage, kind, "
                            "micro-batch>, found "
                         << a;
    int64_t stage = block[0], kind = block[1], micro = block[2];
    if (stage < 0 || kind < 0 || kind > 2 || micro < 0 || micro >= microBatches)
      return emitError() << "#dist.pipeline: order entry " << i << " " << a
                         << " needs stage >= 0, kind 0 (forward), 1 "
                            "(backward) or 2 (weight gradient), and "
                            "micro-batch in [0, "
                         << microBatches << ")";
  }
  return success();
}

int64_t PipelineAttr::numStages(int64_t pp) const {
  return getStageDevices() ? getStageDevices().size() : pp;
}

int64_t PipelineAttr::deviceOf(int64_t stage) const {
  return getStageDevices() ? getStageDevices()[stage] : stage;
}

PipelineAttr PipelineAttr::withOrder(StringAttr schedule,
                                     ArrayAttr order) const {
  return get(getContext(), getMicroBatches(), getStageDevices(), schedule,
             order);
}

//===----------------------------------------------------------------------===//
// MeshAttr
//===----------------------------------------------------------------------===//

namespace {
/// Axis names are printed bare, so they must lex back as one keyword.
bool isIdentifier(StringRef name) {
  if (name.empty() || !(llvm::isAlpha(name.front()) || name.front() == '_'))
    return false;
  return llvm::all_of(name.drop_front(),
                      [](char c) { return llvm::isAlnum(c) || c == '_'; });
}
} // namespace

Attribute MeshAttr::parse(AsmParser &parser, Type) {
  SmallVector<StringAttr> names;
  SmallVector<int64_t> sizes;
  auto parseAxis = [&]() -> ParseResult {
    StringRef name;
    int64_t size = 0;
    if (parser.parseKeyword(&name) || parser.parseEqual() ||
        parser.parseInteger(size))
      return failure();
    names.push_back(StringAttr::get(parser.getContext(), name));
    sizes.push_back(size);
    return success();
  };
  if (parser.parseLess() ||
      parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, parseAxis,
                                     " in a mesh") ||
      parser.parseGreater())
    return {};
  return parser.getChecked<MeshAttr>(parser.getContext(), names, sizes);
}

void MeshAttr::print(AsmPrinter &printer) const {
  printer << "<[";
  llvm::interleaveComma(
      llvm::zip(getNames(), getSizes()), printer, [&](auto axis) {
        printer << std::get<0>(axis).getValue() << " = " << std::get<1>(axis);
      });
  printer << "]>";
}

LogicalResult MeshAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               ArrayRef<StringAttr> names,
                               ArrayRef<int64_t> sizes) {
  if (names.size() != sizes.size())
    return emitError() << "mesh has " << names.size() << " axis names but "
                       << sizes.size() << " sizes";
  if (names.empty())
    return emitError() << "mesh needs at least one axis (one device is "
                          "[d = 1])";
  llvm::SmallSet<StringRef, 8> seen;
  // Ranks are int64_t everywhere, but communicators count in int: keep the
  // product well inside both.
  constexpr int64_t kMaxRanks = std::numeric_limits<int32_t>::max();
  int64_t ranks = 1;
  for (auto [name, size] : llvm::zip(names, sizes)) {
    if (!isIdentifier(name.getValue()))
      return emitError() << "mesh axis name '" << name.getValue()
                         << "' is not an identifier";
    if (!seen.insert(name.getValue()).second)
      return emitError() << "mesh axis '" << name.getValue()
                         << "' appears twice";
    if (size < 1)
      return emitError() << "mesh axis '" << name.getValue() << "' has size "
                         << size;
    if (size > kMaxRanks / ranks)
      return emitError() << "mesh has more than " << kMaxRanks << " ranks";
    ranks *= size;
  }
  return success();
}

layout::Mesh MeshAttr::getMesh() const {
  std::vector<layout::MeshAxis> axes;
  for (auto [name, size] : llvm::zip(getNames(), getSizes()))
    axes.push_back({name.getValue().str(), size});
  // verify() accepts only what Mesh::create accepts.
  auto mesh = layout::Mesh::create(std::move(axes));
  assert(mesh && "a verified #dist.mesh is a valid layout::Mesh");
  return *mesh;
}

int64_t MeshAttr::numRanks() const { return getMesh().numRanks(); }

std::optional<unsigned> MeshAttr::axisIndex(StringRef name) const {
  if (std::optional<size_t> i = getMesh().axisIndex(name.str()))
    return static_cast<unsigned>(*i);
  return std::nullopt;
}

SmallVector<int64_t> MeshAttr::coords(int64_t rank) const {
  return llvm::to_vector(getMesh().coordinates(rank));
}

int64_t MeshAttr::rank(ArrayRef<int64_t> coords) const {
  return getMesh().rankOf(coords.vec());
}

SmallVector<int64_t> MeshAttr::groupOf(int64_t rank,
                                       ArrayRef<StringRef> axes) const {
  std::vector<size_t> indices;
  for (StringRef name : axes) {
    std::optional<unsigned> i = axisIndex(name);
    assert(i && "groupOf: not an axis of the mesh");
    indices.push_back(*i);
  }
  return llvm::to_vector(getMesh().groupOf(rank, indices));
}

std::string MeshAttr::axisList() const {
  std::string s;
  for (auto [i, name] : llvm::enumerate(getNames()))
    s += (i ? ", " : "") + name.getValue().str();
  return s;
}
