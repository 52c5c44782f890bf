//===- ImportONNX.cpp - ONNX model -> tsr ---------------------------------===//
//
// Builds one `func.func @forward` of tsr ops from the protobuf-free model the
// loader returns. Values known at import time (Constant nodes, integer
// initializers, everything computed only from them, and Shape of any value,
// whose shape is static) are evaluated by the constant folder, or else by
// the folders of the ops their rule builds (foldBuiltOps), and only
// materialised as `tsr.constant` where a run-time op consumes them, so no
// integer shape arithmetic reaches tsr.
//
// Every op gets the location NameLoc(<node name>, FileLineColLoc(<file>, 0,
// 0)), so that later passes name the ONNX node in their diagnostics. The
// importer's own errors read "node '<name>' (op <type>): <what>".
//
//===----------------------------------------------------------------------===//

#include "tessera/Target/ONNX/ImportONNX.h"
#include "tessera/Target/ONNX/ImportRules.h"

#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Target/ONNX/ConstantFolder.h"
#include "tessera/Target/ONNX/OnnxModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

#include <cmath>
#include <optional>
#include <unordered_map>

using namespace mlir;

namespace tessera::onnx_import {

std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

int64_t product(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n))
      return INT64_MAX;
  return n;
}

//===----------------------------------------------------------------------===//
// Rules
//===----------------------------------------------------------------------===//

namespace {
std::string ruleKey(StringRef domain, StringRef opType) {
  return (domain + "::" + opType).str();
}
} // namespace

void ImportRuleRegistry::add(StringRef opType, ImportRule rule,
                             int64_t sinceVersion, StringRef domain) {
  std::vector<Versioned> &versions = rules_[ruleKey(domain, opType)];
  auto it = llvm::find_if(
      versions, [&](const Versioned &v) { return v.since >= sinceVersion; });
  if (it != versions.end() && it->since == sinceVersion)
    it->rule = std::move(rule);
  else
    versions.insert(it, Versioned{sinceVersion, std::move(rule)});
}

const ImportRule *ImportRuleRegistry::lookup(StringRef domain, StringRef opType,
                                             int64_t opset) const {
  auto it = rules_.find(ruleKey(domain, opType));
  if (it == rules_.end())
    return nullptr;
  const ImportRule *best = nullptr;
  for (const Versioned &v : it->second)
    if (v.since <= opset)
      best = &v.rule;
  return best;
}

bool ImportRuleRegistry::has(StringRef domain, StringRef opType) const {
  return rules_.count(ruleKey(domain, opType)) != 0;
}

ImportRuleRegistry &importRules() {
  static ImportRuleRegistry *rules = [] {
    auto *r = new ImportRuleRegistry;
    registerConstantImportRules(*r);
    registerElementwiseImportRules(*r);
    registerContractionImportRules(*r);
    registerShapeImportRules(*r);
    registerTrainingImportRules(*r);
    registerVisionImportRules(*r);
    registerActivationImportRules(*r);
    return r;
  }();
  return *rules;
}

//===----------------------------------------------------------------------===//
// Module
//===----------------------------------------------------------------------===//

