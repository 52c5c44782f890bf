//===- DataFeed.cpp - the model's inputs of every step --------------------===//

#include "DataFeed.h"

#include <algorithm>

namespace tessera {
namespace rt {

namespace {

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string joined(const std::vector<std::string> &names) {
  std::string s;
  for (const std::string &n : names)
    s += (s.empty() ? "'" : ", '") + n + "'";
  return s;
}

std::string specText(const ValueSpec &spec) {
  return std::string(dtypeName(spec.dtype)) + " " + shapeToString(spec.shape);
}

/// "scalars" or "16x16".
std::string samplesOf(const Shape &sample) {
  return sample.empty() ? "scalars" : shapeToString(sample);
}

bool isInteger(DType d) { return d == DType::i32 || d == DType::i64; }

/// Whether a file tensor of dtype `file` can feed an input of dtype `input`
/// (converted by the driver): integers to integers, floats to floats.
bool compatible(DType file, DType input) {
  return file == input || (isFloat(file) && isFloat(input)) ||
         (isInteger(file) && isInteger(input));
}

} // namespace

DataFeed::DataFeed(const std::string &path,
                   const std::vector<ValueSpec> &inputs,
                   const std::vector<std::string> &modelInputs)
    : inputs_(inputs) {
  std::vector<std::string> model = modelInputs;
  if (model.empty())
    model = {"idx", "targets"};
  for (const ValueSpec &spec : inputs_)
    if (std::find(model.begin(), model.end(), spec.name) == model.end())
      throw Error("the program asks for an unknown input '" + spec.name +
                  "' (the model's inputs: " + joined(model) + ")");
  if (inputs_.empty())
    return;
  for (const ValueSpec &spec : inputs_)
    if (spec.shape.empty())
      throw Error("input '" + spec.name +
                  "' is a scalar; data inputs have the batch as their first "
                  "dimension");
  B_ = inputs_.front().shape[0];

  if (endsWith(path, ".safetensors")) {
    samples_ = std::make_unique<SampleData>(path);
    std::vector<std::string> missing;
    for (const std::string &name : model)
      if (!samples_->find(name))
        missing.push_back(name);
    if (!missing.empty())
      throw Error(path + ": the sample file has no tensor for input" +
                  (missing.size() > 1 ? "s " : " ") + joined(missing) +
                  " (it holds " + joined(samples_->names()) +
                  "; one tensor [N, ...] per input of the model)");
    for (const ValueSpec &spec : inputs_) {
      const SampleData::Info &all = *samples_->find(spec.name);
      Shape sample(spec.shape.begin() + 1, spec.shape.end());
      Shape fileSample(all.shape.begin() + 1, all.shape.end());
      if (sample != fileSample)
        throw Error(path + ": input '" + spec.name + "' takes " +
                    specText(spec) + " (" + std::to_string(spec.shape[0]) +
                    " samples, " + samplesOf(sample) +
                    "), but the file's tensor is " + shapeToString(all.shape) +
                    " (samples: " + samplesOf(fileSample) + ")");
      if (!compatible(all.dtype, spec.dtype))
        throw Error(path + ": input '" + spec.name + "' takes " +
                    dtypeName(spec.dtype) + ", but the file's tensor is " +
                    dtypeName(all.dtype));
      if (spec.bound > 0 && isInteger(all.dtype)) {
        // Every sample now, so that a bad label fails before training.
        int64_t numel = 1;
        for (int64_t d : all.shape)
          numel *= d;
        int64_t perSample = numel / samples_->size();
        for (int64_t i = 0; i < numel; ++i) {
          int64_t v = samples_->intAt(spec.name, i);
          if (v >= 0 && v < spec.bound)
            continue;
          throw Error(path + ": input '" + spec.name + "', sample " +
                      std::to_string(i / perSample) + ", element " +
                      std::to_string(i % perSample) + ": " + std::to_string(v) +
                      " is outside [0, " + std::to_string(spec.bound) +
                      "), the range the model accepts");
        }
      }
    }
    items_ = B_;
    return;
  }

  // A token file: the model's first input takes the tokens, its second
  // the next tokens, both [B, T] integers.
  if (model.size() > 2)
    throw Error(path +
                ": a token file feeds a model's token ids and next "
                "tokens, but this model has " +
                std::to_string(model.size()) + " inputs (" + joined(model) +
                "): give a .safetensors sample file with one tensor per "
                "input (docs/training.md)");
  for (const ValueSpec &spec : inputs_) {
    if (!isInteger(spec.dtype) || spec.shape.size() != 2)
      throw Error(path +
                  ": a token file feeds [B, T] integer inputs, but "
                  "input '" +
                  spec.name + "' is " + specText(spec) +
                  ": give a .safetensors sample file with one tensor per "
                  "input (docs/training.md)");
    if (spec.shape != inputs_.front().shape)
      throw Error(path + ": inputs '" + inputs_.front().name + "' (" +
                  specText(inputs_.front()) + ") and '" + spec.name + "' (" +
                  specText(spec) +
                  ") differ in shape; a token file gives both B x T");
    shift_.push_back(static_cast<int>(
        std::find(model.begin(), model.end(), spec.name) - model.begin()));
  }
  T_ = inputs_.front().shape[1];
  tokens_ = std::make_unique<TokenData>(path);
  tokens_->batch(0, B_, T_); // fail now if the file is too short
  items_ = B_ * T_;
}

Batch DataFeed::batch(int64_t step) const {
  Batch out;
  if (samples_) {
    for (const ValueSpec &spec : inputs_)
      out[spec.name] = samples_->batch(spec.name, step, B_);
    return out;
  }
  if (!tokens_)
    return out;
  std::pair<Tensor, Tensor> pair = tokens_->batch(step, B_, T_);
  for (size_t k = 0; k < inputs_.size(); ++k) {
    const ValueSpec &spec = inputs_[k];
    const Tensor &values = shift_[k] ? pair.second : pair.first;
    out[spec.name] = values;
    if (spec.bound <= 0)
      continue;
    const int64_t *v = values.data<int64_t>();
    for (int64_t i = 0, n = values.numel(); i < n; ++i) {
      if (v[i] >= 0 && v[i] < spec.bound)
        continue;
      int64_t row = i / T_, pos = i % T_;
      int64_t offset = tokens_->offset(step, B_, T_, row) + pos + shift_[k];
      throw Error(
          tokens_->path() + ": token " + std::to_string(v[i]) + " at offset " +
          std::to_string(offset) + " (step " + std::to_string(step) + ", row " +
          std::to_string(row) + ", position " + std::to_string(pos) +
          " of input '" + spec.name + "') is outside [0, " +
          std::to_string(spec.bound) + "), the range the model accepts");
    }
  }
  return out;
}

} // namespace rt
} // namespace tessera
