//===- OpMetrics.h - what planning passes read off a tsr op -----*- C++ -*-===//
//
// One definition of the facts about an op that dist-plan, dist-schedule and
// dist-partition all need: which phase it belongs to and the name a plan
// file or a diagnostic calls it by. What an op costs is its
// CostOpInterface (tessera/Interfaces/CostInterface.h).
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_DIALECT_TSR_ANALYSIS_OPMETRICS_H
#define TESSERA_DIALECT_TSR_ANALYSIS_OPMETRICS_H

#include "mlir/IR/Operation.h"

#include <string>

namespace tessera::tsr {

/// Neither a backward op (tsr.backward) nor an optimizer update
/// (tsr.update).
bool isForward(mlir::Operation *op);

/// The op's name: its NameLoc (the ONNX node name), looking through call
/// sites and fused locations; "" when it has none.
std::string opName(mlir::Operation *op);

/// opName, or the op's registered name when it has none (for diagnostics).
std::string opNameOrKind(mlir::Operation *op);

} // namespace tessera::tsr

#endif // TESSERA_DIALECT_TSR_ANALYSIS_OPMETRICS_H