OwningOpRef<ModuleOp> ImportContext::run() {
  ctx->loadDialect<tsr::TsrDialect, func::FuncDialect>();
  opset = model.opsetVersion("");
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  (*module)->setAttr(Tsr::SourceAttrHelper::getNameStr(),
                     b.getStringAttr(llvm::sys::path::filename(model.path)));

  // Arguments: initializers in file order (tsr.param), then the graph
  // inputs that are not initializers (tsr.input).
  SmallVector<Type> argTypes;
  SmallVector<std::pair<StringRef, std::string>> argAttrs;
  SmallVector<std::string> argNames;
  if (failed(decideParameters()))
    return nullptr;
  for (const Tensor &t : model.initializers) {
    initializers[t.name] = &t;
    Type elem = elementType(t.dtype);
    // Integer initializers also serve as import-time constants (torch
    // exports shape constants as initializers when it folds constants),
    // and so do the float ones that are not trained (buffers, masks).
    // An initializer tsr cannot hold is only usable at import time.
    if (!elem || !parameters.count(t.name))
      constants[t.name] = t;
    if (!elem || !parameters.count(t.name))
      continue;
    argTypes.push_back(tensorOf(t.shape, elem));
    argAttrs.push_back({Tsr::ParamAttrHelper::getNameStr(), t.name});
    argNames.push_back(t.name);
  }
  for (const ValueInfo &vi : model.inputs) {
    if (initializers.count(vi.name))
      continue;
    const ValueType &vt = vi.type;
    if (!vt.isTensor)
      return emitError(fileLoc)
                 << "graph input '" << vi.name << "' is not a tensor",
             nullptr;
    if (!vt.isStatic())
      return emitError(fileLoc)
                 << "graph input '" << vi.name << "' has the dynamic type "
                 << vt.str()
                 << "; Tessera needs static shapes (export with fixed sizes)",
             nullptr;
    Type elem = elementType(vt.dtype);
    if (!elem)
      return emitError(fileLoc)
                 << "graph input '" << vi.name
                 << "' has unsupported element type " << dtypeName(vt.dtype),
             nullptr;
    if (llvm::is_contained(vt.shape, 0))
      return emitError(fileLoc)
                 << "graph input '" << vi.name << "' is an empty tensor ("
                 << vt.str() << "); empty tensors are not supported",
             nullptr;
    argTypes.push_back(tensorOf(vt.shape, elem));
    argAttrs.push_back({Tsr::InputAttrHelper::getNameStr(), vi.name});
    argNames.push_back(vi.name);
  }

  auto func = func::FuncOp::create(b, fileLoc, "forward",
                                   b.getFunctionType(argTypes, {}));
  module->push_back(func);
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  for (auto [i, name] : llvm::enumerate(argNames)) {
    // Diagnostics about an argument then name the parameter or input.
    entry->getArgument(i).setLoc(NameLoc::get(b.getStringAttr(name), fileLoc));
    values[name] = entry->getArgument(i);
  }

  if (failed(checkSupported()))
    return nullptr;
  for (size_t i = 0; i < model.nodes.size(); ++i)
    if (failed(importNode(i)))
      return nullptr;
  node = nullptr;
  loc = fileLoc;

  // Results: the graph outputs in order.
  SmallVector<Value> results;
  for (const ValueInfo &vi : model.outputs) {
    FailureOr<Value> v = valueOf(vi.name);
    if (failed(v))
      return nullptr;
    results.push_back(*v);
  }
  func::ReturnOp::create(b, fileLoc, results);
  // Constants that only fed ops folded at import time.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*entry)))
    if (op.hasTrait<OpTrait::ConstantLike>() && op.use_empty())
      op.erase();
  func.setFunctionType(
      b.getFunctionType(argTypes, ValueRange(results).getTypes()));
  SmallVector<mlir::Attribute> inputNames;
  for (auto [i, attr] : llvm::enumerate(argAttrs)) {
    func.setArgAttr(i, attr.first, b.getStringAttr(attr.second));
    if (attr.first == Tsr::InputAttrHelper::getNameStr())
      inputNames.push_back(b.getStringAttr(attr.second));
  }
  (*module)->setAttr(Tsr::InputsAttrHelper::getNameStr(),
                     b.getArrayAttr(inputNames));
  if (failed(recordStateDict(*module)))
    return nullptr;

  // The loss: named by the option, else the only rank-0 float output.
  std::optional<size_t> loss;
  auto isScalarFloat = [&](size_t i) {
    auto t = typeOf(results[i]);
    return t.getRank() == 0 && isa<FloatType>(t.getElementType());
  };
  if (!options.lossOutput.empty()) {
    for (size_t i = 0; i < model.outputs.size(); ++i)
      if (model.outputs[i].name == options.lossOutput)
        loss = i;
    if (!loss)
      return emitError(fileLoc) << "--loss-output: the model has no output '"
                                << options.lossOutput << "'",
             nullptr;
    if (!isScalarFloat(*loss))
      return emitError(fileLoc)
                 << "--loss-output: output '" << options.lossOutput
                 << "' has type " << results[*loss].getType()
                 << "; a loss is a rank-0 floating-point tensor",
             nullptr;
  } else {
    SmallVector<size_t> candidates;
    for (size_t i = 0; i < results.size(); ++i)
      if (isScalarFloat(i))
        candidates.push_back(i);
    if (candidates.size() == 1) {
      loss = candidates[0];
    } else if (!options.allowNoLoss) {
      InFlightDiagnostic d = emitError(fileLoc);
      if (candidates.empty())
        d << "no loss output: no graph output is a rank-0 floating-point "
             "tensor";
      else
        d << "ambiguous loss: " << candidates.size()
          << " graph outputs are rank-0 floating-point tensors";
      d << " (name it with --loss-output NAME, or pass --allow-no-loss)";
      return nullptr;
    }
  }
  for (size_t i = 0; i < model.outputs.size(); ++i) {
    func.setResultAttr(i, Tsr::OutputAttrHelper::getNameStr(),
                       b.getStringAttr(model.outputs[i].name));
    if (loss && *loss == i)
      func.setResultAttr(i, Tsr::LossAttrHelper::getNameStr(), b.getUnitAttr());
  }

  if (failed(withNodeErrors("the imported module does not verify",
                            [&] { return mlir::verify(*module); })))
    return nullptr;

  if (!options.weightsOut.empty()) {
    std::vector<const Tensor *> all;
    for (const Tensor &t : model.initializers)
      all.push_back(&t);
    std::string error;
    if (!writeSafetensors(options.weightsOut, all, error))
      return emitError(fileLoc) << "--weights-out: " << error, nullptr;
  }
  return module;
}

