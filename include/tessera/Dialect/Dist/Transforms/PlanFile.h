//===- PlanFile.h - Reading dist-plan's JSON plan files ---------*- C++ -*-===//
//
// The plan file format of docs/plans.md, read and checked independently of
// any model: every key known, every value of its type and range, every
// regular expression valid. The reader uses the strict JSON reader of
// lib/Support, which throws; this interface does not (the pass is built
// without exceptions), so errors come back as a message that names the file
// and the key path, for the pass to turn into a diagnostic.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_DIALECT_DIST_TRANSFORMS_PLANFILE_H
#define TESSERA_DIALECT_DIST_TRANSFORMS_PLANFILE_H

#include "tessera/Planner/PlanShape.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::dist {

struct PlanFile {
  /// `policy`: a built-in plan ("dp", "dp2xpp2", "auto"); checked by the
  /// pass, which knows the policies.
  std::optional<std::string> policy;
  /// `mesh`: the plan shape's axis sizes dp, tp and pp, each >= 1, their
  /// product the devices (with no policy: the mesh, its splits from `trans`,
  /// its stages from `assign` or the pp policy). With policy "auto": the
  /// sizes the search must keep, 0 for an axis the file does not give.
  std::optional<planner::PlanShape> mesh;
  std::optional<int64_t> microBatches;
  std::optional<bool> zero1;
  std::optional<bool> zero2;
  std::optional<bool> zero3;
  /// Which ops an entry means. Every condition given must hold; at least
  /// one of ops, params and group is given. Entries select forward ops
  /// (the model's own), and the pass carries their plan to the backward ops
  /// that differentiate them; `backward` selects those backward ops instead,
  /// for the rare plan that treats them apart.
  struct Selector {
    /// `ops`: a regular expression found anywhere in the op's name (its
    /// ONNX node name; a backward op's is the forward op's it
    /// differentiates).
    std::optional<std::string> ops;
    /// `params`: a regular expression matching a whole parameter name
    /// ("h.0.mlp.c_fc.weight"): the ops that read a matching parameter,
    /// directly or through a transpose, reshape, cast or slice.
    std::optional<std::string> params;
    /// `group`: a regular expression matching a whole layer-group name
    /// ("h.1", "layers.0", "(before the layers)", "(after the layers)").
    std::optional<std::string> group;
    /// `kind`: an op name ("tsr.matmul"); only ops of that kind.
    std::optional<std::string> kind;
    bool backward = false;
    /// The entry's selectors as written, for messages.
    std::string str() const;
  };
  /// `trans[i]`: split the selected ops along annotation dimensions, each
  /// over "dp" or "tp" (each axis at most once).
  struct Trans {
    Selector select;
    std::map<std::string, std::string> split; ///< dimension -> axis
    size_t index;
    /// `propagate`: the split follows the data flow from the selected ops
    /// through every op whose annotation carries the dimension (forward,
    /// backward and updates), as the tp policy's traces do; false: only
    /// the selected ops, their views of parameters, their backward ops and
    /// updates.
    bool propagate = false;
  };
  /// `assign[i]`: put the selected ops on pipeline stage `stage`
  /// (DistDialect::kEveryStage for "all": every device).
  struct Assign {
    Selector select;
    int64_t stage;
    size_t index;
  };
  /// `recompute[i]`: the backward recomputes the selected forward ops'
  /// results instead of keeping them (activation recomputation; forward ops
  /// only).
  struct Recompute {
    Selector select;
    size_t index;
  };
  /// `coshard[i]`: the selected ops that tp splits (and the backward ops
  /// that differentiate them) run their tp piece in `pieces` parts, one
  /// after another (nnScaler's co-shard; forward selectors only).
  struct Coshard {
    Selector select;
    int64_t pieces;
    size_t index;
  };
  std::vector<Trans> trans;
  std::vector<Assign> assign;
  std::vector<Recompute> recompute;
  std::vector<Coshard> coshard;
  /// `order[i]`: [before, after] op names.
  std::vector<std::pair<std::string, std::string>> order;
};

/// Reads and checks the plan file at `path`. Returns the plan, or
/// std::nullopt with `error` set to a message naming the file and the key
/// path ("p.json: trans[2].split.heads: expected a mesh axis name (a
/// string), got 3"). Never throws.
std::optional<PlanFile> readPlanFile(const std::string &path,
                                     std::string &error) noexcept;
/// The same for a plan file's text (`origin` names it in messages).
std::optional<PlanFile> parsePlanFile(std::string_view text,
                                      const std::string &origin,
                                      std::string &error) noexcept;

} // namespace tessera::dist

#endif // TESSERA_DIALECT_DIST_TRANSFORMS_PLANFILE_H
