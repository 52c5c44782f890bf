//===- Rvd.cpp - RVD layouts and the collective search --------------------===//

#include "tessera/Layout/Rvd.h"
#include "tessera/Support/EnumNames.h"

#include <algorithm>
#include <cassert>
#include <cctype>
#include <cmath>
#include <iterator>
#include <limits>

namespace tessera {
namespace layout {

namespace {

Error makeError(std::string message) { return Error{std::move(message)}; }

std::string trim(const std::string &text) {
  size_t begin = 0, end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin])))
    ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1])))
    --end;
  return text.substr(begin, end - begin);
}

/// Splits on ',' keeping empty entries, so "R,,V" reports the empty one.
std::vector<std::string> splitCommas(const std::string &text) {
  std::vector<std::string> parts;
  std::string current;
  for (char c : text) {
    if (c == ',') {
      parts.push_back(trim(current));
      current.clear();
    } else {
      current += c;
    }
  }
  parts.push_back(trim(current));
  return parts;
}

bool isIdentifier(const std::string &name) {
  if (name.empty() ||
      !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_'))
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

/// Parses a non-negative decimal integer that fits in int64_t.
std::optional<int64_t> parseInteger(const std::string &text) {
  if (text.empty() || text.size() > 18)
    return std::nullopt;
  int64_t value = 0;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c)))
      return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

/// Costs that differ by less than this (relative) are ties, so that the same
/// sum computed in two orders does not decide between two paths.
constexpr double kRelativeTolerance = 1e-9;

bool nearlyEqual(double a, double b) {
  return std::fabs(a - b) <=
         kRelativeTolerance * std::max(std::fabs(a), std::fabs(b));
}

std::string describeAxes(const Mesh &mesh, const std::vector<size_t> &axes) {
  std::string text;
  for (size_t i = 0; i < axes.size(); ++i)
    text += (i ? "," : "") + mesh.axis(axes[i]).name;
  return text;
}

/// The mesh axes splitting dimension \p dim, in mesh order.
std::vector<size_t> splittingAxes(const Layout &layout, int dim) {
  std::vector<size_t> axes;
  for (size_t a = 0; a < layout.states.size(); ++a)
    if (layout.states[a].isSplit(dim))
      axes.push_back(a);
  return axes;
}

/// The number of pieces dimension \p dim is cut into.
int64_t splitFactor(const Mesh &mesh, const Layout &layout, int dim) {
  int64_t factor = 1;
  for (size_t a = 0; a < layout.states.size(); ++a)
    if (layout.states[a].isSplit(dim))
      factor *= mesh.axis(a).size;
  return factor;
}

/// The first axis after \p axis that splits \p dim, if any. The axis-order
/// rule forbids adding or removing a split of \p dim on \p axis then: the
/// inner axis' pieces would no longer nest inside the outer ones.
std::optional<size_t> innerSplitter(const Layout &layout, size_t axis,
                                    int dim) {
  for (size_t a = axis + 1; a < layout.states.size(); ++a)
    if (layout.states[a].isSplit(dim))
      return a;
  return std::nullopt;
}

/// Local bytes of an already checked layout (no overflow: the global size
/// was checked and the local piece is smaller).
int64_t checkedLocalBytes(const Mesh &mesh, const TensorShape &tensor,
                          const Layout &layout) {
  int64_t bytes = tensor.elementBytes;
  for (size_t k = 0; k < tensor.dims.size(); ++k)
    bytes *= tensor.dims[k] / splitFactor(mesh, layout, static_cast<int>(k));
  return bytes;
}

std::optional<Error> checkTensor(const TensorShape &tensor) {
  if (tensor.elementBytes < 1)
    return makeError("element size must be at least 1 byte, got " +
                     std::to_string(tensor.elementBytes));
  int64_t bytes = tensor.elementBytes;
  for (size_t k = 0; k < tensor.dims.size(); ++k) {
    if (tensor.dims[k] < 1)
      return makeError("tensor dimension " + std::to_string(k) + " has size " +
                       std::to_string(tensor.dims[k]) +
                       "; sizes must be at least 1");
    if (bytes > std::numeric_limits<int64_t>::max() / tensor.dims[k])
      return makeError("tensor is too large: its size in bytes overflows "
                       "64 bits");
    bytes *= tensor.dims[k];
  }
  return std::nullopt;
}