LogicalResult ImportContext::checkSupported() {
  struct Missing {
    size_t count = 0;
    size_t first = 0;
  };
  // In order of first appearance.
  SmallVector<std::string> order;
  llvm::StringMap<Missing> missing;
  for (auto [i, n] : llvm::enumerate(model.nodes)) {
    if (rules.has(n.domain, n.opType) ||
        (n.domain.empty() && canFoldOpType(n.opType)))
      continue;
    std::string key = n.domain.empty() ? n.opType : n.domain + "." + n.opType;
    auto [it, inserted] = missing.try_emplace(key);
    if (inserted) {
      it->second.first = i;
      order.push_back(key);
    }
    ++it->second.count;
  }
  if (order.empty())
    return success();
  size_t nodes = 0;
  for (const std::string &key : order)
    nodes += missing[key].count;
  InFlightDiagnostic d = emitError(fileLoc);
  d << "unsupported ONNX operator" << (order.size() > 1 ? "s" : "") << " in "
    << nodes << " node" << (nodes > 1 ? "s" : "") << ": ";
  for (auto [k, key] : llvm::enumerate(order)) {
    const Missing &m = missing[key];
    const Node &n = model.nodes[m.first];
    d << (k ? ", " : "") << key << " (" << m.count << " node"
      << (m.count > 1 ? "s" : "") << ", first '"
      << (n.name.empty() ? n.opType + "#" + std::to_string(m.first) : n.name)
      << "')";
  }
  return failure();
}

LogicalResult ImportContext::importNode(size_t index) {
  node = &model.nodes[index];
  nodeIndex = index;
  // torch names every node; other producers may not. A synthesized name
  // keeps diagnostics and locations pointing at one node.
  nodeName = node->name.empty() ? node->opType + "#" + std::to_string(index)
                                : node->name;
  loc = NameLoc::get(b.getStringAttr(nodeName), fileLoc);
  opset = model.opsetVersion(node->domain);
  const ImportRule *rule = rules.lookup(node->domain, node->opType, opset);
  // A Constant node is its own value; every other node whose inputs are all
  // known at import time is evaluated here rather than imported.
  if (node->opType != "Constant" || !node->domain.empty()) {
    bool folded = false;
    if (failed(tryFold(folded)))
      return failure();
    if (folded)
      return success();
  }
  if (rule) {
    Block *block = b.getInsertionBlock();
    Operation *last = block->empty() ? nullptr : &block->back();
    if (failed((*rule)(*this)))
      return failure();
    return inputsAllConstant() ? foldBuiltOps(block, last) : success();
  }
  if (node->domain.empty() &&
      (node->opType == "Shape" || node->opType == "Size"))
    return err() << "the input's shape is not static";
  if (rules.has(node->domain, node->opType))
    return err() << "no import rule for opset " << opset
                 << " (the rules of this operator start at a later opset)";
  if (node->domain.empty() && canFoldOpType(node->opType))
    return err() << "evaluated only at import time, but an input is "
                    "computed at run time";
  return err() << "unsupported ONNX operator";
}

