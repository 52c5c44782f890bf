//===- ActOps.h - the act example extension ---------------------*- C++ -*-===//

#ifndef ACT_ACTOPS_H
#define ACT_ACTOPS_H

#include "tessera/Interfaces/CostInterface.h"
#include "tessera/Interfaces/DimAnnotationInterface.h"
#include "tessera/Interfaces/GradientInterface.h"
#include "tessera/Interfaces/RuntimeCallInterface.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "act/ActDialect.h.inc"

#define GET_OP_CLASSES
#include "act/ActOps.h.inc"

#endif // ACT_ACTOPS_H