/// Applies \p t to a checked layout; the caller checked the axis index and the
/// cost model. Returns an error saying why the transition does not apply.
Result<Step> applyChecked(const Mesh &mesh, const TensorShape &tensor,
                          const CostModel &model, const Layout &layout,
                          const Transition &t) {
  const std::string what = std::string(primitiveName(t.primitive)) +
                           " on axis " + mesh.axis(t.axis).name + ": ";
  const AxisState state = layout.states[t.axis];
  const int64_t n = mesh.axis(t.axis).size;
  const int rank = static_cast<int>(tensor.dims.size());
  if (n == 1)
    return makeError(what + "an axis of size 1 is always R");

  auto needs = [&](AxisKind kind) -> std::optional<Error> {
    if (state.kind == kind)
      return std::nullopt;
    const char *name = kind == AxisKind::R   ? "R"
                       : kind == AxisKind::V ? "V"
                                             : "a split D";
    return makeError(what + "needs " + name + ", the axis is " + state.str());
  };
  auto dimInRange = [&](int dim, const char *role) -> std::optional<Error> {
    if (dim >= 0 && dim < rank)
      return std::nullopt;
    return makeError(what + role + " dimension " + std::to_string(dim) +
                     " is not a dimension of a rank-" + std::to_string(rank) +
                     " tensor");
  };
  auto noDim = [&](int dim, const char *role) -> std::optional<Error> {
    if (dim == -1)
      return std::nullopt;
    return makeError(what + "takes no " + role + " dimension (got " +
                     std::to_string(dim) + ")");
  };
  // An inner axis that splits `dim` already: "<what>dimension <dim> <state>
  // by the inner axis <a>; <rule><a><tail>".
  auto innerSplitError = [&](int dim, const char *state, const char *rule,
                             const char *tail) -> std::optional<Error> {
    auto inner = innerSplitter(layout, t.axis, dim);
    if (!inner)
      return std::nullopt;
    const std::string &axis = mesh.axis(*inner).name;
    return makeError(what + "dimension " + std::to_string(dim) + " " + state +
                     " by the inner axis " + axis + "; " + rule + axis + tail);
  };
  // Un-splitting `dim` on this axis: only the innermost splitter gathers
  // whole pieces of the coarser split.
  auto canUnsplit = [&](int dim) -> std::optional<Error> {
    if (auto err = needs(AxisKind::D))
      return err;
    if (state.dim != dim)
      return makeError(what + "the axis splits dimension " +
                       std::to_string(state.dim) + ", not " +
                       std::to_string(dim));
    if (auto err = innerSplitError(dim, "is also split",
                                   "only the innermost split of a dimension "
                                   "can be undone (un-split ",
                                   " first)"))
      return err;
    return std::nullopt;
  };
  // Splitting `dim` on this axis: the new pieces must nest inside the ones
  // the rank holds, so no inner axis may split `dim` already.
  auto canSplit = [&](int dim) -> std::optional<Error> {
    if (auto err = dimInRange(dim, "target"))
      return err;
    if (auto err = innerSplitError(dim, "is already split",
                                   "a split is only added inside the "
                                   "existing ones (go through R on ",
                                   " first)"))
      return err;
    const int64_t local = tensor.dims[dim] / splitFactor(mesh, layout, dim);
    if (local % n != 0)
      return makeError(what + "dimension " + std::to_string(dim) +
                       " of local size " + std::to_string(local) +
                       " is not divisible by " + std::to_string(n));
    return std::nullopt;
  };

  Step step;
  step.transition = t;
  step.before = state;
  step.after = layout;
  AxisState &after = step.after.states[t.axis];
  switch (t.primitive) {
  case Primitive::AllReduce:
  case Primitive::LocalZero: {
    if (auto err = noDim(t.fromDim, "source"))
      return *err;
    if (auto err = noDim(t.toDim, "target"))
      return *err;
    bool reduce = t.primitive == Primitive::AllReduce;
    if (auto err = needs(reduce ? AxisKind::V : AxisKind::R))
      return *err;
    after = reduce ? AxisState::r() : AxisState::v();
    break;
  }
  case Primitive::ReduceScatter:
  case Primitive::LocalSlice: {
    if (auto err = noDim(t.fromDim, "source"))
      return *err;
    bool reduce = t.primitive == Primitive::ReduceScatter;
    if (auto err = needs(reduce ? AxisKind::V : AxisKind::R))
      return *err;
    if (auto err = canSplit(t.toDim))
      return *err;
    after = AxisState::d(t.toDim);
    break;
  }
  case Primitive::AllGather: {
    if (auto err = noDim(t.toDim, "target"))
      return *err;
    if (auto err = dimInRange(t.fromDim, "source"))
      return *err;
    if (auto err = canUnsplit(t.fromDim))
      return *err;
    after = AxisState::r();
    break;
  }
  case Primitive::AllToAll: {
    if (auto err = dimInRange(t.fromDim, "source"))
      return *err;
    if (auto err = canUnsplit(t.fromDim))
      return *err;
    if (t.toDim == t.fromDim)
      return makeError(what + "source and target dimensions are both " +
                       std::to_string(t.toDim));
    if (auto err = canSplit(t.toDim))
      return *err;
    after = AxisState::d(t.toDim);
    break;
  }
  }

  // Collectives cost what cost::collectiveTime says of ring algorithms
  // inside each group of n ranks, B being the local tensor before the step.
  // All groups run in parallel, so one group's time is the step's time.
  step.localBytes = checkedLocalBytes(mesh, tensor, layout);
  const double bytes = static_cast<double>(step.localBytes);
  const double nd = static_cast<double>(n);
  // The collective's logical tensor: B, except for all_gather, whose B is
  // one of the n shards of its output.
  double logicalBytes = bytes;
  cost::Collective collective = cost::Collective::AllReduce;
  switch (t.primitive) {
  case Primitive::AllReduce:
    break;
  case Primitive::ReduceScatter:
    collective = cost::Collective::ReduceScatter;
    break;
  case Primitive::AllToAll:
    collective = cost::Collective::AllToAll;
    break;
  case Primitive::AllGather:
    collective = cost::Collective::AllGather;
    logicalBytes = nd * bytes;
    break;
  case Primitive::LocalSlice: // copies out its 1/n
    step.cost = bytes / nd * model.gamma;
    return step;
  case Primitive::LocalZero: // n-1 ranks clear their copy
    step.cost = bytes * model.gamma;
    return step;
  }
  const auto ring = cost::CollectiveAlgorithm::Ring;
  step.bytesSent =
      cost::collectiveTraffic(collective, ring, logicalBytes, n).bytes;
  step.cost = cost::collectiveTime(collective, ring, logicalBytes, n,
                                   model.link(mesh, t.axis));
  return step;
}

} // namespace

