//===- Dropout.h - the counter-based dropout masks (private) ----*- C++ -*-===//
//
// Masks come from a hash of (base seed, op seed, counter, element index)
// rather than a stateful generator, so a mask depends only on where it is
// drawn: the same program run twice draws the same masks, and a kernel can
// produce any element's bit independently. The element index is the
// element's position in the whole tensor of the single-device step (a
// DropoutPiece maps a piece's elements there), and the driver sets the
// counter to the step, so every plan draws the single-device masks: a rank
// or a micro-batch holding a piece draws that piece's bits. Both backends
// draw them with these functions, so their masks agree bit for bit; the
// seed and the counter (Ops.h's setBaseSeed, dropoutCounter, ...) are
// common/Dropout.cpp's.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_COMMON_DROPOUT_H
#define TESSERA_RUNTIME_COMMON_DROPOUT_H

#include "tessera/runtime/Tensor.h"

#include "HostDevice.h"

#include <cstdint>
#include <vector>

namespace tessera {
namespace rt {
namespace detail {

/// SplitMix64's Weyl increment.
constexpr uint64_t kDropoutGamma = 0x9E3779B97F4A7C15ull;

/// SplitMix64's finaliser: a bijective 64-bit mixer with good avalanche.
TESSERA_RT_HOST_DEVICE inline uint64_t dropoutMix(uint64_t z) {
  z += kDropoutGamma;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// Whether element i of a call with this `stream` is kept: element i is
/// draw i of a SplitMix64 sequence started at `stream` (dropoutMix adds the
/// Weyl increment); 53 bits give a uniform u in [0, 1), kept iff u >= ratio.
TESSERA_RT_HOST_DEVICE inline bool dropoutKeeps(uint64_t stream, int64_t i,
                                                double ratio) {
  uint64_t bits = dropoutMix(stream + static_cast<uint64_t>(i) * kDropoutGamma);
  double u = static_cast<double>(bits >> 11) * 0x1.0p-53;
  return u >= ratio;
}

/// Where the elements of a dropout call's tensor lie in the tensor whose
/// mask they draw: the call's tensor (dims `local`) is the box at some
/// offsets of a larger one; `base` is the larger tensor's linear index of
/// the box's first element, `globalStride` its strides. `whole`: the call's
/// tensor is the whole one (element i draws bit i).
struct DropoutPiece {
  static constexpr int kMaxDims = 8;
  bool whole = true;
  int rank = 0;
  int64_t base = 0;
  int64_t local[kMaxDims] = {};
  int64_t globalStride[kMaxDims] = {};
};

/// The whole tensor's linear index of the piece's element i.
TESSERA_RT_HOST_DEVICE inline int64_t dropoutGlobalIndex(const DropoutPiece &p,
                                                         int64_t i) {
  if (p.whole)
    return i;
  int64_t g = p.base;
  for (int d = p.rank - 1; d >= 0; --d) {
    g += (i % p.local[d]) * p.globalStride[d];
    i /= p.local[d];
  }
  return g;
}

/// The factor of kept elements, 1 / (1 - ratio); ratio 1 drops everything
/// (the factor would be infinite), so 0.
template <typename T> T dropoutScale(double ratio) {
  return ratio < 1 ? static_cast<T>(1.0 / (1.0 - ratio)) : T(0);
}

/// dropout's operand checks (a float input, a ratio in [0, 1], `global` and
/// `offsets` both empty, or one entry per dimension of `x` with `x` inside
/// `global` at `offsets`) and the piece they describe.
DropoutPiece checkDropout(const Tensor &x, double ratio,
                          const std::vector<int64_t> &global,
                          const std::vector<int64_t> &offsets);
/// The stream of a dropout call with op seed `seed`: a hash of the base
/// seed, `seed` and the counter (which calls do not advance).
uint64_t dropoutStream(int64_t seed);

} // namespace detail
} // namespace rt
} // namespace tessera

#endif // TESSERA_RUNTIME_COMMON_DROPOUT_H
