//===- DiscardableAttrs.cpp - verifying declared attributes ---------------===//

#include "tessera/Dialect/Common/DiscardableAttrs.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;

namespace tessera {
namespace {

const char *placementText(AttrPlacement p) {
  switch (p) {
  case AttrPlacement::Module:
    return "a builtin.module";
  case AttrPlacement::Func:
    return "a function";
  case AttrPlacement::Op:
    return "an op in a function body";
  case AttrPlacement::Arg:
    return "a function argument";
  case AttrPlacement::Result:
    return "a function result";
  case AttrPlacement::ArgOrResult:
    return "a function argument or result";
  }
  return "";
}

bool placedRight(AttrSite site, AttrPlacement p) {
  if (site.value) {
    bool isResult = site.value->first;
    return p == AttrPlacement::ArgOrResult ||
           (isResult ? p == AttrPlacement::Result : p == AttrPlacement::Arg);
  }
  switch (p) {
  case AttrPlacement::Module:
    return isa<ModuleOp>(site.op);
  case AttrPlacement::Func:
    return isa<FunctionOpInterface>(site.op);
  case AttrPlacement::Op:
    return !isa<ModuleOp, FunctionOpInterface>(site.op);
  default:
    return false;
  }
}

} // namespace

const DiscardableAttrInfo *
verifyDiscardableAttr(AttrSite site, NamedAttribute attr,
                      ArrayRef<DiscardableAttrInfo> table, StringRef dialect) {
  StringRef name = attr.getName().getValue();
  const DiscardableAttrInfo *info = nullptr;
  for (const DiscardableAttrInfo &entry : table)
    if (name == entry.name)
      info = &entry;
  if (!info) {
    InFlightDiagnostic diag = site.op->emitError()
                              << "unknown attribute '" << name << "': "
                              << dialect << " defines ";
    for (size_t i = 0; i < table.size(); ++i)
      diag << (i == 0 ? "" : i + 1 == table.size() ? " and " : ", ")
           << table[i].name;
    return nullptr;
  }
  if (!placedRight(site, info->placement)) {
    InFlightDiagnostic diag = site.op->emitError()
                              << "'" << name << "' belongs on "
                              << placementText(info->placement) << ", not on ";
    if (site.value)
      diag << (site.value->first ? "result " : "argument ")
           << site.value->second << " of ";
    diag << "'" << site.op->getName() << "'";
    return nullptr;
  }
  if (!info->isValid(attr.getValue())) {
    site.op->emitError() << "'" << name << "' must be " << info->expected
                         << ", found " << attr.getValue();
    return nullptr;
  }
  return info;
}

} // namespace tessera