//===----------------------------------------------------------------------===//
// Mesh
//===----------------------------------------------------------------------===//

Result<Mesh> Mesh::create(std::vector<MeshAxis> axes) {
  int64_t ranks = 1;
  for (size_t i = 0; i < axes.size(); ++i) {
    const MeshAxis &axis = axes[i];
    if (!isIdentifier(axis.name))
      return makeError("mesh axis " + std::to_string(i) + " name '" +
                       axis.name + "' is not an identifier");
    for (size_t j = 0; j < i; ++j)
      if (axes[j].name == axis.name)
        return makeError("mesh axis '" + axis.name + "' appears twice");
    if (axis.size < 1)
      return makeError("mesh axis '" + axis.name + "' has size " +
                       std::to_string(axis.size) +
                       "; sizes must be at least 1");
    if (ranks > std::numeric_limits<int32_t>::max() / axis.size)
      return makeError("mesh has more than 2^31 ranks");
    ranks *= axis.size;
  }
  Mesh mesh;
  mesh.axisList = std::move(axes);
  return mesh;
}

int64_t Mesh::numRanks() const {
  int64_t ranks = 1;
  for (const MeshAxis &axis : axisList)
    ranks *= axis.size;
  return ranks;
}

std::optional<size_t> Mesh::axisIndex(const std::string &name) const {
  for (size_t i = 0; i < axisList.size(); ++i)
    if (axisList[i].name == name)
      return i;
  return std::nullopt;
}

