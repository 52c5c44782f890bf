//===- Dropout.cpp - counter-based, reproducible dropout ------------------===//
//
// Masks come from a hash of (base seed, op seed, call index, element index)
// rather than a stateful generator, so a mask depends only on where it is
// drawn: the same program run twice draws the same masks, and a kernel can
// produce any element's bit independently (what a sharded run needs to
// reproduce the single-device masks).
//
//===----------------------------------------------------------------------===//

#include "tessera/runtime/Ops.h"

#include "Kernels.h"

namespace tessera {
namespace rt {
using namespace detail;

namespace {

int64_t gBaseSeed = 0;
uint64_t gCounter = 0;

constexpr uint64_t kGamma = 0x9E3779B97F4A7C15ull;

// SplitMix64's finaliser: a bijective 64-bit mixer with good avalanche.
inline uint64_t mix(uint64_t z) {
  z += kGamma;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

} // namespace

void setBaseSeed(int64_t seed) {
  gBaseSeed = seed;
  gCounter = 0;
}
int64_t baseSeed() { return gBaseSeed; }
uint64_t dropoutCounter() { return gCounter; }
void setDropoutCounter(uint64_t counter) { gCounter = counter; }

std::tuple<Tensor, Tensor> dropout(const Tensor &x, double ratio,
                                   int64_t seed) {
  const char *name = "dropout";
  requireFloat(x, name, "input");
  if (!(ratio >= 0 && ratio <= 1))
    fail(name, "ratio must lie in [0, 1], got " + std::to_string(ratio));
  uint64_t stream = mix(
      mix(mix(static_cast<uint64_t>(gBaseSeed)) ^ static_cast<uint64_t>(seed)) ^
      gCounter++);
  Tensor out(x.shape(), x.dtype());
  Tensor mask(x.shape(), DType::i1);
  dispatchFloat(x.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    const T *in = x.data<T>();
    T *o = out.data<T>();
    uint8_t *k = mask.data<uint8_t>();
    // ratio 1 drops everything; 1 / (1 - ratio) would be infinite.
    T scale = ratio < 1 ? static_cast<T>(1.0 / (1.0 - ratio)) : T(0);
    for (int64_t i = 0, n = x.numel(); i < n; ++i) {
      // Element i is draw i of a SplitMix64 sequence started at `stream`
      // (mix adds the Weyl increment); 53 bits give a uniform in [0, 1).
      uint64_t bits = mix(stream + static_cast<uint64_t>(i) * kGamma);
      double u = static_cast<double>(bits >> 11) * 0x1.0p-53;
      bool keep = u >= ratio;
      k[i] = keep;
      o[i] = keep ? in[i] * scale : T(0);
    }
  });
  return {out, mask};
}

} // namespace rt
} // namespace tessera
