//===- DistAttrs.h - dist attributes ----------------------------*- C++ -*-===//

#ifndef TESSERA_DIALECT_DIST_IR_DISTATTRS_H
#define TESSERA_DIALECT_DIST_IR_DISTATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "tessera/Dialect/Dist/IR/DistDialect.h"
#include "llvm/ADT/Hashing.h"

#include <optional>
#include <string>

namespace tessera::dist {

/// One entry of a #dist.layout: how a tensor is held along one mesh axis.
struct LayoutEntry {
  enum class Kind : uint8_t {
    Replicated, ///< R: the same tensor on every rank along the axis.
    Partial,    ///< V: partial values that sum to the tensor.
    Split,      ///< D<dim>: dimension `dim` split along the axis.
  };
  Kind kind = Kind::Replicated;
  /// The split dimension; only meaningful for Split.
  int64_t dim = 0;

  static LayoutEntry replicated() { return {Kind::Replicated, 0}; }
  static LayoutEntry partial() { return {Kind::Partial, 0}; }
  static LayoutEntry split(int64_t dim) { return {Kind::Split, dim}; }

  bool isReplicated() const { return kind == Kind::Replicated; }
  bool isPartial() const { return kind == Kind::Partial; }
  bool isSplit() const { return kind == Kind::Split; }

  /// "R", "V" or "D<dim>", as in the attribute's assembly.
  std::string str() const;

  bool operator==(const LayoutEntry &other) const {
    return kind == other.kind && (kind != Kind::Split || dim == other.dim);
  }
  bool operator!=(const LayoutEntry &other) const { return !(*this == other); }
};

inline llvm::hash_code hash_value(const LayoutEntry &entry) {
  return llvm::hash_combine(entry.kind, entry.isSplit() ? entry.dim : 0);
}

} // namespace tessera::dist

#define GET_ATTRDEF_CLASSES
#include "tessera/Dialect/Dist/IR/DistAttrs.h.inc"

namespace tessera::dist {

/// The dist.mesh of the closest enclosing (or the same) op that has one,
/// normally the module; null if none.
MeshAttr getEnclosingMesh(mlir::Operation *op);

} // namespace tessera::dist

#endif // TESSERA_DIALECT_DIST_IR_DISTATTRS_H
