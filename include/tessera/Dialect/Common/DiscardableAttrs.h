//===- DiscardableAttrs.h - verifying declared attributes -------*- C++ -*-===//
//
// The C++ side of DiscardableAttrs.td: the entry type of a dialect's
// generated kDiscardableAttrs table and the generic check every Tessera
// dialect runs on its discardable attributes (known name, right place,
// right kind of value), plus typed access through upstream's helpers.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_DIALECT_COMMON_DISCARDABLEATTRS_H
#define TESSERA_DIALECT_COMMON_DISCARDABLEATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/Operation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/ArrayRef.h"

#include <optional>
#include <utility>

namespace tessera {

/// Where a discardable attribute may appear.
enum class AttrPlacement { Module, Func, Op, Arg, Result, ArgOrResult };

template <class T> bool attrIsA(mlir::Attribute a) { return llvm::isa<T>(a); }

/// One declared attribute (generated from a TesseraDiscardableAttr).
struct DiscardableAttrInfo {
  const char *name;
  AttrPlacement placement;
  const char *expected;
  bool (*isValid)(mlir::Attribute);
};

/// Where an attribute was found.
struct AttrSite {
  mlir::Operation *op;
  /// Set for a function argument or result attribute.
  std::optional<std::pair<bool /*isResult*/, unsigned>> value;
};

/// Checks that `attr` at `site` is declared in `table`, placed where its
/// declaration allows and holds the declared kind of value; returns the
/// entry, or null after emitting an error on site.op.
const DiscardableAttrInfo *
verifyDiscardableAttr(AttrSite site, mlir::NamedAttribute attr,
                      llvm::ArrayRef<DiscardableAttrInfo> table,
                      llvm::StringRef dialect);

/// The body of a dialect's verifyRegionArgAttribute (isResult false) and
/// verifyRegionResultAttribute (true) for function arguments and results.
inline mlir::LogicalResult
verifyDiscardableValueAttr(mlir::Operation *op, bool isResult, unsigned index,
                           mlir::NamedAttribute attr,
                           llvm::ArrayRef<DiscardableAttrInfo> table,
                           llvm::StringRef dialect) {
  return mlir::success(verifyDiscardableAttr(
      {op, std::make_pair(isResult, index)}, attr, table, dialect));
}

/// Typed access through an upstream discardable-attribute helper class H
/// (e.g. tsr::TsrDialect::LossAttrHelper).
template <class H>
using AttrStorage =
    decltype(std::declval<H &>().getAttr(std::declval<mlir::Operation *>()));

template <class H> AttrStorage<H> getAttr(mlir::Operation *op) {
  return op->getAttrOfType<AttrStorage<H>>(H::getNameStr());
}
template <class H> bool hasAttr(mlir::Operation *op) {
  return static_cast<bool>(getAttr<H>(op));
}
template <class H> void setAttr(mlir::Operation *op, AttrStorage<H> value) {
  op->setAttr(H::getNameStr(), value);
}
template <class H> void removeAttr(mlir::Operation *op) {
  op->removeAttr(H::getNameStr());
}
template <class H>
AttrStorage<H> getArgAttr(mlir::FunctionOpInterface f, unsigned i) {
  return f.getArgAttrOfType<AttrStorage<H>>(i, H::getNameStr());
}
template <class H>
AttrStorage<H> getResultAttr(mlir::FunctionOpInterface f, unsigned i) {
  return f.getResultAttrOfType<AttrStorage<H>>(i, H::getNameStr());
}
template <class H>
void setArgAttr(mlir::FunctionOpInterface f, unsigned i, AttrStorage<H> v) {
  f.setArgAttr(i, H::getNameStr(), v);
}
template <class H>
void setResultAttr(mlir::FunctionOpInterface f, unsigned i, AttrStorage<H> v) {
  f.setResultAttr(i, H::getNameStr(), v);
}

} // namespace tessera

#endif // TESSERA_DIALECT_COMMON_DISCARDABLEATTRS_H