std::vector<int64_t> Mesh::coordinates(int64_t rank) const {
  assert(rank >= 0 && rank < numRanks() && "rank outside the mesh");
  std::vector<int64_t> coords(axisList.size(), 0);
  for (size_t i = axisList.size(); i-- > 0;) {
    coords[i] = rank % axisList[i].size;
    rank /= axisList[i].size;
  }
  return coords;
}

int64_t Mesh::rankOf(const std::vector<int64_t> &coords) const {
  assert(coords.size() == axisList.size() && "one coordinate per axis");
  int64_t rank = 0;
  for (size_t i = 0; i < axisList.size(); ++i) {
    assert(coords[i] >= 0 && coords[i] < axisList[i].size &&
           "coordinate outside its axis");
    rank = rank * axisList[i].size + coords[i];
  }
  return rank;
}

int64_t Mesh::stride(size_t axis) const {
  int64_t stride = 1;
  for (size_t i = axis + 1; i < axisList.size(); ++i)
    stride *= axisList[i].size;
  return stride;
}

std::vector<int64_t> Mesh::groupOf(int64_t rank,
                                   const std::vector<size_t> &axes) const {
  std::vector<size_t> free;
  for (size_t axis : axes) {
    assert(axis < axisList.size() && "groupOf: not an axis of the mesh");
    if (std::find(free.begin(), free.end(), axis) == free.end())
      free.push_back(axis);
  }
  // Walk the free axes' coordinates like an odometer; the other axes keep
  // `rank`'s coordinates.
  std::vector<int64_t> coords = coordinates(rank);
  for (size_t axis : free)
    coords[axis] = 0;
  std::vector<int64_t> group;
  while (true) {
    group.push_back(rankOf(coords));
    size_t k = 0;
    for (; k < free.size(); ++k) {
      if (++coords[free[k]] < axisList[free[k]].size)
        break;
      coords[free[k]] = 0;
    }
    if (k == free.size())
      break;
  }
  std::sort(group.begin(), group.end());
  return group;
}

std::vector<std::vector<int64_t>> Mesh::groups(size_t axis) const {
  std::vector<std::vector<int64_t>> result;
  if (axis >= axisList.size())
    return result;
  for (int64_t rank = 0; rank < numRanks(); ++rank) {
    std::vector<int64_t> coords = coordinates(rank);
    if (coords[axis] != 0)
      continue; // every group is listed from its coordinate-0 member
    std::vector<int64_t> group;
    for (int64_t c = 0; c < axisList[axis].size; ++c) {
      coords[axis] = c;
      group.push_back(rankOf(coords));
    }
    result.push_back(std::move(group));
  }
  return result;
}

std::string Mesh::str() const {
  std::string text;
  for (size_t i = 0; i < axisList.size(); ++i)
    text += (i ? "," : "") + axisList[i].name + "=" +
            std::to_string(axisList[i].size);
  return text;
}

Result<Mesh> parseMesh(const std::string &text) {
  std::vector<MeshAxis> axes;
  if (trim(text).empty())
    return Mesh::create(axes);
  std::vector<std::string> parts = splitCommas(text);
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string &part = parts[i];
    size_t eq = part.find('=');
    std::optional<int64_t> size;
    if (eq != std::string::npos)
      size = parseInteger(trim(part.substr(eq + 1)));
    if (!size)
      return makeError("mesh '" + text + "': entry " + std::to_string(i + 1) +
                       " '" + part + "' is not name=size");
    axes.push_back({trim(part.substr(0, eq)), *size});
  }
  return Mesh::create(std::move(axes));
}

//===----------------------------------------------------------------------===//
// Layouts
//===----------------------------------------------------------------------===//

std::string AxisState::str() const {
  switch (kind) {
  case AxisKind::R:
    return "R";
  case AxisKind::V:
    return "V";
  case AxisKind::D:
    return "D" + std::to_string(dim);
  }
  return "?";
}

