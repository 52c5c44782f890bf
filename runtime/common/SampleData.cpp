//===- SampleData.cpp - named inputs' samples from a safetensors file -----===//
//
// The batch format of models whose inputs are not a token stream (float
// features, images, 1-D class labels, several inputs): one tensor per input
// with the samples along its first dimension (docs/training.md).
//
//===----------------------------------------------------------------------===//

#include "tessera/runtime/Files.h"

#include <cstring>

namespace tessera {
namespace rt {

SampleData::SampleData(const std::string &path) : path_(path) {
  for (auto &[name, tensor] : readSafetensors(path)) {
    if (tensor.rank() == 0)
      throw Error(path + ": tensor '" + name +
                  "' is a scalar; samples are stacked along the first "
                  "dimension, [N, ...]");
    if (names_.empty())
      size_ = tensor.shape()[0];
    else if (tensor.shape()[0] != size_)
      throw Error(path + ": tensor '" + name + "' holds " +
                  std::to_string(tensor.shape()[0]) + " samples, '" +
                  names_.front() + "' " + std::to_string(size_) +
                  " (the first dimension counts the samples)");
    names_.push_back(name);
    Stored &stored = tensors_[name];
    stored.info = {tensor.dtype(), tensor.shape()};
    const char *raw = static_cast<const char *>(tensor.rawData());
    stored.bytes.assign(raw, raw + tensor.nbytes());
  }
  if (names_.empty())
    throw Error(path + ": the sample file holds no tensors");
  if (size_ == 0)
    throw Error(path + ": the sample file holds 0 samples");
}

const SampleData::Info *SampleData::find(const std::string &name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second.info;
}

int64_t SampleData::intAt(const std::string &name, int64_t i) const {
  const Stored &s = tensors_.at(name);
  if (s.info.dtype == DType::i64) {
    int64_t v;
    std::memcpy(&v, s.bytes.data() + i * sizeof(v), sizeof(v));
    return v;
  }
  if (s.info.dtype == DType::i32) {
    int32_t v;
    std::memcpy(&v, s.bytes.data() + i * sizeof(v), sizeof(v));
    return v;
  }
  throw Error(path_ + ": '" + name + "' is not an integer tensor");
}

int64_t SampleData::sampleIndex(int64_t step, int64_t B, int64_t row) const {
  // (step*B + row) mod N in 128 bits: no product overflows.
  using U = unsigned __int128;
  U n = static_cast<U>(size_);
  return static_cast<int64_t>(
      (static_cast<U>(step) % n * (static_cast<U>(B) % n) +
       static_cast<U>(row)) %
      n);
}

Tensor SampleData::batch(const std::string &name, int64_t step,
                         int64_t B) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end())
    throw Error(path_ + ": no tensor '" + name + "'");
  if (step < 0 || B < 1)
    throw Error(path_ + ": bad batch request (step " + std::to_string(step) +
                ", B " + std::to_string(B) + ")");
  const Stored &all = it->second;
  Shape shape = all.info.shape;
  shape[0] = B;
  Tensor out(shape, all.info.dtype, Device::host);
  size_t rowBytes = all.bytes.size() / static_cast<size_t>(size_);
  const char *from = all.bytes.data();
  char *to = static_cast<char *>(out.rawData());
  for (int64_t j = 0; j < B; ++j)
    std::memcpy(to + j * rowBytes, from + sampleIndex(step, B, j) * rowBytes,
                rowBytes);
  return out;
}

} // namespace rt
} // namespace tessera