LogicalResult ImportContext::tryFold(bool &folded) {
  folded = false;
  const std::string &op = node->opType;
  std::vector<const Tensor *> ins;
  // Shape and Size need only the (static) shape of their input.
  Tensor shapeOnly;
  if (op == "Shape" || op == "Size") {
    if (!hasInput(0))
      return success();
    if (const Tensor *t = constInput(0)) {
      ins.push_back(t);
    } else {
      auto it = values.find(node->inputs[0]);
      if (it == values.end())
        return success();
      shapeOnly.shape.assign(typeOf(it->second).getShape().begin(),
                             typeOf(it->second).getShape().end());
      ins.push_back(&shapeOnly);
    }
  } else {
    for (size_t i = 0; i < node->inputs.size(); ++i) {
      if (!hasInput(i)) {
        ins.push_back(nullptr);
        continue;
      }
      auto it = constants.find(node->inputs[i]);
      if (it == constants.end())
        return success(); // a run-time input: emit IR
      ins.push_back(&it->second);
    }
  }
  std::vector<Tensor> outs;
  std::string error;
  switch (foldNode(*node, opset, ins, outs, error)) {
  case FoldStatus::NotFoldable:
    return success();
  case FoldStatus::Error:
    return err() << error;
  case FoldStatus::Folded:
    break;
  }
  for (size_t i = 0; i < outs.size() && i < node->outputs.size(); ++i)
    if (failed(setConstOutput(i, std::move(outs[i]))))
      return failure();
  folded = true;
  return success();
}

bool ImportContext::inputsAllConstant() {
  bool any = false;
  for (size_t i = 0; i < node->inputs.size(); ++i) {
    if (!hasInput(i))
      continue;
    any = true;
    const std::string &name = node->inputs[i];
    auto it = values.find(name);
    if (it != values.end() ? !matchPattern(it->second, m_Constant())
                           : !knownTensor(name))
      return false;
  }
  return any;
}

namespace {
/// The tensor a constant attribute holds, if its element type is one the
/// importer maps (elementType's inverse).
std::optional<Tensor> tensorFromAttr(DenseElementsAttr attr) {
  Type elem = attr.getElementType();
  DType dtype = elem.isF32()         ? DType::Float
                : elem.isF16()       ? DType::Float16
                : elem.isBF16()      ? DType::BFloat16
                : elem.isInteger(64) ? DType::Int64
                : elem.isInteger(32) ? DType::Int32
                : elem.isInteger(1)  ? DType::Bool
                                     : DType::Undefined;
  if (dtype == DType::Undefined)
    return std::nullopt;
  auto type = cast<ShapedType>(attr.getType());
  Tensor t = Tensor::zeros(dtype, std::vector<int64_t>(type.getShape()));
  int64_t n = t.numElements();
  if (dtype == DType::Bool) {
    // getValues repeats a splat's value for every element.
    for (auto [i, v] : llvm::enumerate(attr.getValues<bool>()))
      t.setInt(static_cast<int64_t>(i), v);
    return t;
  }
  ArrayRef<char> raw = attr.getRawData();
  size_t es = dtypeSize(dtype);
  for (int64_t i = 0; i < n; ++i)
    std::copy_n(raw.data() + (attr.isSplat() ? 0 : i * es), es,
                t.data.data() + i * es);
  return t;
}
} // namespace

