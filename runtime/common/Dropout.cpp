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

namespace {
/// "[0, 4, 0]".
std::string listOf(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}
} // namespace

DropoutPiece checkDropout(const Tensor &x, double ratio,
                          const std::vector<int64_t> &global,
                          const std::vector<int64_t> &offsets) {
  const char *name = "dropout";
  requireFloat(x, name, "input");
  if (!(ratio >= 0 && ratio <= 1))
    fail(name, "ratio must lie in [0, 1], got " + std::to_string(ratio));
  DropoutPiece p;
  if (global.empty() && offsets.empty())
    return p;
  const Shape &local = x.shape();
  if (global.size() != local.size() || offsets.size() != local.size())
    fail(name, "the whole tensor's shape " + listOf(global) +
                   " and the piece's offsets " + listOf(offsets) +
                   " must have one entry per dimension of the input " +
                   shapeToString(local));
  if (local.size() > static_cast<size_t>(DropoutPiece::kMaxDims))
    fail(name, "a piece of a tensor has at most " +
                   std::to_string(DropoutPiece::kMaxDims) +
                   " dimensions, got " + std::to_string(local.size()));
  p.rank = static_cast<int>(local.size());
  int64_t stride = 1;
  for (int d = p.rank - 1; d >= 0; --d) {
    if (offsets[d] < 0 || offsets[d] + local[d] > global[d])
      fail(name, "the input " + shapeToString(local) + " at offsets " +
                     listOf(offsets) + " is not inside the whole tensor " +
                     shapeToString(global));
    p.local[d] = local[d];
    p.globalStride[d] = stride;
    p.base += offsets[d] * stride;
    stride *= global[d];
  }
  p.whole = global == local;
  return p;
}

uint64_t dropoutStream(int64_t seed) {
  return dropoutMix(dropoutMix(dropoutMix(static_cast<uint64_t>(gBaseSeed)) ^
                               static_cast<uint64_t>(seed)) ^
                    gCounter);
}

} // namespace detail
} // namespace rt
} // namespace tessera
