//===- RankVariantInterface.h - attributes that name a rank -----*- C++ -*-===//

#ifndef TESSERA_INTERFACES_RANKVARIANTINTERFACE_H
#define TESSERA_INTERFACES_RANKVARIANTINTERFACE_H

#include "mlir/IR/OpDefinition.h"

#include "tessera/Interfaces/RankVariantInterface.h.inc"

#endif // TESSERA_INTERFACES_RANKVARIANTINTERFACE_H
