//===- Dropout.cpp - dropout's seed, call counter and checks --------------===//

#include "Dropout.h"

#include "tessera/runtime/Ops.h"

#include "Checks.h"

#include <string>

namespace tessera {
namespace rt {

namespace {
int64_t gBaseSeed = 0;
uint64_t gCounter = 0;
} // namespace

void setBaseSeed(int64_t seed) {
  gBaseSeed = seed;
  gCounter = 0;
}
int64_t baseSeed() { return gBaseSeed; }
uint64_t dropoutCounter() { return gCounter; }
void setDropoutCounter(uint64_t counter) { gCounter = counter; }

namespace detail {

void checkDropout(const Tensor &x, double ratio) {
  const char *name = "dropout";
  requireFloat(x, name, "input");
  if (!(ratio >= 0 && ratio <= 1))
    fail(name, "ratio must lie in [0, 1], got " + std::to_string(ratio));
}

uint64_t nextDropoutStream(int64_t seed) {
  return dropoutMix(dropoutMix(dropoutMix(static_cast<uint64_t>(gBaseSeed)) ^
                               static_cast<uint64_t>(seed)) ^
                    gCounter++);
}

} // namespace detail
} // namespace rt
} // namespace tessera
