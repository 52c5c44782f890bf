//===- Files.h - checkpoints, token data and samples -----------*- C++ -*-===//
//
// Part of the runtime API (see Runtime.h, the umbrella header).
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_FILES_H
#define TESSERA_RUNTIME_FILES_H

#include "tessera/runtime/Tensor.h"

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tessera {
namespace rt {

/// safetensors (https://huggingface.co/docs/safetensors): 8-byte LE header
/// length, JSON header, raw LE data. Names are kept exactly, in the order of
/// the header. dtypes F32, F64, I32, I64, BOOL; a truncated or inconsistent
/// file throws an Error naming the file and what is wrong. With `wanted`,
/// only the tensors it accepts are read into memory (the whole header is
/// still checked): a rank loads its own parameters, not the model.
using TensorFilter = std::function<bool(const std::string &name)>;
std::vector<std::pair<std::string, Tensor>>
readSafetensors(const std::string &path, const TensorFilter &wanted = nullptr);
void writeSafetensors(const std::string &path,
                      const std::vector<std::pair<std::string, Tensor>> &named);

/// The same, with the header's "__metadata__" (string to string) and every
/// tensor's entry (a filter that takes no tensor reads the header only).
struct SafetensorsEntry {
  std::string name;
  DType dtype;
  Shape shape;
};
struct SafetensorsContents {
  std::vector<std::pair<std::string, Tensor>> tensors;
  std::map<std::string, std::string> metadata;
  std::vector<SafetensorsEntry> entries; ///< every tensor, in file order
};
SafetensorsContents
readSafetensorsWithMetadata(const std::string &path,
                            const TensorFilter &wanted = nullptr);
void writeSafetensors(const std::string &path,
                      const std::vector<std::pair<std::string, Tensor>> &named,
                      const std::map<std::string, std::string> &metadata);

/// The program's constants file (Program::constants): every tensor of the
/// safetensors file at `path`, kept on defaultDevice() for constant(). A
/// second call replaces the first's table.
void loadConstants(const std::string &path);
/// A copy of the constant called `key` in the loaded constants file, on
/// defaultDevice(). Throws Error naming the key and the file when it is not
/// there (or no file was loaded).
Tensor constant(const std::string &key);

/// Token data as nanoGPT writes it: raw little-endian uint16 ids.
class TokenData {
public:
  /// Throws with the path: a missing or unreadable file, a directory or
  /// anything but a regular file, an odd number of bytes.
  explicit TokenData(const std::string &path);
  int64_t size() const;
  const std::string &path() const { return path_; }
  /// The batch of step `step` (inputs, targets), each B x T i64:
  /// row j starts at ((step*B + j) * T) mod (size - T - 1).
  std::pair<Tensor, Tensor> batch(int64_t step, int64_t B, int64_t T) const;
  /// The token offset where row `row` of step `step`'s inputs starts.
  int64_t offset(int64_t step, int64_t B, int64_t T, int64_t row) const;
  /// Token i (for tests).
  int64_t token(int64_t i) const { return tokens_.at(i); }

private:
  std::string path_;
  std::vector<uint16_t> tokens_;
};

/// Samples of named inputs: a safetensors file holding, for each of the
/// model's data inputs, a tensor [N, sample shape...] under the input's
/// name (images, features, labels, token sequences; F32, F64, I32, I64 or
/// BOOL), every one with the same N. Batches take whole samples in order:
/// row j of step s is sample (s*B + j) mod N. Other tensors in the file
/// are ignored. The file is read whole and kept in plain host buffers, as
/// TokenData keeps its tokens: data is not tensor memory (peakBytes).
class SampleData {
public:
  /// Throws with the path: a missing, unreadable or malformed file, no
  /// tensors, a scalar, or tensors whose first dimensions differ.
  explicit SampleData(const std::string &path);
  const std::string &path() const { return path_; }
  /// N, the number of samples.
  int64_t size() const { return size_; }
  /// What the file holds under `name`: dtype and shape [N, ...].
  struct Info {
    DType dtype;
    Shape shape;
  };
  /// The tensor called `name`, or null.
  const Info *find(const std::string &name) const;
  /// Element i (flat) of integer tensor `name` (for checks).
  int64_t intAt(const std::string &name, int64_t i) const;
  /// The names in the file, in its order.
  const std::vector<std::string> &names() const { return names_; }
  /// Rows (step*B + j) mod N, j < B, of input `name` (host, [B, ...]).
  Tensor batch(const std::string &name, int64_t step, int64_t B) const;
  /// The sample row `row` of step `step` takes.
  int64_t sampleIndex(int64_t step, int64_t B, int64_t row) const;

private:
  std::string path_;
  int64_t size_ = 0;
  std::vector<std::string> names_;
  struct Stored {
    Info info;
    std::vector<char> bytes;
  };
  std::map<std::string, Stored> tensors_;
};

} // namespace rt
} // namespace tessera

#endif // TESSERA_RUNTIME_FILES_H
