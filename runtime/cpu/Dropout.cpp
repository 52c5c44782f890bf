//===- Dropout.cpp - counter-based, reproducible dropout ------------------===//
//
// The CPU kernel of dropout; the masks, the seed and the call counter are
// common/Dropout's (the same masks as the CUDA backend's, bit for bit).
//
//===----------------------------------------------------------------------===//

#include "tessera/runtime/Ops.h"

#include "Dropout.h"
#include "Kernels.h"

namespace tessera {
namespace rt {
using namespace detail;

std::tuple<Tensor, Tensor> dropout(const Tensor &x, double ratio, int64_t seed,
                                   const std::vector<int64_t> &global,
                                   const std::vector<int64_t> &offsets) {
  const char *name = "dropout";
  DropoutPiece piece = checkDropout(x, ratio, global, offsets);
  uint64_t stream = dropoutStream(seed);
  Tensor out(x.shape(), x.dtype());
  Tensor mask(x.shape(), DType::i1);
  dispatchFloat(x.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    const T *in = x.data<T>();
    T *o = out.data<T>();
    uint8_t *k = mask.data<uint8_t>();
    T scale = dropoutScale<T>(ratio);
    for (int64_t i = 0, n = x.numel(); i < n; ++i) {
      bool keep = dropoutKeeps(stream, dropoutGlobalIndex(piece, i), ratio);
      k[i] = keep;
      o[i] = keep ? in[i] * scale : T(0);
    }
  });
  return {out, mask};
}

} // namespace rt
} // namespace tessera
