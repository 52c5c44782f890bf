//===- ExtensionInterfaces.cpp - the extension dialect interfaces' IDs ----===//
//
// Explicit type IDs, so that an extension built as a shared library (a
// dialect plugin) and the tools agree on the interfaces' identity.
//
//===----------------------------------------------------------------------===//

#include "tessera/Interfaces/ExtensionInterfaces.h"

MLIR_DEFINE_EXPLICIT_TYPE_ID(tessera::RaisePatternInterface)
MLIR_DEFINE_EXPLICIT_TYPE_ID(tessera::RuntimeLibraryInterface)
