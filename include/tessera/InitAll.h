//===- InitAll.h - every dialect and interface of Tessera -------*- C++ -*-===//
//
// The one place where the tools learn Tessera's dialects and the
// interfaces attached to them from outside (lowerings to EmitC, the
// inliner). An in-tree extension adds its registration call here.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_INITALL_H
#define TESSERA_INITALL_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace tessera {

/// tsr, dist, func and emitc, with tsr's and dist's ConvertToEmitC
/// interfaces and func's inliner extension, and the extension dialects
/// (dialects/llm).
void registerAllDialects(mlir::DialectRegistry &registry);

} // namespace tessera

#endif // TESSERA_INITALL_H
