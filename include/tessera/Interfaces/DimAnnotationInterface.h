//===- DimAnnotationInterface.h - dimension annotations ---------*- C++ -*-===//
//
// The op interface every Tessera operator implements, and helpers that bind
// an op's annotation to its operand/result shapes and split it.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_INTERFACES_DIMANNOTATIONINTERFACE_H
#define TESSERA_INTERFACES_DIMANNOTATIONINTERFACE_H

#include "mlir/IR/OpDefinition.h"
#include "tessera/Annotation/Annotation.h"

namespace tessera {

/// Static shapes of an op's operands (or results); an unranked or dynamic
/// tensor gives -1 entries, which binding rejects with a message.
std::vector<annotation::Shape> getShapes(mlir::TypeRange types);

/// Parses `tmpl` and expands it for `op`'s operand and result shapes.
Result<annotation::Annotation>
instantiateAnnotationTemplate(mlir::Operation *op, llvm::StringRef tmpl);

/// Parses concrete annotation text that an op built from its attributes;
/// it must not be a template.
Result<annotation::Annotation> parseBuiltAnnotation(const std::string &text);

} // namespace tessera

#include "tessera/Interfaces/DimAnnotationInterface.h.inc"

namespace tessera {

/// The op's annotation bound to its shapes. On failure, the message says
/// what is wrong (the caller decides whether it is a diagnostic).
Result<annotation::BoundAnnotation>
bindOpAnnotation(DimAnnotationOpInterface op);

/// Whether every operand and result of `op`'s annotation is `*`: an
/// elementwise op (with numpy broadcasting), whichever dialect defines it.
bool isElementwise(mlir::Operation *op);

/// Names used for generated annotations: prefix + index (d0, d1, ...).
std::vector<std::string> dimNames(size_t rank, const std::string &prefix = "d");

/// Joins names (with an optional mark per name) into one annotation entry;
/// an empty list gives "()".
std::string joinEntry(const std::vector<std::string> &items);

} // namespace tessera

#endif // TESSERA_INTERFACES_DIMANNOTATIONINTERFACE_H