LogicalResult ImportContext::foldBuiltOps(Block *block, Operation *last) {
  // The ops the rule built, in order: an op whose operands are all
  // constants (its inputs, or ops folded before it) folds through its own
  // folder, and the dialect materialises the result.
  auto begin = last ? std::next(Block::iterator(last)) : block->begin();
  for (Operation &op :
       llvm::make_early_inc_range(llvm::make_range(begin, block->end()))) {
    if (op.hasTrait<OpTrait::ConstantLike>() || op.getNumResults() != 1 ||
        !op.getDialect())
      continue;
    SmallVector<mlir::Attribute> operands;
    for (Value v : op.getOperands()) {
      mlir::Attribute a;
      if (!matchPattern(v, m_Constant(&a)))
        break;
      operands.push_back(a);
    }
    SmallVector<OpFoldResult> folded;
    if (operands.size() != op.getNumOperands() ||
        failed(op.fold(operands, folded)) || folded.size() != 1)
      continue;
    Value result = op.getResult(0);
    Value repl = dyn_cast<Value>(folded[0]);
    if (!repl) {
      b.setInsertionPoint(&op);
      Operation *c = op.getDialect()->materializeConstant(
          b, cast<mlir::Attribute>(folded[0]), result.getType(), op.getLoc());
      if (!c)
        continue;
      repl = c->getResult(0);
    }
    result.replaceAllUsesWith(repl);
    // The node's outputs are the only names that can refer to it.
    for (const std::string &name : node->outputs) {
      auto it = values.find(name);
      if (it != values.end() && it->second == result)
        it->second = repl;
    }
    op.erase();
  }
  b.setInsertionPointToEnd(block);

  // Outputs that folded become import-time constants, which later nodes
  // read as tensors (shapes, axes) and which materialise where used.
  for (size_t i = 0; i < node->outputs.size(); ++i) {
    if (!hasOutput(i))
      continue;
    auto it = values.find(node->outputs[i]);
    if (it == values.end())
      continue;
    DenseElementsAttr attr;
    if (!matchPattern(it->second, m_Constant(&attr)))
      continue;
    std::optional<Tensor> t = tensorFromAttr(attr);
    if (!t)
      continue;
    values.erase(it);
    if (failed(setConstOutput(i, std::move(*t))))
      return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

OwningOpRef<ModuleOp> importONNX(StringRef bytes, StringRef path,
                                 MLIRContext *context,
                                 const ImportOptions &options) {
  Model model;
  LoadOptions load;
  load.check = options.check;
  load.inferShapes = options.check;
  std::string error;
  Location fileLoc = FileLineColLoc::get(context, path, 0, 0);
  if (!loadModel(bytes.data(), bytes.size(), path.str(), load, model, error))
    return emitError(fileLoc) << error, nullptr;
  ImportContext importer(model, context, options, importRules());
  return importer.run();
}

void registerImportONNXTranslation() {
  static llvm::cl::opt<std::string> lossOutput(
      "loss-output",
      llvm::cl::desc("import-onnx: the graph output to mark tsr.loss "
                     "(default: the only rank-0 float output)"),
      llvm::cl::value_desc("name"), llvm::cl::init(""));
  static llvm::cl::opt<bool> allowNoLoss(
      "allow-no-loss",
      llvm::cl::desc("import-onnx: accept a model without a loss output"),
      llvm::cl::init(false));
  static llvm::cl::opt<std::string> weightsOut(
      "weights-out",
      llvm::cl::desc("import-onnx: write the initializers to this "
                     "safetensors file"),
      llvm::cl::value_desc("file"), llvm::cl::init(""));

  // Which initializers are trained (Parameters.cpp).
  static llvm::cl::opt<std::string> freeze(
      "freeze",
      llvm::cl::desc("import-onnx: keep the float initializers whose names "
                     "match this regular expression constant"),
      llvm::cl::value_desc("regex"), llvm::cl::init(""));
  static llvm::cl::opt<std::string> train(
      "train",
      llvm::cl::desc("import-onnx: train the float initializers whose names "
                     "match this regular expression"),
      llvm::cl::value_desc("regex"), llvm::cl::init(""));

  // For models newer than the installed ONNX library (whose checker and
  // shape inference reject opsets it does not know, e.g. Gelu in opset 20):
  // the importer computes every type itself and checks ONNX's only where
  // shape inference ran.
  static llvm::cl::opt<bool> noCheck(
      "onnx-no-check",
      llvm::cl::desc("import-onnx: skip the ONNX checker and shape inference"),
      llvm::cl::init(false), llvm::cl::Hidden);

  TranslateToMLIRRegistration registration(
      "import-onnx", "import an ONNX model (.onnx) into tsr",
      [](const std::shared_ptr<llvm::SourceMgr> &sourceMgr,
         MLIRContext *context) -> OwningOpRef<Operation *> {
        const llvm::MemoryBuffer *buffer =
            sourceMgr->getMemoryBuffer(sourceMgr->getMainFileID());
        ImportOptions options;
        options.lossOutput = lossOutput;
        options.allowNoLoss = allowNoLoss;
        options.weightsOut = weightsOut;
        options.check = !noCheck;
        options.freeze = freeze;
        options.train = train;
        // Which initializers are constants, as a remark on the model.
        options.report = [context, buffer](const std::string &line,
                                           bool allTrained) {
          if (!allTrained)
            emitRemark(FileLineColLoc::get(context,
                                           buffer->getBufferIdentifier(), 0, 0))
                << line;
        };
        OwningOpRef<ModuleOp> module =
            importONNX(buffer->getBuffer(), buffer->getBufferIdentifier(),
                       context, options);
        if (!module)
          return nullptr;
        return OwningOpRef<Operation *>(module.release());
      },
      [](DialectRegistry &registry) {
        registry.insert<tsr::TsrDialect, func::FuncDialect>();
      });
}

} // namespace tessera::onnx_import
