//===- Rvd.h - RVD layouts and the collective search ------------*- C++ -*-===//
//
// A tensor laid out over a device mesh has, along every mesh axis, one of
// three states (nnScaler's RVD):
//
//   R     replicated: every rank of the axis holds the same local tensor
//   V     partial value: the local tensors of the axis sum to the value
//   D(k)  split: tensor dimension k is cut into equal pieces, one per rank
//
// Wherever a consumer needs a layout other than its producer's, findPath
// searches the cheapest sequence of primitives that converts one into the
// other: all_reduce (V->R), reduce_scatter (V->D), all_gather (D->R),
// all_to_all (D(i)->D(j)), local_slice (R->D) and local_zero (R->V), each
// acting on one mesh axis, costed with the alpha-beta model of lib/Cost
// (cost::collectiveTime, ring algorithms) on a link per axis. The
// result names the collectives that dist-lower-comm emits inside the
// sub-groups along each axis. See docs/layouts.md.
//
// Plain C++17 with no MLIR types, and no exceptions: every failure is a
// Result (tessera/Support/Result.h), so passes built without exceptions can
// call it.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_LAYOUT_RVD_H
#define TESSERA_LAYOUT_RVD_H

#include "tessera/Cost/Collectives.h"
#include "tessera/Support/Result.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tessera {
namespace layout {

//===----------------------------------------------------------------------===//
// Mesh
//===----------------------------------------------------------------------===//

struct MeshAxis {
  std::string name;
  int64_t size = 1;
};

/// Ordered named axes. Ranks are numbered row-major: the last axis varies
/// fastest, so `dp=2,tp=2` puts tp pairs on consecutive ranks (inside a node).
///
/// This is the one implementation of the rank <-> coordinate mapping: the
/// dialect's #dist.mesh converts to it (MeshAttr::getMesh) for its rank
/// arithmetic, and so does every pass and library that needs ranks.
class Mesh {
public:
  /// Checks that names are identifiers, unique, and sizes at least 1.
  static Result<Mesh> create(std::vector<MeshAxis> axes);

  size_t numAxes() const { return axisList.size(); }
  const std::vector<MeshAxis> &axes() const { return axisList; }
  const MeshAxis &axis(size_t index) const { return axisList[index]; }
  int64_t numRanks() const;
  std::optional<size_t> axisIndex(const std::string &name) const;

  /// The coordinate of \p rank along every axis (0 <= rank < numRanks()).
  std::vector<int64_t> coordinates(int64_t rank) const;
  /// The rank at \p coordinates (one in-range coordinate per axis).
  int64_t rankOf(const std::vector<int64_t> &coordinates) const;
  /// How far apart in rank order two ranks are whose coordinates differ by
  /// one on \p axis only: the product of the sizes of the later axes.
  int64_t stride(size_t axis) const;
  /// The ranks that share \p rank's coordinates on every axis not in
  /// \p axes, sorted; \p rank is one of them.
  std::vector<int64_t> groupOf(int64_t rank,
                               const std::vector<size_t> &axes) const;
  /// The sub-groups along \p axis: the ranks that differ only in that axis'
  /// coordinate, each ordered by the coordinate, groups by their first rank.
  /// A collective on the axis runs independently inside each group.
  std::vector<std::vector<int64_t>> groups(size_t axis) const;

  /// "dp=2,tp=2" (parseMesh reads it back).
  std::string str() const;

private:
  std::vector<MeshAxis> axisList;
};

/// Parses "dp=2,tp=2,pp=2".
Result<Mesh> parseMesh(const std::string &text);

//===----------------------------------------------------------------------===//
// Layouts
//===----------------------------------------------------------------------===//

/// The global tensor being laid out.
struct TensorShape {
  std::vector<int64_t> dims;
  int64_t elementBytes = 4;
};

enum class AxisKind { R, V, D };

/// The state of a tensor along one mesh axis.
struct AxisState {
  AxisKind kind = AxisKind::R;
  int dim = -1; ///< the split tensor dimension when kind is D, else -1

  static AxisState r() { return {AxisKind::R, -1}; }
  static AxisState v() { return {AxisKind::V, -1}; }
  static AxisState d(int dim) { return {AxisKind::D, dim}; }
  bool isSplit(int k) const { return kind == AxisKind::D && dim == k; }

  /// "R", "V", "D0".
  std::string str() const;
  bool operator==(const AxisState &other) const {
    return kind == other.kind && dim == other.dim;
  }
  bool operator!=(const AxisState &other) const { return !(*this == other); }
  bool operator<(const AxisState &other) const {
    return kind != other.kind ? kind < other.kind : dim < other.dim;
  }
};

/// One state per mesh axis, in mesh order. When several axes split the same
/// dimension, the outer axis (earlier in the mesh) picks the coarse piece and
/// the inner one cuts it further (see pieceOffsets).
struct Layout {
  std::vector<AxisState> states;

