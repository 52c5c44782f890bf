//===- Parameters.cpp - which initializers are trained --------------------===//
//
// An ONNX model holds its parameters and its buffers (causal masks, rotary
// tables, running statistics) alike, as initializers. Training a buffer is
// a silent error (weight decay and updates change it), so the importer
// decides which float initializers are parameters:
//   1. the model's parameter list, metadata "tessera.parameters" (a JSON
//      array of names; examples/*/export.py write it from
//      named_parameters()), when present;
//   2. else the graph: an initializer whose every use, through ops that only
//      move or convert values, is a comparison, a logical op or the
//      condition of a Where (a mask) has no gradient and is a constant;
//      every other float initializer is trained;
//   3. then --freeze REGEX makes matching initializers constants and
//      --train REGEX makes them parameters.
// Constants become tsr.constant values (folded at import where they can
// be); parameters become the function's tsr.param arguments.
//
//===----------------------------------------------------------------------===//

#include "tessera/Target/ONNX/ImportRules.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Regex.h"

#include <set>

using namespace mlir;

namespace tessera::onnx_import {

namespace {

/// Ops through which a value keeps being "the same tensor" (views, copies,
/// conversions): the mask test follows them.
bool movesValue(StringRef op) {
  return llvm::is_contained({"Slice", "Reshape", "Unsqueeze", "Squeeze", "Cast",
                             "Expand", "Transpose", "Identity", "Flatten"},
                            op);
}

/// Ops whose result carries no gradient to their inputs.
bool comparesValue(StringRef op) {
  return llvm::is_contained({"Equal", "Less", "Greater", "LessOrEqual",
                             "GreaterOrEqual", "Not", "And", "Or", "Xor"},
                            op);
}

/// True if every use of `name` (through value-moving ops) is a comparison,
/// a logical op, a Where condition or a BatchNormalization's running
/// statistic, and there is at least one use.
bool onlyMasks(const Model &model,
               const std::multimap<std::string, size_t> &users,
               const std::string &name) {
  std::vector<std::string> work{name};
  std::set<std::string> seen{name};
  bool used = false;
  while (!work.empty()) {
    std::string value = work.back();
    work.pop_back();
    auto [begin, end] = users.equal_range(value);
    for (auto it = begin; it != end; ++it) {
      const Node &n = model.nodes[it->second];
      used = true;
      if (comparesValue(n.opType))
        continue;
      if (n.opType == "BatchNormalization") {
        // The running statistics (inputs 3 and 4) are state the node
        // updates, not weights: training mode normalizes by the batch's.
        for (size_t i = 0; i < n.inputs.size() && i < 3; ++i)
          if (n.inputs[i] == value)
            return false;
        continue;
      }
      if (n.opType == "Where") {
        // Only as the condition: as a branch it is a value that flows on.
        for (size_t i = 1; i < n.inputs.size(); ++i)
          if (n.inputs[i] == value)
            return false;
        continue;
      }
      // Shape-like uses: a Slice's bounds, a Reshape's shape are not data.
      if (movesValue(n.opType) && !n.inputs.empty() && n.inputs[0] == value) {
        for (const std::string &out : n.outputs)
          if (!out.empty() && seen.insert(out).second)
            work.push_back(out);
        continue;
      }
      return false;
    }
  }
  return used;
}

} // namespace

LogicalResult ImportContext::decideParameters() {
  std::vector<const Tensor *> floats;
  for (const Tensor &t : model.initializers)
    if (isFloatDType(t.dtype) && elementType(t.dtype))
      floats.push_back(&t);

  // 1. The model's list.
  std::optional<std::set<std::string>> listed;
  auto meta = model.metadata.find("tessera.parameters");
  if (meta != model.metadata.end()) {
    llvm::Expected<llvm::json::Value> json = llvm::json::parse(meta->second);
    const llvm::json::Array *names = json ? json->getAsArray() : nullptr;
    if (!json)
      llvm::consumeError(json.takeError());
    if (!names)
      return emitError(fileLoc) << "metadata 'tessera.parameters' must be a "
                                   "JSON array of initializer names";
    listed.emplace();
    for (const llvm::json::Value &v : *names) {
      std::optional<StringRef> s = v.getAsString();
      if (!s)
        return emitError(fileLoc) << "metadata 'tessera.parameters' must be "
                                     "a JSON array of initializer names";
      listed->insert(s->str());
    }
  }

  // 2. Else the graph.
  std::multimap<std::string, size_t> users;
  if (!listed)
    for (auto [i, n] : llvm::enumerate(model.nodes))
      for (const std::string &in : n.inputs)
        if (!in.empty())
          users.emplace(in, i);

  // 3. The user's overrides.
  auto compile = [&](StringRef flag, const std::string &pattern,
                     std::optional<llvm::Regex> &regex) -> LogicalResult {
    if (pattern.empty())
      return success();
    regex.emplace(("^(" + pattern + ")$"));
    std::string why;
    if (!regex->isValid(why))
      return emitError(fileLoc) << "--" << flag << " '" << pattern
                                << "' is not a regular expression: " << why;
    if (llvm::none_of(floats,
                      [&](const Tensor *t) { return regex->match(t->name); }))
      return emitError(fileLoc)
             << "--" << flag << " '" << pattern
             << "' matches no floating-point initializer of the model";
    return success();
  };
  std::optional<llvm::Regex> freeze, train;
  if (failed(compile("freeze", options.freeze, freeze)) ||
      failed(compile("train", options.train, train)))
    return failure();

  SmallVector<std::string> masks, buffers, frozen, trainedByFlag;
  size_t trained = 0;
  for (const Tensor *t : floats) {
    bool f = freeze && freeze->match(t->name);
    bool tr = train && train->match(t->name);
    if (f && tr)
      return emitError(fileLoc) << "initializer '" << t->name
                                << "' matches both --freeze and --train";
    bool param =
        listed ? listed->count(t->name) > 0 : !onlyMasks(model, users, t->name);
    if (f && param)
      frozen.push_back(t->name);
    else if (tr && !param)
      trainedByFlag.push_back(t->name);
    else if (!param)
      (listed ? buffers : masks).push_back(t->name);
    if ((param || tr) && !f) {
      ++trained;
      parameters.insert(t->name);
    }
  }

  if (!options.report)
    return success();
  auto list = [](ArrayRef<std::string> names) {
    return llvm::join(names.begin(), names.end(), ", ");
  };
  std::string line;
  if (listed)
    line = "the model lists its parameters: ";
  else
    line = "the model does not list its parameters (metadata "
           "'tessera.parameters', which examples/*/export.py write): ";
  line += std::to_string(trained) + " of " + std::to_string(floats.size()) +
          " floating-point initializers are trained";
  if (!buffers.empty())
    line += "; constants (buffers, not in the list): " + list(buffers);
  if (!masks.empty())
    line += "; constants (only compared, used as a Where condition or as "
            "batch norm's running statistics): " +
            list(masks);
  if (!frozen.empty())
    line += "; constants by --freeze: " + list(frozen);
  if (!trainedByFlag.empty())
    line += "; trained by --train: " + list(trainedByFlag);
  if (!listed)
    line += " (--freeze REGEX / --train REGEX override)";
  bool allTrained = buffers.empty() && masks.empty() && frozen.empty() &&
                    trainedByFlag.empty();
  if (listed && allTrained)
    return success(); // nothing to say: every initializer is a parameter
  options.report(line, allTrained);
  return success();
}

LogicalResult ImportContext::recordStateDict(ModuleOp module) {
  auto meta = model.metadata.find("tessera.state_dict");
  if (meta == model.metadata.end())
    return success();
  auto bad = [&](const Twine &why) {
    return emitError(fileLoc)
           << "metadata 'tessera.state_dict' must be a JSON array of [name, "
              "initializer] pairs: "
           << why;
  };
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(meta->second);
  if (!json) {
    std::string why = llvm::toString(json.takeError());
    return bad(why);
  }
  const llvm::json::Array *pairs = json->getAsArray();
  if (!pairs)
    return bad("not an array");
  std::set<std::string> initializerNames, seen;
  for (const Tensor &t : model.initializers)
    initializerNames.insert(t.name);
  SmallVector<mlir::Attribute> entries;
  for (const llvm::json::Value &v : *pairs) {
    const llvm::json::Array *pair = v.getAsArray();
    std::optional<StringRef> name, source;
    if (pair && pair->size() == 2) {
      name = (*pair)[0].getAsString();
      source = (*pair)[1].getAsString();
    }
    if (!name || !source)
      return bad("an entry is not a pair of strings");
    if (!seen.insert(name->str()).second)
      return bad("'" + *name + "' is listed twice");
    if (!initializerNames.count(source->str()))
      return bad("'" + *name + "' names '" + *source +
                 "', which is not an initializer of the model");
    entries.push_back(b.getStrArrayAttr({*name, *source}));
  }
  module->setAttr(Tsr::StateDictAttrHelper::getNameStr(),
                  b.getArrayAttr(entries));
  return success();
}

} // namespace tessera::onnx_import
