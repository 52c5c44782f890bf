//===- GradientInterface.cpp - vector-Jacobian products -------------------===//

#include "tessera/Interfaces/GradientInterface.h"

namespace tessera {
#include "tessera/Interfaces/GradientInterface.cpp.inc"
} // namespace tessera