std::string Layout::str() const {
  std::string text;
  for (size_t i = 0; i < states.size(); ++i)
    text += (i ? "," : "") + states[i].str();
  return text;
}

Result<Layout> parseLayout(const std::string &text, const Mesh &mesh) {
  Layout layout;
  if (mesh.numAxes() == 0 && trim(text).empty())
    return layout;
  std::vector<std::string> parts = splitCommas(text);
  if (parts.size() != mesh.numAxes())
    return makeError("layout '" + text + "' has " +
                     std::to_string(parts.size()) + " entries but mesh '" +
                     mesh.str() + "' has " + std::to_string(mesh.numAxes()) +
                     " axes");
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string &part = parts[i];
    AxisState state;
    if (part == "R") {
      state = AxisState::r();
    } else if (part == "V") {
      state = AxisState::v();
    } else if (part.size() > 1 && part[0] == 'D' &&
               parseInteger(part.substr(1)) &&
               *parseInteger(part.substr(1)) <
                   std::numeric_limits<int>::max()) {
      state = AxisState::d(static_cast<int>(*parseInteger(part.substr(1))));
    } else {
      return makeError("layout '" + text + "': entry " + std::to_string(i + 1) +
                       " '" + part + "' is not R, V or D<dimension>");
    }
    if (mesh.axis(i).size == 1)
      state = AxisState::r();
    layout.states.push_back(state);
  }
  return layout;
}

Result<Layout> checkLayout(const Mesh &mesh, const TensorShape &tensor,
                           const Layout &layout) {
  if (auto err = checkTensor(tensor))
    return *err;
  if (layout.states.size() != mesh.numAxes())
    return makeError("layout '" + layout.str() + "' has " +
                     std::to_string(layout.states.size()) +
                     " entries but mesh '" + mesh.str() + "' has " +
                     std::to_string(mesh.numAxes()) + " axes");
  Layout normal = layout;
  const int rank = static_cast<int>(tensor.dims.size());
  for (size_t a = 0; a < normal.states.size(); ++a) {
    AxisState &state = normal.states[a];
    if (state.kind != AxisKind::D) {
      state.dim = -1;
    } else if (state.dim < 0 || state.dim >= rank) {
      return makeError("layout " + state.str() + " on axis " +
                       mesh.axis(a).name + ": the tensor has rank " +
                       std::to_string(rank));
    }
    if (mesh.axis(a).size == 1)
      state = AxisState::r();
  }
  for (int k = 0; k < rank; ++k) {
    std::vector<size_t> axes = splittingAxes(normal, k);
    if (axes.empty())
      continue;
    int64_t factor = splitFactor(mesh, normal, k);
    if (tensor.dims[k] % factor == 0)
      continue;
    std::string by = std::to_string(factor);
    if (axes.size() > 1) {
      by += " (";
      for (size_t i = 0; i < axes.size(); ++i)
        by += (i ? "*" : "") + std::to_string(mesh.axis(axes[i]).size);
      by += ")";
    }
    return makeError(
        "layout D" + std::to_string(k) + " on " +
        (axes.size() > 1 ? "axes " : "axis ") + describeAxes(mesh, axes) +
        ": dimension " + std::to_string(k) + " of size " +
        std::to_string(tensor.dims[k]) + " is not divisible by " + by);
  }
  return normal;
}

Result<std::vector<int64_t>>
localShape(const Mesh &mesh, const TensorShape &tensor, const Layout &layout) {
  Result<Layout> checked = checkLayout(mesh, tensor, layout);
  if (!checked)
    return makeError(checked.message());
  std::vector<int64_t> shape = tensor.dims;
  for (size_t k = 0; k < shape.size(); ++k)
    shape[k] /= splitFactor(mesh, *checked, static_cast<int>(k));
  return shape;
}

Result<int64_t> localBytes(const Mesh &mesh, const TensorShape &tensor,
                           const Layout &layout) {
  Result<Layout> checked = checkLayout(mesh, tensor, layout);
  if (!checked)
    return makeError(checked.message());
  return checkedLocalBytes(mesh, tensor, *checked);
}

