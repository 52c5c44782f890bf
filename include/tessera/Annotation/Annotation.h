//===- Annotation.h - nnScaler-style dimension annotations ------*- C++ -*-===//
//
// An operator's dimension annotation names every dimension of every operand
// and result, e.g. the batched matmul
//
//     "b m k+, k+ n -> b m n"
//
// Syntax (one string per operator):
//   annotation := specs? '->' specs?
//   specs      := spec (',' spec)*
//   spec       := item+ | '()' | '...'         ('()' is a rank-0 tensor;
//                                              '...' repeats the previous
//                                              spec for variadic operands)
//   item       := atom | '(' atom atom+ ')' | '*' mod?
//   atom       := name mod? | '1'
//   mod        := '+'   a reduced dimension: splitting it leaves partial sums
//               | '^'   a dimension that must never be split
//   name       := [A-Za-z_][A-Za-z0-9_]*
// A parenthesised group is ONE tensor dimension whose size is the product of
// its atoms (reshapes); only its first atom may be split, so that every piece
// stays contiguous. '1' is a broadcast dimension of size one. '*' stands for
// any number of leading dimensions shared by every spec that writes it,
// aligned to the right as in numpy broadcasting; '*+' / '*^' mark all of
// them. A name marked '+' or '^' anywhere carries the mark everywhere.
//
// This library is plain C++ (no MLIR types) so that the planner and the
// command-line tools can use it too; the MLIR op interface adapts it.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_ANNOTATION_ANNOTATION_H
#define TESSERA_ANNOTATION_ANNOTATION_H

#include "tessera/Support/Result.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tessera {
namespace annotation {

/// How a dimension may be partitioned.
enum class DimMark {
  None,    ///< free: split it and every piece computes its share
  Reduced, ///< '+': splitting it leaves partial sums in results without it
  Frozen,  ///< '^': must never be split
};

/// One named (or broadcast '1') part of a tensor dimension.
struct Atom {
  std::string name; ///< empty for a broadcast '1'
  DimMark mark = DimMark::None;
  bool isBroadcast() const { return name.empty(); }
};

/// One tensor dimension: a single atom, or a group '(a b)' of several.
struct Dim {
  std::vector<Atom> atoms;
  bool isGroup() const { return atoms.size() > 1; }
};

/// The dimensions of one operand or result. Before instantiation a spec may
/// hold an ellipsis '*' at position `ellipsisPos`.
struct TensorSpec {
  std::vector<Dim> dims;
  std::optional<size_t> ellipsisPos;
  DimMark ellipsisMark = DimMark::None;
  bool repeat = false; ///< the '...' spec
};

/// A parsed annotation (a template while it still has '*' or '...').
struct Annotation {
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;

  bool isTemplate() const;
  /// The annotation in canonical text, e.g. "b m k+, k+ n -> b m n".
  std::string str() const;
};

/// Parses annotation text. Errors name the column, e.g.
/// "column 7: expected a dimension name, '1', '(' or '*', found ')'".
Result<Annotation> parse(const std::string &text);

using Shape = std::vector<int64_t>;

/// Expands '*' and '...' for operands and results of the given shapes
/// (their number fixes how often '...' repeats). Ellipsis dimensions are
/// named _0, _1, ... from the outermost; where a spec has size 1 at an
/// ellipsis position and another spec a larger size, the atom becomes a
/// broadcast '1'.
Result<Annotation> instantiate(const Annotation &tmpl,
                               const std::vector<Shape> &inputs,
                               const std::vector<Shape> &outputs);

/// An instantiated annotation bound to concrete shapes: the size of every
/// name, and which names may be split.
struct BoundAnnotation {
  Annotation annotation;
  std::vector<Shape> inputShapes, outputShapes;
  std::map<std::string, int64_t> sizes;
  std::map<std::string, DimMark> marks;
  /// Names that are an inner (not first) atom of some group.
  std::map<std::string, std::string> innerOfGroup;

  /// All names in order of first appearance.
  std::vector<std::string> names() const;
  /// True when `name` may be split at all.
  bool isSplittable(const std::string &name) const;
};

/// Checks the annotation against the operand and result shapes (ranks,
/// consistent sizes, groups whose unknown atom can be solved, dropped
/// dimensions marked '+' or '^') and binds every name to its size.
Result<BoundAnnotation> bind(const Annotation &annotation,
                             const std::vector<Shape> &inputs,
                             const std::vector<Shape> &outputs);

/// Convenience: instantiate (when a template) then bind.
Result<BoundAnnotation> bindTemplate(const Annotation &tmpl,
                                     const std::vector<Shape> &inputs,
                                     const std::vector<Shape> &outputs);

/// The effect of splitting one or several names at once.
struct SplitResult {
  std::vector<Shape> inputShapes;  ///< local shape of every operand
  std::vector<Shape> outputShapes; ///< local shape of every result
  /// True where a result holds partial sums (a split '+' name it lacks).
  std::vector<bool> outputPartial;
  /// Number of pieces (product of the factors).
  int64_t pieces = 1;
};

/// Splits `factors` (name -> number of pieces) at once.
Result<SplitResult> split(const BoundAnnotation &bound,
                          const std::map<std::string, int64_t> &factors);

} // namespace annotation
} // namespace tessera

#endif // TESSERA_ANNOTATION_ANNOTATION_H
