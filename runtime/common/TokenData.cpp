//===- TokenData.cpp - nanoGPT token files and the batching rule ----------===//

#include "tessera/runtime/Files.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sys/stat.h>

namespace tessera {
namespace rt {

TokenData::TokenData(const std::string &path) : path_(path) {
  // A directory opens as a stream on Linux and reports a nonsense size; a
  // device or FIFO has none: only regular files are token data.
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    throw Error(path + ": cannot open token data: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    throw Error(path + ": token data must be a regular file (this is " +
                (S_ISDIR(st.st_mode) ? "a directory" : "not a regular file") +
                ")");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(path + ": cannot open token data: " + std::strerror(errno));
  int64_t bytes = static_cast<int64_t>(st.st_size);
  if (bytes % 2)
    throw Error(path + ": " + std::to_string(bytes) +
                " bytes is not a whole number of uint16 tokens");
  std::vector<unsigned char> raw(bytes);
  in.read(reinterpret_cast<char *>(raw.data()), bytes);
  if (!in)
    throw Error(path + ": short read of token data");
  tokens_.resize(bytes / 2);
  for (size_t i = 0; i < tokens_.size(); ++i)
    tokens_[i] = static_cast<uint16_t>(raw[2 * i] | raw[2 * i + 1] << 8);
}

int64_t TokenData::size() const { return static_cast<int64_t>(tokens_.size()); }

std::pair<Tensor, Tensor> TokenData::batch(int64_t step, int64_t B,
                                           int64_t T) const {
  if (step < 0 || B < 1 || T < 1)
    throw Error(path_ + ": bad batch request (step " + std::to_string(step) +
                ", B " + std::to_string(B) + ", T " + std::to_string(T) + ")");
  int64_t modulus = size() - T - 1;
  if (modulus < 1)
    throw Error(path_ + ": " + std::to_string(size()) +
                " tokens are too few for sequences of " + std::to_string(T) +
                " (need at least " + std::to_string(T + 2) + ")");
  // Host tensors, filled here; the driver moves them with toDevice.
  Tensor idx({B, T}, DType::i64, Device::host),
      targets({B, T}, DType::i64, Device::host);
  int64_t *pi = idx.data<int64_t>(), *pt = targets.data<int64_t>();
  for (int64_t j = 0; j < B; ++j) {
    int64_t o = offset(step, B, T, j);
    for (int64_t t = 0; t < T; ++t) {
      pi[j * T + t] = tokens_[o + t];
      pt[j * T + t] = tokens_[o + t + 1];
    }
  }
  return {idx, targets};
}

int64_t TokenData::offset(int64_t step, int64_t B, int64_t T,
                          int64_t row) const {
  int64_t modulus = size() - T - 1;
  if (modulus < 1)
    return 0;
  // ((step*B + row) * T) mod modulus in 128 bits: no product overflows.
  using U = unsigned __int128;
  U r = (static_cast<U>(step % modulus) * static_cast<U>(B % modulus) +
         static_cast<U>(row)) %
        static_cast<U>(modulus);
  return static_cast<int64_t>(r * static_cast<U>(T) % static_cast<U>(modulus));
}

} // namespace rt
} // namespace tessera