Result<std::vector<int64_t>> pieceOffsets(const Mesh &mesh,
                                          const TensorShape &tensor,
                                          const Layout &layout,
                                          const std::vector<int64_t> &coords) {
  Result<Layout> checked = checkLayout(mesh, tensor, layout);
  if (!checked)
    return makeError(checked.message());
  if (coords.size() != mesh.numAxes())
    return makeError("got " + std::to_string(coords.size()) +
                     " coordinates for a mesh of " +
                     std::to_string(mesh.numAxes()) + " axes");
  for (size_t a = 0; a < coords.size(); ++a)
    if (coords[a] < 0 || coords[a] >= mesh.axis(a).size)
      return makeError("coordinate " + std::to_string(coords[a]) +
                       " is outside axis " + mesh.axis(a).name + " of size " +
                       std::to_string(mesh.axis(a).size));
  std::vector<int64_t> offsets(tensor.dims.size(), 0);
  for (size_t k = 0; k < offsets.size(); ++k) {
    int64_t piece = 0, factor = 1;
    for (size_t a : splittingAxes(*checked, static_cast<int>(k))) {
      piece = piece * mesh.axis(a).size + coords[a];
      factor *= mesh.axis(a).size;
    }
    offsets[k] = piece * (tensor.dims[k] / factor);
  }
  return offsets;
}

//===----------------------------------------------------------------------===//
// Primitives and costs
//===----------------------------------------------------------------------===//

namespace {
constexpr support::EnumName<Primitive> kPrimitiveNames[] = {
    {Primitive::AllReduce, "all_reduce"},
    {Primitive::ReduceScatter, "reduce_scatter"},
    {Primitive::AllGather, "all_gather"},
    {Primitive::AllToAll, "all_to_all"},
    {Primitive::LocalSlice, "local_slice"},
    {Primitive::LocalZero, "local_zero"}};
static_assert(std::size(kPrimitiveNames) == kNumPrimitives);
} // namespace

const char *primitiveName(Primitive primitive) {
  return support::enumName(kPrimitiveNames, primitive);
}

std::optional<Primitive> parsePrimitive(const std::string &name) {
  return support::parseEnum(kPrimitiveNames, name);
}

bool isCollective(Primitive primitive) {
  return primitive != Primitive::LocalSlice &&
         primitive != Primitive::LocalZero;
}

bool Transition::operator==(const Transition &other) const {
  return primitive == other.primitive && axis == other.axis &&
         fromDim == other.fromDim && toDim == other.toDim;
}

bool Transition::operator<(const Transition &other) const {
  if (primitive != other.primitive)
    return primitive < other.primitive;
  if (axis != other.axis)
    return axis < other.axis;
  if (fromDim != other.fromDim)
    return fromDim < other.fromDim;
  return toDim < other.toDim;
}

CostModel CostModel::uniform(double alpha, double beta, double gamma) {
  CostModel model;
  model.defaultLink = {alpha, beta};
  model.gamma = gamma;
  return model;
}

const CostModel::Link &CostModel::link(const Mesh &mesh, size_t axis) const {
  if (axis >= mesh.numAxes())
    return defaultLink;
  auto it = axisLinks.find(mesh.axis(axis).name);
  return it == axisLinks.end() ? defaultLink : it->second;
}

std::optional<Error> checkCostModel(const Mesh &mesh, const CostModel &model) {
  auto bad = [](double value) { return !std::isfinite(value) || value < 0; };
  auto checkLink = [&](const CostModel::Link &link,
                       const std::string &where) -> std::optional<Error> {
    if (bad(link.alpha))
      return makeError("cost model: alpha of " + where +
                       " must be finite and non-negative");
    if (bad(link.beta))
      return makeError("cost model: beta of " + where +
                       " must be finite and non-negative");
    return std::nullopt;
  };
  if (auto err = checkLink(model.defaultLink, "the default link"))
    return err;
  for (const auto &[name, link] : model.axisLinks) {
    if (!mesh.axisIndex(name))
      return makeError("cost model names axis '" + name +
                       "', which is not in mesh '" + mesh.str() + "'");
    if (auto err = checkLink(link, "axis " + name))
      return err;
  }
  if (bad(model.gamma))
    return makeError("cost model: gamma must be finite and non-negative");
  return std::nullopt;
}

