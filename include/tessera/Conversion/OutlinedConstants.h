//===- OutlinedConstants.h - constants kept out of emitted source -*- C++
//-*-===//
//
// convert-tsr-to-emitc with a `constants-file` writes a large constant (a
// causal mask, a table) not as a C++ literal but as a call
// `tessera::rt::constant("<key>")`, and the packager writes the values to
// that file (safetensors) under the same key. Both sides use these
// functions, so the keys agree: a key is a hash of the constant's element
// type, shape and values, so equal constants (the same mask in every rank's
// program) are stored once.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_CONVERSION_OUTLINEDCONSTANTS_H
#define TESSERA_CONVERSION_OUTLINEDCONSTANTS_H

#include "mlir/IR/BuiltinAttributes.h"

#include <optional>
#include <string>

namespace tessera {

/// convert-tsr-to-emitc's default for outline-constants-above: a constant
/// of more elements goes to the constants file. 64 keeps small tables
/// readable in the source and moves every mask.
constexpr int64_t kOutlineConstantsAbove = 64;

/// Whether a constant of this value goes to the constants file: a dense,
/// non-splat value of more than `above` elements (a splat is one runtime
/// call, `full`, whatever its size).
bool isOutlinedConstant(mlir::DenseElementsAttr value, int64_t above);

/// The row-major little-endian bytes of the value in the runtime's layout
/// (i1: one byte per element, 0 or 1); std::nullopt for an element type the
/// runtime lacks (it has f32, f64, i32, i64, i1).
std::optional<std::string> constantBytes(mlir::DenseElementsAttr value);

/// Its key in the constants file: "const." and 16 hex digits of a 64-bit
/// FNV-1a hash of the element type, the shape and the bytes.
std::string outlinedConstantKey(mlir::DenseElementsAttr value);

} // namespace tessera

#endif // TESSERA_CONVERSION_OUTLINEDCONSTANTS_H
