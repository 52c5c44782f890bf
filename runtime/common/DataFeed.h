//===- DataFeed.h - the model's inputs of every step (private) --*- C++ -*-===//
//
// What --data gives the step functions: a token file (nanoGPT's uint16
// stream: the model's first input gets B x T tokens, its second the next
// tokens) or a sample file (.safetensors: one tensor [N, ...] per input,
// by name). Both are checked against the program's inputs before the first
// step. docs/training.md describes the formats.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_COMMON_DATAFEED_H
#define TESSERA_RUNTIME_COMMON_DATAFEED_H

#include "tessera/runtime/Driver.h"
#include "tessera/runtime/Files.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tessera {
namespace rt {

/// Host tensors of one step, by input name.
using Batch = std::map<std::string, Tensor>;

class DataFeed {
public:
  /// `inputs`: the Input specs of this rank's step function; `modelInputs`:
  /// Program::inputs (empty: "idx", "targets"). A path ending in
  /// ".safetensors" is a sample file, anything else a token file. Throws
  /// an Error naming the file and the input when they do not fit: an
  /// unknown or missing input, a dtype or sample shape that differs, too
  /// few tokens, an integer outside its input's bound.
  DataFeed(const std::string &path, const std::vector<ValueSpec> &inputs,
           const std::vector<std::string> &modelInputs);
  /// The inputs of step `step` (this rank's only). Token files: a token
  /// outside its input's bound is an error naming the offset.
  Batch batch(int64_t step) const;
  /// Tokens (token file: B x T) or samples (sample file: B) per step.
  int64_t itemsPerStep() const { return items_; }
  /// Whether the items are samples (a sample file), not tokens.
  bool countsSamples() const { return samples_ != nullptr; }

private:
  std::vector<ValueSpec> inputs_;
  std::unique_ptr<TokenData> tokens_;
  /// Token files: 0 (tokens) or 1 (next tokens) per input of inputs_.
  std::vector<int> shift_;
  std::unique_ptr<SampleData> samples_;
  int64_t B_ = 0, T_ = 0, items_ = 0;
};

} // namespace rt
} // namespace tessera

#endif // TESSERA_RUNTIME_COMMON_DATAFEED_H