Result<Step> applyTransition(const Mesh &mesh, const TensorShape &tensor,
                             const CostModel &model, const Layout &layout,
                             const Transition &transition) {
  if (auto err = checkCostModel(mesh, model))
    return *err;
  Result<Layout> checked = checkLayout(mesh, tensor, layout);
  if (!checked)
    return makeError(checked.message());
  if (transition.axis >= mesh.numAxes())
    return makeError(std::string(primitiveName(transition.primitive)) +
                     " on axis " + std::to_string(transition.axis) +
                     ": the mesh has " + std::to_string(mesh.numAxes()) +
                     " axes");
  return applyChecked(mesh, tensor, model, *checked, transition);
}

namespace {

/// enumerateSteps for a checked layout and cost model.
std::vector<Step> enumerateChecked(const Mesh &mesh, const TensorShape &tensor,
                                   const CostModel &model, const Layout &layout,
                                   const SearchOptions &options) {
  std::vector<Step> steps;
  const int rank = static_cast<int>(tensor.dims.size());
  // Only the primitives that match each axis' state are tried, so that the
  // search does not build an error message for every impossible move.
  std::vector<Transition> candidates;
  for (size_t axis = 0; axis < mesh.numAxes(); ++axis) {
    if (mesh.axis(axis).size == 1)
      continue;
    const AxisState &state = layout.states[axis];
    switch (state.kind) {
    case AxisKind::V:
      candidates.push_back({Primitive::AllReduce, axis, -1, -1});
      for (int k = 0; k < rank; ++k)
        candidates.push_back({Primitive::ReduceScatter, axis, -1, k});
      break;
    case AxisKind::D:
      candidates.push_back({Primitive::AllGather, axis, state.dim, -1});
      for (int k = 0; k < rank; ++k)
        if (k != state.dim)
          candidates.push_back({Primitive::AllToAll, axis, state.dim, k});
      break;
    case AxisKind::R:
      for (int k = 0; k < rank; ++k)
        candidates.push_back({Primitive::LocalSlice, axis, -1, k});
      candidates.push_back({Primitive::LocalZero, axis, -1, -1});
      break;
    }
  }
  std::sort(candidates.begin(), candidates.end());
  for (const Transition &t : candidates) {
    if (options.disabled.count(t.primitive))
      continue;
    Result<Step> step = applyChecked(mesh, tensor, model, layout, t);
    if (step)
      steps.push_back(std::move(*step));
  }
  return steps;
}

/// A layout reached by the search: the best path to it so far is the path
/// to `parent` followed by `via`.
struct Node {
  Layout layout;
  double cost = 0;
  size_t numSteps = 0;
  std::optional<size_t> parent;
  Step via;
  bool settled = false;
};

std::vector<Transition> transitionsTo(const std::vector<Node> &nodes,
                                      size_t node) {
  std::vector<Transition> result;
  for (std::optional<size_t> at = node; nodes[*at].parent;
       at = nodes[*at].parent)
    result.push_back(nodes[*at].via.transition);
  std::reverse(result.begin(), result.end());
  return result;
}

/// The search's total order on paths: cost, then number of steps, then the
/// transitions in lexicographic order. Appending the same step to two paths
/// keeps their order, which is what Dijkstra needs. A path is given as a
/// node, optionally extended by one more transition.
bool pathBefore(const std::vector<Node> &nodes, double costA, size_t stepsA,
                size_t nodeA, const Transition *extraA, double costB,
                size_t stepsB, size_t nodeB) {
  if (!nearlyEqual(costA, costB))
    return costA < costB;
  if (stepsA != stepsB)
    return stepsA < stepsB;
  std::vector<Transition> a = transitionsTo(nodes, nodeA);
  if (extraA)
    a.push_back(*extraA);
  return a < transitionsTo(nodes, nodeB);
}

} // namespace

