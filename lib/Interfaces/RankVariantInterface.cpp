//===- RankVariantInterface.cpp - attributes that name a rank -------------===//

#include "tessera/Interfaces/RankVariantInterface.h"

namespace tessera {
#include "tessera/Interfaces/RankVariantInterface.cpp.inc"
} // namespace tessera