  /// "D0,V,R" (parseLayout reads it back).
  std::string str() const;
  bool operator==(const Layout &other) const { return states == other.states; }
  bool operator!=(const Layout &other) const { return !(*this == other); }
  bool operator<(const Layout &other) const { return states < other.states; }
};

/// Parses "D0,V,R": one entry per mesh axis, each R, V or D<dim>, spaces
/// around entries ignored. Checks the syntax and the number of entries only;
/// entries on axes of size 1 become R (a group of one is always replicated).
Result<Layout> parseLayout(const std::string &text, const Mesh &mesh);

/// Checks \p layout for \p tensor on \p mesh and returns it normalised (size-1
/// axes set to R). Errors name the entry and the axis, e.g.
/// "layout D2 on axis tp: dimension 2 of size 6 is not divisible by 4".
Result<Layout> checkLayout(const Mesh &mesh, const TensorShape &tensor,
                           const Layout &layout);

/// The shape of the piece every rank holds (all ranks hold the same shape).
Result<std::vector<int64_t>>
localShape(const Mesh &mesh, const TensorShape &tensor, const Layout &layout);
/// The bytes of that piece.
Result<int64_t> localBytes(const Mesh &mesh, const TensorShape &tensor,
                           const Layout &layout);
/// Where the piece of the rank at \p coordinates starts in the global tensor,
/// per dimension. The axes splitting a dimension form a mixed-radix number,
/// the outer axis most significant.
Result<std::vector<int64_t>> pieceOffsets(const Mesh &mesh,
                                          const TensorShape &tensor,
                                          const Layout &layout,
                                          const std::vector<int64_t> &coords);

//===----------------------------------------------------------------------===//
// Primitives and costs
//===----------------------------------------------------------------------===//

/// The order of the enumerators is the tie-breaking order of the search.
enum class Primitive {
  AllReduce,     ///< V -> R
  ReduceScatter, ///< V -> D(k)
  AllGather,     ///< D(k) -> R
  AllToAll,      ///< D(i) -> D(j)
  LocalSlice,    ///< R -> D(k), no communication
  LocalZero,     ///< R -> V: rank 0 of the group keeps the value, others zero
};
constexpr int kNumPrimitives = 6;

/// "all_reduce", "reduce_scatter", "all_gather", "all_to_all", "local_slice",
/// "local_zero".
const char *primitiveName(Primitive primitive);
std::optional<Primitive> parsePrimitive(const std::string &name);
/// True for the primitives that communicate.
bool isCollective(Primitive primitive);

/// One primitive applied along one mesh axis.
struct Transition {
  Primitive primitive = Primitive::AllReduce;
  size_t axis = 0;
  int fromDim = -1; ///< the dimension un-split (all_gather, all_to_all)
  int toDim = -1;   ///< the dimension split (reduce_scatter, all_to_all,
                    ///< local_slice)

  bool operator==(const Transition &other) const;
  bool operator!=(const Transition &other) const { return !(*this == other); }
  /// Primitive, then axis, then dimensions: the search's tie-breaking order.
  bool operator<(const Transition &other) const;
};

/// Alpha-beta costs: a message costs alpha seconds, a byte beta seconds, per
/// mesh axis (tp inside a node, dp across nodes); collectives are priced by
/// cost::collectiveTime. gamma (seconds per byte) is the local copy of
/// slicing and zeroing: kept far below beta so that those steps are never
/// free (the search stays deterministic) yet always cheaper than
/// communicating.
struct CostModel {
  using Link = cost::AlphaBeta;
  Link defaultLink{1e-5, 1e-11};
  /// Overrides by axis name.
  std::map<std::string, Link> axisLinks;
  double gamma = 1e-14;

  /// The same link on every axis.
  static CostModel uniform(double alpha, double beta, double gamma = 1e-14);
  const Link &link(const Mesh &mesh, size_t axis) const;
};

/// Costs must be finite and non-negative, and overrides must name mesh axes.
std::optional<Error> checkCostModel(const Mesh &mesh, const CostModel &model);

/// One step of a path.
struct Step {
  Transition transition;
  AxisState before;       ///< the axis' state before the step
  Layout after;           ///< the whole layout after the step
  int64_t localBytes = 0; ///< bytes of the local tensor before the step (B)
  double bytesSent = 0;   ///< bytes each rank sends (0 for local steps)
  double cost = 0;        ///< seconds
};

/// Applies one transition to a valid layout, with its cost. Errors say why it
/// does not apply: wrong state on the axis, a dimension that does not divide,
/// or a split that would land inside an existing one (the axis-order rule:
/// D(k) is added or removed only on the innermost axis splitting k).
Result<Step> applyTransition(const Mesh &mesh, const TensorShape &tensor,
                             const CostModel &model, const Layout &layout,
                             const Transition &transition);

/// What the search may use.
struct SearchOptions {
  /// Primitives not to use (e.g. all_to_all on a runtime without it).
  std::set<Primitive> disabled;
};

/// Every transition that applies to \p layout, in tie-breaking order.
std::vector<Step> enumerateSteps(const Mesh &mesh, const TensorShape &tensor,
                                 const CostModel &model, const Layout &layout,
                                 const SearchOptions &options = {});

struct Path {
  Layout source; ///< normalised
  Layout target; ///< normalised
  std::vector<Step> steps;
  double cost = 0; ///< seconds, the sum of the steps' costs
};

/// The cheapest conversion of \p source into \p target (Dijkstra over
/// layouts). Ties (costs within a relative 1e-9) go to fewer steps, then to
/// the sequence of transitions first in Transition order, so the answer is
/// deterministic. Errors for an invalid layout or cost model, and for a target
/// the allowed primitives cannot reach.
Result<Path> findPath(const Mesh &mesh, const TensorShape &tensor,
                      const Layout &source, const Layout &target,
                      const CostModel &model,
                      const SearchOptions &options = {});

/// Seconds to send a local tensor of \p bytes from one group to another that
/// differs along \p axis (pipeline stages): cost::collectiveTime of a
/// send/recv, alpha + bytes * beta of its link.
double sendRecvCost(const CostModel &model, const Mesh &mesh, size_t axis,
                    double bytes);

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

/// "V(tp) -all_reduce-> R(tp)".
std::string formatStep(const Mesh &mesh, const Step &step);
/// The steps joined by "; ", e.g.
/// "V(tp) -all_reduce-> R(tp); D0(dp) -all_gather-> R(dp)"; empty when the
/// layouts already agree.
std::string formatPath(const Mesh &mesh, const Path &path);

} // namespace layout
} // namespace tessera

#endif // TESSERA_LAYOUT_RVD_H