std::vector<Step> enumerateSteps(const Mesh &mesh, const TensorShape &tensor,
                                 const CostModel &model, const Layout &layout,
                                 const SearchOptions &options) {
  if (checkCostModel(mesh, model))
    return {};
  Result<Layout> checked = checkLayout(mesh, tensor, layout);
  if (!checked)
    return {};
  return enumerateChecked(mesh, tensor, model, *checked, options);
}

Result<Path> findPath(const Mesh &mesh, const TensorShape &tensor,
                      const Layout &source, const Layout &target,
                      const CostModel &model, const SearchOptions &options) {
  if (auto err = checkCostModel(mesh, model))
    return *err;
  if (auto err = checkTensor(tensor))
    return *err;
  Result<Layout> from = checkLayout(mesh, tensor, source);
  if (!from)
    return makeError("source " + from.message());
  Result<Layout> to = checkLayout(mesh, tensor, target);
  if (!to)
    return makeError("target " + to.message());

  // Dijkstra over layouts. The graph is small ((2 + rank)^axes nodes), so the
  // frontier is scanned linearly: no heap whose order the cost tolerance
  // could confuse.
  std::vector<Node> nodes;
  std::map<Layout, size_t> index;
  nodes.push_back(Node{*from, 0, 0, std::nullopt, Step(), false});
  index[*from] = 0;
  while (true) {
    std::optional<size_t> best;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i].settled)
        continue;
      if (!best ||
          pathBefore(nodes, nodes[i].cost, nodes[i].numSteps, i, nullptr,
                     nodes[*best].cost, nodes[*best].numSteps, *best))
        best = i;
    }
    if (!best)
      break;
    const size_t here = *best;
    nodes[here].settled = true;
    if (nodes[here].layout == *to) {
      Path path;
      path.source = *from;
      path.target = *to;
      path.cost = nodes[here].cost;
      for (std::optional<size_t> at = here; nodes[*at].parent;
           at = nodes[*at].parent)
        path.steps.push_back(nodes[*at].via);
      std::reverse(path.steps.begin(), path.steps.end());
      return path;
    }
    // A copy: adding nodes may reallocate the vector.
    const Layout layout = nodes[here].layout;
    for (Step &step : enumerateChecked(mesh, tensor, model, layout, options)) {
      const double cost = nodes[here].cost + step.cost;
      const size_t numSteps = nodes[here].numSteps + 1;
      auto it = index.find(step.after);
      if (it == index.end()) {
        index[step.after] = nodes.size();
        Layout after = step.after;
        nodes.push_back(Node{std::move(after), cost, numSteps, here,
                             std::move(step), false});
        continue;
      }
      Node &old = nodes[it->second];
      if (old.settled ||
          !pathBefore(nodes, cost, numSteps, here, &step.transition, old.cost,
                      old.numSteps, it->second))
        continue;
      old.cost = cost;
      old.numSteps = numSteps;
      old.parent = here;
      old.via = std::move(step);
    }
  }

  std::string disabled;
  for (Primitive primitive : options.disabled)
    disabled +=
        std::string(disabled.empty() ? "" : ", ") + primitiveName(primitive);
  return makeError("no sequence of primitives converts layout '" + from->str() +
                   "' into '" + to->str() + "' on mesh '" + mesh.str() + "'" +
                   (disabled.empty() ? "" : " without " + disabled));
}

double sendRecvCost(const CostModel &model, const Mesh &mesh, size_t axis,
                    double bytes) {
  return cost::collectiveTime(cost::Collective::SendRecv,
                              cost::CollectiveAlgorithm::Ring, bytes, 2,
                              model.link(mesh, axis));
}

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

std::string formatStep(const Mesh &mesh, const Step &step) {
  const std::string &axis = mesh.axis(step.transition.axis).name;
  return step.before.str() + "(" + axis + ") -" +
         primitiveName(step.transition.primitive) + "-> " +
         step.after.states[step.transition.axis].str() + "(" + axis + ")";
}

std::string formatPath(const Mesh &mesh, const Path &path) {
  std::string text;
  for (size_t i = 0; i < path.steps.size(); ++i)
    text += (i ? "; " : "") + formatStep(mesh, path.steps[i]);
  return text;
}

} // namespace layout
} // namespace tessera
