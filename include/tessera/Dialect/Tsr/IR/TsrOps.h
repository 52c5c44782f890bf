//===- TsrOps.h - tsr operations --------------------------------*- C++ -*-===//

#ifndef TESSERA_DIALECT_TSR_IR_TSROPS_H
#define TESSERA_DIALECT_TSR_IR_TSROPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Interfaces/CostInterface.h"
#include "tessera/Interfaces/DimAnnotationInterface.h"
#include "tessera/Interfaces/GradientInterface.h"
#include "tessera/Interfaces/RankVariantInterface.h"
#include "tessera/Interfaces/RuntimeCallInterface.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include "tessera/Dialect/Tsr/IR/TsrEnums.h.inc"

#define GET_OP_CLASSES
#include "tessera/Dialect/Tsr/IR/TsrOps.h.inc"

#endif // TESSERA_DIALECT_TSR_IR_TSROPS_H
