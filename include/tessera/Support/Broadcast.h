//===- Broadcast.h - Element indices under numpy broadcasting ---*- C++ -*-===//
//
// What the import-time evaluators share (the ONNX constant folder and the
// tsr ops' folders): which element of a broadcast operand an element of the
// result reads. Plain C++17, header only; `Shape` is any random-access
// sequence of int64_t (std::vector, llvm::ArrayRef).
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_SUPPORT_BROADCAST_H
#define TESSERA_SUPPORT_BROADCAST_H

#include <cstdint>

namespace tessera::support {

/// The linear index into an operand of shape `in`, broadcast numpy-style
/// (aligned to the right, size-1 dimensions stretched) to `out`, of the
/// element at linear index `flat` of `out`.
template <typename OutShape, typename InShape>
int64_t broadcastIndex(int64_t flat, const OutShape &out, const InShape &in) {
  int64_t idx = 0, stride = 1;
  int64_t off =
      static_cast<int64_t>(out.size()) - static_cast<int64_t>(in.size());
  for (int64_t i = static_cast<int64_t>(out.size()) - 1; i >= 0; --i) {
    int64_t coord = flat % out[i];
    flat /= out[i];
    if (i >= off) {
      int64_t d = in[i - off];
      if (d != 1)
        idx += coord * stride;
      stride *= d;
    }
  }
  return idx;
}

} // namespace tessera::support

#endif // TESSERA_SUPPORT_BROADCAST_H
