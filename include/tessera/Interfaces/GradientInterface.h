//===- GradientInterface.h - vector-Jacobian products -----------*- C++ -*-===//

#ifndef TESSERA_INTERFACES_GRADIENTINTERFACE_H
#define TESSERA_INTERFACES_GRADIENTINTERFACE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

#include "tessera/Interfaces/GradientInterface.h.inc"

#endif // TESSERA_INTERFACES_GRADIENTINTERFACE_H
