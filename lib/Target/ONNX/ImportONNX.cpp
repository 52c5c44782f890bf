//===- ImportONNX.cpp - ONNX model -> tsr ---------------------------------===//
//
// Builds one `func.func @forward` of tsr ops from the protobuf-free model the
// loader returns. Values known at import time (Constant nodes, integer
// initializers, everything computed only from them, and Shape of any value,
// whose shape is static) are evaluated by the constant folder and only
// materialised as `tsr.constant` where a run-time op consumes them, so no
// integer shape arithmetic reaches tsr.
//
// Every op gets the location NameLoc(<node name>, FileLineColLoc(<file>, 0,
// 0)), so that later passes name the ONNX node in their diagnostics. The
// importer's own errors read "node '<name>' (op <type>): <what>".
//
//===----------------------------------------------------------------------===//

#include "tessera/Target/ONNX/ImportONNX.h"

#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Target/ONNX/ConstantFolder.h"
#include "tessera/Target/ONNX/OnnxModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
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
namespace {

std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// The element count, saturated at INT64_MAX (tsr's type constraints reject
/// such shapes when the op is built).
int64_t product(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n))
      return INT64_MAX;
  return n;
}

class Importer {
public:
  Importer(Model &model, MLIRContext *ctx, const ImportOptions &options)
      : model(model), ctx(ctx), options(options), b(ctx),
        fileLoc(FileLineColLoc::get(ctx, model.path, 0, 0)), loc(fileLoc) {}

  OwningOpRef<ModuleOp> run();

private:
  //===--------------------------------------------------------------------===//
  // Diagnostics
  //===--------------------------------------------------------------------===//

  /// An error about the current node; the caller appends what is wrong.
  InFlightDiagnostic err() {
    InFlightDiagnostic d = emitError(loc);
    if (node)
      d << "node '" << nodeName << "' (op " << node->opType << "): ";
    return d;
  }

  /// Runs `fn`, turning the diagnostics it emits (tsr's type inference and
  /// verifiers speak about ops, not ONNX nodes) into one error of ours.
  template <typename Fn> LogicalResult withNodeErrors(StringRef what, Fn fn) {
    std::string message;
    LogicalResult result = success();
    {
      ScopedDiagnosticHandler handler(ctx, [&](Diagnostic &d) {
        if (d.getSeverity() == DiagnosticSeverity::Error && message.empty())
          message = d.str();
        return success();
      });
      result = fn();
    }
    if (failed(result))
      return err() << what << ": " << message;
    return success();
  }

  LogicalResult verifyNew(Operation *op) {
    return withNodeErrors(
        ("cannot build " + op->getName().getStringRef()).str(),
        [&] { return mlir::verify(op, false); });
  }

  //===--------------------------------------------------------------------===//
  // Types, attributes, operands
  //===--------------------------------------------------------------------===//

  /// The MLIR element type of an ONNX dtype; null if tsr has none.
  Type elementType(DType t) {
    switch (t) {
    case DType::Float:
      return b.getF32Type();
    case DType::Float16:
      return b.getF16Type();
    case DType::BFloat16:
      return b.getBF16Type();
    case DType::Int64:
      return b.getI64Type();
    case DType::Int32:
      return b.getI32Type();
    case DType::Bool:
      return b.getI1Type();
    default:
      return {};
    }
  }

  RankedTensorType tensorOf(ArrayRef<int64_t> shape, Type elem) {
    return RankedTensorType::get(shape, elem);
  }

  static RankedTensorType typeOf(Value v) {
    return cast<RankedTensorType>(v.getType());
  }

  bool hasInput(size_t i) const {
    return i < node->inputs.size() && !node->inputs[i].empty();
  }
  bool hasOutput(size_t i) const {
    return i < node->outputs.size() && !node->outputs[i].empty();
  }

  /// The tensor behind an input known at import time (constant, folded or
  /// initializer), or null.
  const Tensor *constInput(size_t i) {
    if (!hasInput(i))
      return nullptr;
    return knownTensor(node->inputs[i]);
  }
  const Tensor *knownTensor(const std::string &name) {
    auto it = constants.find(name);
    if (it != constants.end())
      return &it->second;
    auto init = initializers.find(name);
    return init == initializers.end() ? nullptr : init->second;
  }

  /// An input that must be known at import time (shapes, axes, sizes).
  FailureOr<const Tensor *> requireConst(size_t i, StringRef what) {
    if (const Tensor *t = constInput(i))
      return t;
    return err() << "input '" << node->inputs[i] << "' (" << what
                 << ") must be a constant known at import time";
  }

  FailureOr<std::vector<int64_t>> constInts(size_t i, StringRef what) {
    FailureOr<const Tensor *> t = requireConst(i, what);
    if (failed(t))
      return failure();
    if (!isIntegerDType((*t)->dtype))
      return err() << "input '" << node->inputs[i] << "' (" << what
                   << ") must be an integer tensor";
    return (*t)->toInts();
  }

  /// The SSA value of a named ONNX value, materialising constants.
  FailureOr<Value> valueOf(const std::string &name) {
    auto it = values.find(name);
    if (it != values.end())
      return it->second;
    const Tensor *t = knownTensor(name);
    if (!t)
      return err() << "value '" << name << "' is not defined";
    FailureOr<Value> v = materialize(*t, name);
    if (failed(v))
      return failure();
    values[name] = *v;
    return v;
  }

  FailureOr<Value> input(size_t i) {
    if (!hasInput(i))
      return err() << "input " << i << " is missing";
    return valueOf(node->inputs[i]);
  }

  /// Tessera's kernels, cost model and partitioner assume every tensor
  /// has elements; ONNX allows empty ones.
  LogicalResult checkNotEmpty(ArrayRef<int64_t> shape, StringRef name) {
    if (llvm::is_contained(shape, 0))
      return err() << "'" << name << "' would be an empty tensor (shape "
                   << shapeString(shape)
                   << "); empty tensors are not supported";
    return success();
  }

  /// A tsr.constant holding `t` (splat when all elements are equal).
  FailureOr<Value> materialize(const Tensor &t, StringRef name) {
    if (failed(checkNotEmpty(t.shape, name)))
      return failure();
    Type elem = elementType(t.dtype);
    if (!elem)
      return err() << "value '" << name << "' has unsupported element type "
                   << dtypeName(t.dtype)
                   << " (tsr has f32, f16, bf16, i64, i32 and i1)";
    auto type = tensorOf(t.shape, elem);
    size_t es = dtypeSize(t.dtype);
    int64_t n = t.numElements();
    bool splat = n > 0;
    for (int64_t i = 1; i < n && splat; ++i)
      splat = std::equal(t.data.begin(), t.data.begin() + es,
                         t.data.begin() + i * es);
    DenseElementsAttr attr;
    if (t.dtype == DType::Bool) {
      SmallVector<bool> bits;
      for (int64_t i = 0; i < (splat ? 1 : n); ++i)
        bits.push_back(t.getInt(i) != 0);
      attr = splat ? DenseElementsAttr::get(type, bits[0])
                   : DenseElementsAttr::get(type, bits);
    } else {
      ArrayRef<char> raw(t.data.data(), splat ? es : t.data.size());
      attr = DenseElementsAttr::getFromRawBuffer(type, raw);
    }
    // Located at the node that computed the value, not at its first user.
    auto producer = producers.find(name.str());
    Location at = producer != producers.end() ? producer->second : loc;
    auto op = tsr::ConstantOp::create(b, at, type, cast<ElementsAttr>(attr));
    return op.getResult();
  }

  FailureOr<Value> scalarConstant(double v, Type elem) {
    auto type = tensorOf({}, elem);
    mlir::Attribute a;
    if (auto ft = dyn_cast<FloatType>(elem))
      a = FloatAttr::get(ft, v);
    else
      a = IntegerAttr::get(elem, static_cast<int64_t>(v));
    return tsr::ConstantOp::create(
               b, loc, type,
               cast<ElementsAttr>(DenseElementsAttr::get(type, a)))
        .getResult();
  }

  /// Records output `i` of the current node, checking it against the type
  /// ONNX's shape inference gave it.
  LogicalResult setOutput(size_t i, Value v) {
    if (!hasOutput(i))
      return success();
    const std::string &name = node->outputs[i];
    auto type = typeOf(v);
    if (failed(checkNotEmpty(type.getShape(), name)))
      return failure();
    auto it = model.valueTypes.find(name);
    if (it != model.valueTypes.end() && it->second.isTensor) {
      const ValueType &vt = it->second;
      Type expected = elementType(vt.dtype);
      bool ok = !expected || expected == type.getElementType();
      if (vt.hasShape) {
        ok &= static_cast<int64_t>(vt.shape.size()) == type.getRank();
        for (size_t d = 0; ok && d < vt.shape.size(); ++d)
          ok &= vt.shape[d] < 0 || vt.shape[d] == type.getDimSize(d);
      }
      if (!ok)
        return err() << "the imported result " << type << " of '" << name
                     << "' differs from ONNX's inferred type " << vt.str();
    }
    values[name] = v;
    return success();
  }

  LogicalResult setConstOutput(size_t i, Tensor t) {
    if (!hasOutput(i))
      return success();
    const std::string &name = node->outputs[i];
    auto it = model.valueTypes.find(name);
    if (it != model.valueTypes.end() && it->second.isTensor) {
      const ValueType &vt = it->second;
      bool ok = vt.dtype == DType::Undefined || vt.dtype == t.dtype;
      if (vt.hasShape) {
        ok &= vt.shape.size() == t.shape.size();
        for (size_t d = 0; ok && d < vt.shape.size(); ++d)
          ok &= vt.shape[d] < 0 || vt.shape[d] == t.shape[d];
      }
      if (!ok)
        return err() << "the value computed at import time for '" << name
                     << "' (" << dtypeName(t.dtype) << shapeString(t.shape)
                     << ") differs from ONNX's inferred type " << vt.str();
    }
    t.name = name;
    constants[name] = std::move(t);
    producers.insert_or_assign(name, loc);
    return success();
  }

  /// Rejects attributes the handler does not implement, so that a newer
  /// opset's extra attribute never changes semantics silently.
  LogicalResult checkAttributes(std::initializer_list<StringRef> known) {
    for (const Attribute &a : node->attributes)
      if (llvm::find(known, StringRef(a.name)) == known.end())
        return err() << "unsupported attribute '" << a.name << "'";
    return success();
  }

  int64_t attrInt(const char *name, int64_t dflt) {
    const Attribute *a = node->getAttribute(name);
    return a && a->kind == Attribute::Int ? a->i : dflt;
  }
  double attrFloat(const char *name, double dflt) {
    const Attribute *a = node->getAttribute(name);
    return a && a->kind == Attribute::Float ? a->f : dflt;
  }
  std::string attrString(const char *name, const std::string &dflt) {
    const Attribute *a = node->getAttribute(name);
    return a && a->kind == Attribute::String ? a->s : dflt;
  }
  std::optional<std::vector<int64_t>> attrInts(const char *name) {
    const Attribute *a = node->getAttribute(name);
    if (!a || a->kind != Attribute::Ints)
      return std::nullopt;
    return a->ints;
  }

  FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank,
                                   StringRef what = "axis") {
    if (axis < -rank || axis >= rank)
      return err() << what << " " << axis << " is out of range for rank "
                   << rank;
    return axis < 0 ? axis + rank : axis;
  }

  LogicalResult requireFloat(Value v, StringRef what) {
    if (!isa<FloatType>(typeOf(v).getElementType()))
      return err() << what << " has element type " << typeOf(v).getElementType()
                   << ", but tsr computes this op on floating-point tensors "
                      "only";
    return success();
  }

  //===--------------------------------------------------------------------===//
  // Op creation
  //===--------------------------------------------------------------------===//

  /// Creates an op whose result types tsr infers. The typed builder sets
  /// the properties (with placeholder result types), then inference runs
  /// with a diagnostic instead of the generated builder's fatal error.
  template <typename OpTy, typename... Args>
  FailureOr<OpTy> createInferred(unsigned numResults, Args &&...args) {
    OperationState state(loc, OpTy::getOperationName());
    SmallVector<Type> placeholders(numResults, b.getNoneType());
    OpTy::build(b, state, TypeRange(placeholders), std::forward<Args>(args)...);
    SmallVector<Type> types;
    if (failed(withNodeErrors(
            ("cannot build " + OpTy::getOperationName()).str(), [&] {
              return OpTy::inferReturnTypes(
                  ctx, loc, state.operands, state.attributes.getDictionary(ctx),
                  state.getRawProperties(), state.regions, types);
            })))
      return failure();
    state.types.assign(types.begin(), types.end());
    auto op = cast<OpTy>(b.create(state));
    if (failed(verifyNew(op)))
      return failure();
    return op;
  }

  /// Creates an op with explicit result types, then verifies it.
  template <typename OpTy, typename... Args>
  FailureOr<OpTy> createTyped(Args &&...args) {
    auto op = OpTy::create(b, loc, std::forward<Args>(args)...);
    if (failed(verifyNew(op)))
      return failure();
    return op;
  }

  FailureOr<Value> reshapeTo(Value v, ArrayRef<int64_t> shape) {
    if (typeOf(v).getShape() == shape)
      return v;
    auto op = createTyped<tsr::ReshapeOp>(
        tensorOf(shape, typeOf(v).getElementType()), v);
    if (failed(op))
      return failure();
    return op->getResult();
  }

  FailureOr<Value> transpose(Value v, ArrayRef<int64_t> perm) {
    auto op = createInferred<tsr::TransposeOp>(1, v, perm);
    if (failed(op))
      return failure();
    return op->getResult();
  }

  FailureOr<Value> castTo(Value v, Type elem) {
    if (typeOf(v).getElementType() == elem)
      return v;
    auto op = createTyped<tsr::CastOp>(tensorOf(typeOf(v).getShape(), elem), v);
    if (failed(op))
      return failure();
    return op->getResult();
  }

  template <typename OpTy> FailureOr<Value> binary(Value lhs, Value rhs) {
    auto op = createInferred<OpTy>(1, lhs, rhs);
    if (failed(op))
      return failure();
    return op->getResult();
  }

  //===--------------------------------------------------------------------===//
  // Nodes
  //===--------------------------------------------------------------------===//

  LogicalResult importNode(size_t index);
  /// Folds the node if all its inputs are known; sets `folded`.
  LogicalResult tryFold(bool &folded);

  LogicalResult importConstant();
  LogicalResult importConstantOfShape();
  LogicalResult importIdentity();
  template <typename OpTy> LogicalResult importUnary();
  LogicalResult importGelu();
  LogicalResult importReciprocal();
  template <typename OpTy> LogicalResult importArith();
  LogicalResult importCompare(tsr::ComparePredicate pred);
  LogicalResult importWhere();
  LogicalResult importCast();
  LogicalResult importMatMul();
  LogicalResult importGemm();
  LogicalResult importLayerNorm();
  template <typename OpTy> LogicalResult importSoftmax();
  template <typename OpTy> LogicalResult importReduce();
  LogicalResult importReshape();
  LogicalResult importFlatten();
  LogicalResult importUnsqueezeSqueeze(bool unsqueeze);
  LogicalResult importTranspose();
  LogicalResult importSplit();
  LogicalResult importSlice();
  LogicalResult importConcat();
  LogicalResult importExpand();
  LogicalResult importGather();
  LogicalResult importDropout();
  LogicalResult importSoftmaxCrossEntropy();

  //===--------------------------------------------------------------------===//
  // State
  //===--------------------------------------------------------------------===//

  Model &model;
  MLIRContext *ctx;
  const ImportOptions &options;
  OpBuilder b;
  Location fileLoc;
  Location loc;
  int64_t opset = 0;
  const Node *node = nullptr;
  size_t nodeIndex = 0;
  std::string nodeName;
  llvm::StringMap<Value> values;
  std::unordered_map<std::string, Tensor> constants;
  std::unordered_map<std::string, const Tensor *> initializers;
  std::unordered_map<std::string, Location> producers;
};

//===----------------------------------------------------------------------===//
// Module
//===----------------------------------------------------------------------===//

OwningOpRef<ModuleOp> Importer::run() {
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
  for (const Tensor &t : model.initializers) {
    initializers[t.name] = &t;
    Type elem = elementType(t.dtype);
    // Integer initializers also serve as import-time constants (torch
    // exports shape constants as initializers when it folds constants).
    // An initializer tsr cannot hold is only usable at import time.
    if (!elem || !isFloatDType(t.dtype))
      constants[t.name] = t;
    if (!elem)
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
  func.setFunctionType(
      b.getFunctionType(argTypes, ValueRange(results).getTypes()));
  for (auto [i, attr] : llvm::enumerate(argAttrs))
    func.setArgAttr(i, attr.first, b.getStringAttr(attr.second));

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

LogicalResult Importer::importNode(size_t index) {
  node = &model.nodes[index];
  nodeIndex = index;
  // torch names every node; other producers may not. A synthesized name
  // keeps diagnostics and locations pointing at one node.
  nodeName = node->name.empty() ? node->opType + "#" + std::to_string(index)
                                : node->name;
  loc = NameLoc::get(b.getStringAttr(nodeName), fileLoc);
  const std::string &op = node->opType;
  if (!node->domain.empty())
    return err() << "unsupported ONNX operator (domain '" << node->domain
                 << "')";
  if (op == "Constant")
    return importConstant();

  bool folded = false;
  if (failed(tryFold(folded)))
    return failure();
  if (folded)
    return success();

  using P = tsr::ComparePredicate;
  if (op == "Identity")
    return importIdentity();
  if (op == "Add")
    return importArith<tsr::AddOp>();
  if (op == "Sub")
    return importArith<tsr::SubOp>();
  if (op == "Mul")
    return importArith<tsr::MulOp>();
  if (op == "Div")
    return importArith<tsr::DivOp>();
  if (op == "Pow")
    return importArith<tsr::PowOp>();
  if (op == "Sqrt")
    return importUnary<tsr::SqrtOp>();
  if (op == "Erf")
    return importUnary<tsr::ErfOp>();
  if (op == "Tanh")
    return importUnary<tsr::TanhOp>();
  if (op == "Relu")
    return importUnary<tsr::ReluOp>();
  if (op == "Neg")
    return importUnary<tsr::NegOp>();
  if (op == "Exp")
    return importUnary<tsr::ExpOp>();
  if (op == "Log")
    return importUnary<tsr::LogOp>();
  if (op == "Reciprocal")
    return importReciprocal();
  if (op == "Gelu")
    return importGelu();
  if (op == "Equal")
    return importCompare(P::eq);
  if (op == "Less")
    return importCompare(P::lt);
  if (op == "LessOrEqual")
    return importCompare(P::le);
  if (op == "Greater")
    return importCompare(P::gt);
  if (op == "GreaterOrEqual")
    return importCompare(P::ge);
  if (op == "Where")
    return importWhere();
  if (op == "Cast")
    return importCast();
  if (op == "MatMul")
    return importMatMul();
  if (op == "Gemm")
    return importGemm();
  if (op == "LayerNormalization")
    return importLayerNorm();
  if (op == "Softmax")
    return importSoftmax<tsr::SoftmaxOp>();
  if (op == "LogSoftmax")
    return importSoftmax<tsr::LogSoftmaxOp>();
  if (op == "ReduceMean")
    return importReduce<tsr::ReduceMeanOp>();
  if (op == "ReduceSum")
    return importReduce<tsr::ReduceSumOp>();
  if (op == "ReduceMax")
    return importReduce<tsr::ReduceMaxOp>();
  if (op == "Reshape")
    return importReshape();
  if (op == "Flatten")
    return importFlatten();
  if (op == "Unsqueeze")
    return importUnsqueezeSqueeze(true);
  if (op == "Squeeze")
    return importUnsqueezeSqueeze(false);
  if (op == "Transpose")
    return importTranspose();
  if (op == "Split")
    return importSplit();
  if (op == "Slice")
    return importSlice();
  if (op == "Concat")
    return importConcat();
  if (op == "Expand")
    return importExpand();
  if (op == "Gather")
    return importGather();
  if (op == "ConstantOfShape")
    return importConstantOfShape();
  if (op == "Dropout")
    return importDropout();
  if (op == "SoftmaxCrossEntropyLoss")
    return importSoftmaxCrossEntropy();
  if (op == "Shape" || op == "Size")
    return err() << "the input's shape is not static";
  return err() << "unsupported ONNX operator";
}

LogicalResult Importer::tryFold(bool &folded) {
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

//===----------------------------------------------------------------------===//
// Constants and identity
//===----------------------------------------------------------------------===//

LogicalResult Importer::importConstant() {
  if (node->attributes.size() != 1)
    return err() << "expects exactly one value attribute";
  const Attribute &a = node->attributes[0];
  Tensor t;
  if (a.name == "value") {
    t = a.t;
  } else if (a.name == "value_float") {
    t = Tensor::zeros(DType::Float, {});
    t.setDouble(0, a.f);
  } else if (a.name == "value_int") {
    t = Tensor::zeros(DType::Int64, {});
    t.setInt(0, a.i);
  } else if (a.name == "value_floats") {
    t = Tensor::zeros(DType::Float, {static_cast<int64_t>(a.floats.size())});
    for (size_t i = 0; i < a.floats.size(); ++i)
      t.setDouble(static_cast<int64_t>(i), a.floats[i]);
  } else if (a.name == "value_ints") {
    t = Tensor::fromInts(a.ints);
  } else {
    return err() << "unsupported attribute '" << a.name << "'";
  }
  if (t.dtype == DType::String)
    return err() << "string constants are not supported";
  return setConstOutput(0, std::move(t));
}

LogicalResult Importer::importConstantOfShape() {
  if (failed(checkAttributes({"value"})))
    return failure();
  FailureOr<std::vector<int64_t>> shape = constInts(0, "shape");
  if (failed(shape))
    return failure();
  // Reached when the folder declined a large result: a splat costs nothing.
  const Attribute *a = node->getAttribute("value");
  Tensor one = Tensor::zeros(DType::Float, {1});
  if (a)
    one = a->t;
  if (one.numElements() != 1)
    return err() << "attribute 'value' must hold one element";
  Type elem = elementType(one.dtype);
  if (!elem)
    return err() << "unsupported element type " << dtypeName(one.dtype)
                 << " (attribute 'value')";
  for (int64_t d : *shape)
    if (d < 0)
      return err() << "negative dimension in shape " << shapeString(*shape);
  auto type = tensorOf(*shape, elem);
  DenseElementsAttr attr;
  if (one.dtype == DType::Bool)
    attr = DenseElementsAttr::get(type, one.getInt(0) != 0);
  else
    attr = DenseElementsAttr::getFromRawBuffer(
        type, ArrayRef<char>(one.data.data(), one.data.size()));
  auto op = tsr::ConstantOp::create(b, loc, type, cast<ElementsAttr>(attr));
  return setOutput(0, op.getResult());
}

LogicalResult Importer::importIdentity() {
  if (failed(checkAttributes({})))
    return failure();
  if (!hasInput(0))
    return err() << "input 0 is missing";
  auto it = model.valueTypes.find(node->inputs[0]);
  if (it != model.valueTypes.end() && !it->second.isTensor)
    return err() << "only tensor values are supported";
  FailureOr<Value> x = input(0);
  if (failed(x))
    return failure();
  return setOutput(0, *x);
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

template <typename OpTy> LogicalResult Importer::importUnary() {
  if (failed(checkAttributes({})))
    return failure();
  FailureOr<Value> x = input(0);
  if (failed(x) || failed(requireFloat(*x, "the input")))
    return failure();
  auto op = createTyped<OpTy>(x->getType(), *x);
  if (failed(op))
    return failure();
  return setOutput(0, op->getResult());
}

LogicalResult Importer::importGelu() {
  if (failed(checkAttributes({"approximate"})))
    return failure();
  std::string approx = attrString("approximate", "none");
  tsr::GeluApproximation mode;
  if (approx == "none")
    mode = tsr::GeluApproximation::exact;
  else if (approx == "tanh")
    mode = tsr::GeluApproximation::tanh;
  else
    return err() << "unsupported value '" << approx
                 << "' of attribute 'approximate'";
  FailureOr<Value> x = input(0);
  if (failed(x) || failed(requireFloat(*x, "the input")))
    return failure();
  auto op = createTyped<tsr::GeluOp>(x->getType(), mode, *x);
  if (failed(op))
    return failure();
  return setOutput(0, op->getResult());
}

LogicalResult Importer::importReciprocal() {
  if (failed(checkAttributes({})))
    return failure();
  FailureOr<Value> x = input(0);
  if (failed(x) || failed(requireFloat(*x, "the input")))
    return failure();
  // tsr has no reciprocal op: 1 / x.
  FailureOr<Value> one = scalarConstant(1.0, typeOf(*x).getElementType());
  FailureOr<Value> r = binary<tsr::DivOp>(*one, *x);
  if (failed(r))
    return failure();
  return setOutput(0, *r);
}

template <typename OpTy> LogicalResult Importer::importArith() {
  if (failed(checkAttributes({})))
    return failure();
  FailureOr<Value> lhs = input(0), rhs = input(1);
  if (failed(lhs) || failed(rhs))
    return failure();
  if (!isa<FloatType>(typeOf(*lhs).getElementType()))
    return err() << "arithmetic on " << typeOf(*lhs).getElementType()
                 << " values computed at run time is not supported (tsr "
                    "arithmetic is floating-point; integer shape arithmetic "
                    "must be computable at import time)";
  // Pow's exponent may have another type (Pow(float, int64) is valid ONNX).
  Value r = *rhs;
  if (typeOf(r).getElementType() != typeOf(*lhs).getElementType()) {
    FailureOr<Value> c = castTo(r, typeOf(*lhs).getElementType());
    if (failed(c))
      return failure();
    r = *c;
  }
  FailureOr<Value> res = binary<OpTy>(*lhs, r);
  if (failed(res))
    return failure();
  return setOutput(0, *res);
}

LogicalResult Importer::importCompare(tsr::ComparePredicate pred) {
  if (failed(checkAttributes({})))
    return failure();
  FailureOr<Value> lhs = input(0), rhs = input(1);
  if (failed(lhs) || failed(rhs))
    return failure();
  Value l = *lhs, r = *rhs;
  // tsr.compare takes numbers; booleans compare as i32 0/1.
  if (typeOf(l).getElementType().isInteger(1)) {
    FailureOr<Value> lc = castTo(l, b.getI32Type());
    if (failed(lc))
      return failure();
    l = *lc;
  }
  if (typeOf(r).getElementType().isInteger(1)) {
    FailureOr<Value> rc = castTo(r, b.getI32Type());
    if (failed(rc))
      return failure();
    r = *rc;
  }
  auto op = createInferred<tsr::CompareOp>(1, pred, l, r);
  if (failed(op))
    return failure();
  return setOutput(0, op->getResult());
}

LogicalResult Importer::importWhere() {
  if (failed(checkAttributes({})))
    return failure();
  FailureOr<Value> c = input(0), x = input(1), y = input(2);
  if (failed(c) || failed(x) || failed(y))
    return failure();
  auto op = createInferred<tsr::WhereOp>(1, *c, *x, *y);
  if (failed(op))
    return failure();
  return setOutput(0, op->getResult());
}

LogicalResult Importer::importCast() {
  if (failed(checkAttributes({"to"})))
    return failure();
  DType to = static_cast<DType>(attrInt("to", 0));
  Type elem = elementType(to);
  if (!elem)
    return err() << "unsupported element type " << dtypeName(to)
                 << " (attribute 'to')";
  FailureOr<Value> x = input(0);
  if (failed(x))
    return failure();
  FailureOr<Value> r = castTo(*x, elem);
  if (failed(r))
    return failure();
  return setOutput(0, *r);
}

//===----------------------------------------------------------------------===//
// Contractions and normalisations
//===----------------------------------------------------------------------===//

LogicalResult Importer::importMatMul() {
  if (failed(checkAttributes({})))
    return failure();
  FailureOr<Value> a = input(0), bv = input(1);
  if (failed(a) || failed(bv) || failed(requireFloat(*a, "input A")) ||
      failed(requireFloat(*bv, "input B")))
    return failure();
  // tsr.matmul needs rank >= 2: promote 1-D operands as numpy does, and
  // drop the added dimension afterwards.
  Value lhs = *a, rhs = *bv;
  auto la = typeOf(lhs).getShape(), rb = typeOf(rhs).getShape();
  bool vecL = la.size() == 1, vecR = rb.size() == 1;
  if (la.empty() || rb.empty())
    return err() << "MatMul operands must have rank >= 1";
  if (vecL) {
    FailureOr<Value> r = reshapeTo(lhs, {1, la[0]});
    if (failed(r))
      return failure();
    lhs = *r;
  }
  if (vecR) {
    FailureOr<Value> r = reshapeTo(rhs, {rb[0], 1});
    if (failed(r))
      return failure();
    rhs = *r;
  }
  FailureOr<Value> m = binary<tsr::MatmulOp>(lhs, rhs);
  if (failed(m))
    return failure();
  Value res = *m;
  if (vecL || vecR) {
    SmallVector<int64_t> shape(typeOf(res).getShape());
    if (vecR)
      shape.pop_back();
    if (vecL)
      shape.erase(shape.end() - (vecR ? 1 : 2));
    FailureOr<Value> r = reshapeTo(res, shape);
    if (failed(r))
      return failure();
    res = *r;
  }
  return setOutput(0, res);
}

LogicalResult Importer::importGemm() {
  if (failed(checkAttributes({"alpha", "beta", "transA", "transB"})))
    return failure();
  FailureOr<Value> a = input(0), bv = input(1);
  if (failed(a) || failed(bv) || failed(requireFloat(*a, "input A")) ||
      failed(requireFloat(*bv, "input B")))
    return failure();
  if (typeOf(*a).getRank() != 2 || typeOf(*bv).getRank() != 2)
    return err() << "Gemm operands must be matrices";
  Value lhs = *a, rhs = *bv;
  if (attrInt("transA", 0)) {
    FailureOr<Value> t = transpose(lhs, {1, 0});
    if (failed(t))
      return failure();
    lhs = *t;
  }
  if (attrInt("transB", 0)) {
    FailureOr<Value> t = transpose(rhs, {1, 0});
    if (failed(t))
      return failure();
    rhs = *t;
  }
  Type elem = typeOf(lhs).getElementType();
  FailureOr<Value> y = binary<tsr::MatmulOp>(lhs, rhs);
  if (failed(y))
    return failure();
  double alpha = attrFloat("alpha", 1.0), beta = attrFloat("beta", 1.0);
  if (alpha != 1.0) {
    FailureOr<Value> s = scalarConstant(alpha, elem);
    y = binary<tsr::MulOp>(*y, *s);
    if (failed(y))
      return failure();
  }
  if (hasInput(2) && beta != 0.0) {
    FailureOr<Value> c = input(2);
    if (failed(c))
      return failure();
    Value cv = *c;
    if (beta != 1.0) {
      FailureOr<Value> s = scalarConstant(beta, elem);
      FailureOr<Value> scaled = binary<tsr::MulOp>(cv, *s);
      if (failed(scaled))
        return failure();
      cv = *scaled;
    }
    y = binary<tsr::AddOp>(*y, cv);
    if (failed(y))
      return failure();
  }
  return setOutput(0, *y);
}

LogicalResult Importer::importLayerNorm() {
  if (failed(checkAttributes({"axis", "epsilon", "stash_type"})))
    return failure();
  if (attrInt("stash_type", 1) != 1)
    return err() << "unsupported value " << attrInt("stash_type", 1)
                 << " of attribute 'stash_type' (only 1, float)";
  FailureOr<Value> x = input(0), scale = input(1);
  if (failed(x) || failed(scale) || failed(requireFloat(*x, "input X")))
    return failure();
  auto xt = typeOf(*x);
  FailureOr<int64_t> axis = normalizeAxis(attrInt("axis", -1), xt.getRank());
  if (failed(axis))
    return failure();
  // tsr wants weight and bias of exactly the normalised shape; ONNX allows
  // anything that broadcasts to it.
  ArrayRef<int64_t> normShape = xt.getShape().drop_front(*axis);
  auto toNormShape = [&](Value v) -> FailureOr<Value> {
    if (typeOf(v).getShape() == normShape)
      return v;
    std::vector<int64_t> out,
        vs(typeOf(v).getShape().begin(), typeOf(v).getShape().end()),
        ns(normShape.begin(), normShape.end());
    if (!broadcastShapes(vs, ns, out) || out != ns)
      return err() << "scale/bias shape " << shapeString(vs)
                   << " does not broadcast to the normalised shape "
                   << shapeString(ns);
    auto op = createTyped<tsr::BroadcastToOp>(
        tensorOf(normShape, typeOf(v).getElementType()), v);
    if (failed(op))
      return failure();
    return op->getResult();
  };
  FailureOr<Value> w = toNormShape(*scale);
  if (failed(w))
    return failure();
  Value bias;
  if (hasInput(2)) {
    FailureOr<Value> bv = input(2);
    if (failed(bv))
      return failure();
    FailureOr<Value> bn = toNormShape(*bv);
    if (failed(bn))
      return failure();
    bias = *bn;
  }
  // ONNX's epsilon is a float32 attribute; keep its exact value.
  double eps = static_cast<float>(attrFloat("epsilon", 1e-5));
  // NaN or infinity (also a float32 overflow) would make every output NaN
  // or zero; a negative epsilon is the verifier's to report.
  if (!std::isfinite(eps))
    return err() << "attribute 'epsilon' must be finite, got "
                 << (std::isnan(eps) ? "NaN"
                     : eps > 0       ? "infinity"
                                     : "-infinity");
  auto op = createInferred<tsr::LayerNormOp>(
      3, *x, *w, bias, b.getI64IntegerAttr(*axis), b.getF64FloatAttr(eps));
  if (failed(op))
    return failure();
  if (failed(setOutput(0, op->getResult())) ||
      failed(setOutput(1, op->getMean())) ||
      failed(setOutput(2, op->getRstd())))
    return failure();
  return success();
}

template <typename OpTy> LogicalResult Importer::importSoftmax() {
  if (failed(checkAttributes({"axis"})))
    return failure();
  FailureOr<Value> x = input(0);
  if (failed(x) || failed(requireFloat(*x, "the input")))
    return failure();
  auto xt = typeOf(*x);
  int64_t rank = xt.getRank();
  if (rank == 0)
    return err() << "the input must have rank >= 1";
  // Opset 13 changed both the default axis and the meaning: before it the
  // input is flattened to 2-D at `axis` and normalised over the second
  // dimension.
  bool legacy = opset < 13;
  FailureOr<int64_t> axis =
      normalizeAxis(attrInt("axis", legacy ? 1 : -1), rank);
  if (failed(axis))
    return failure();
  if (!legacy || *axis == rank - 1) {
    auto op = createTyped<OpTy>(xt, *x, b.getI64IntegerAttr(*axis));
    if (failed(op))
      return failure();
    return setOutput(0, op->getResult());
  }
  int64_t outer = product(xt.getShape().take_front(*axis));
  int64_t inner = product(xt.getShape().drop_front(*axis));
  FailureOr<Value> flat = reshapeTo(*x, {outer, inner});
  if (failed(flat))
    return failure();
  auto op = createTyped<OpTy>(typeOf(*flat), *flat, b.getI64IntegerAttr(1));
  if (failed(op))
    return failure();
  FailureOr<Value> back = reshapeTo(op->getResult(), xt.getShape());
  if (failed(back))
    return failure();
  return setOutput(0, *back);
}

template <typename OpTy> LogicalResult Importer::importReduce() {
  if (failed(checkAttributes({"axes", "keepdims", "noop_with_empty_axes"})))
    return failure();
  FailureOr<Value> x = input(0);
  if (failed(x) || failed(requireFloat(*x, "the input")))
    return failure();
  auto xt = typeOf(*x);
  int64_t rank = xt.getRank();
  std::vector<int64_t> axes;
  bool given = false;
  if (hasInput(1)) {
    FailureOr<std::vector<int64_t>> a = constInts(1, "axes");
    if (failed(a))
      return failure();
    axes = *a;
    given = true;
  } else if (auto a = attrInts("axes")) {
    axes = *a;
    given = true;
  }
  if (axes.empty()) {
    if (given && attrInt("noop_with_empty_axes", 0))
      return setOutput(0, *x);
    if (!given && attrInt("noop_with_empty_axes", 0))
      return setOutput(0, *x);
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  }
  if (axes.empty()) // rank 0: nothing to reduce
    return setOutput(0, *x);
  SmallVector<int64_t> norm;
  for (int64_t a : axes) {
    FailureOr<int64_t> n = normalizeAxis(a, rank, "reduction axis");
    if (failed(n))
      return failure();
    norm.push_back(*n);
  }
  llvm::sort(norm);
  auto op = createInferred<OpTy>(1, *x, b.getDenseI64ArrayAttr(norm),
                                 b.getBoolAttr(attrInt("keepdims", 1) != 0));
  if (failed(op))
    return failure();
  return setOutput(0, op->getResult());
}

//===----------------------------------------------------------------------===//
// Shapes and data movement
//===----------------------------------------------------------------------===//

LogicalResult Importer::importReshape() {
  if (failed(checkAttributes({"allowzero"})))
    return failure();
  FailureOr<Value> x = input(0);
  FailureOr<std::vector<int64_t>> target = constInts(1, "shape");
  if (failed(x) || failed(target))
    return failure();
  std::vector<int64_t> in(typeOf(*x).getShape().begin(),
                          typeOf(*x).getShape().end()),
      out;
  std::string error;
  if (!reshapeShape(in, *target, attrInt("allowzero", 0) != 0, out, error))
    return err() << error;
  FailureOr<Value> r = reshapeTo(*x, out);
  if (failed(r))
    return failure();
  return setOutput(0, *r);
}

LogicalResult Importer::importFlatten() {
  if (failed(checkAttributes({"axis"})))
    return failure();
  FailureOr<Value> x = input(0);
  if (failed(x))
    return failure();
  auto shape = typeOf(*x).getShape();
  int64_t rank = static_cast<int64_t>(shape.size());
  int64_t axis = attrInt("axis", 1);
  if (axis < -rank || axis > rank)
    return err() << "axis " << axis << " is out of range for rank " << rank;
  if (axis < 0)
    axis += rank;
  FailureOr<Value> r = reshapeTo(
      *x, {product(shape.take_front(axis)), product(shape.drop_front(axis))});
  if (failed(r))
    return failure();
  return setOutput(0, *r);
}

LogicalResult Importer::importUnsqueezeSqueeze(bool unsqueeze) {
  if (failed(checkAttributes({"axes"})))
    return failure();
  FailureOr<Value> x = input(0);
  if (failed(x))
    return failure();
  std::vector<int64_t> axes;
  bool given = false;
  if (hasInput(1)) {
    FailureOr<std::vector<int64_t>> a = constInts(1, "axes");
    if (failed(a))
      return failure();
    axes = *a;
    given = true;
  } else if (auto a = attrInts("axes")) {
    axes = *a;
    given = true;
  }
  std::vector<int64_t> in(typeOf(*x).getShape().begin(),
                          typeOf(*x).getShape().end()),
      out;
  std::string error;
  bool ok = unsqueeze ? unsqueezeShape(in, axes, out, error)
                      : squeezeShape(in, axes, given, out, error);
  if (!ok)
    return err() << error;
  FailureOr<Value> r = reshapeTo(*x, out);
  if (failed(r))
    return failure();
  return setOutput(0, *r);
}

LogicalResult Importer::importTranspose() {
  if (failed(checkAttributes({"perm"})))
    return failure();
  FailureOr<Value> x = input(0);
  if (failed(x))
    return failure();
  int64_t rank = typeOf(*x).getRank();
  SmallVector<int64_t> perm;
  if (auto p = attrInts("perm"))
    perm.assign(p->begin(), p->end());
  else
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  for (int64_t &p : perm) {
    FailureOr<int64_t> n = normalizeAxis(p, rank, "perm entry");
    if (failed(n))
      return failure();
    p = *n;
  }
  FailureOr<Value> r = transpose(*x, perm);
  if (failed(r))
    return failure();
  return setOutput(0, *r);
}

LogicalResult Importer::importSplit() {
  if (failed(checkAttributes({"axis", "split", "num_outputs"})))
    return failure();
  FailureOr<Value> x = input(0);
  if (failed(x))
    return failure();
  auto shape = typeOf(*x).getShape();
  FailureOr<int64_t> axis = normalizeAxis(attrInt("axis", 0), shape.size());
  if (failed(axis))
    return failure();
  int64_t dim = shape[*axis];
  int64_t n = static_cast<int64_t>(node->outputs.size());
  if (n == 0)
    return err() << "has no outputs";
  std::vector<int64_t> sizes;
  if (hasInput(1)) {
    FailureOr<std::vector<int64_t>> s = constInts(1, "split");
    if (failed(s))
      return failure();
    sizes = *s;
  } else if (auto s = attrInts("split")) {
    sizes = *s;
  } else {
    // Equal parts; opset 18's num_outputs lets the last part be smaller.
    int64_t parts = attrInt("num_outputs", n);
    if (parts <= 0)
      return err() << "unsupported value " << parts
                   << " of attribute 'num_outputs'";
    int64_t chunk = (dim + parts - 1) / parts;
    if (!node->getAttribute("num_outputs") && dim % parts)
      return err() << "cannot split dimension " << dim << " into " << parts
                   << " equal parts";
    for (int64_t i = 0; i < parts; ++i)
      sizes.push_back(std::min(chunk, dim - i * chunk));
  }
  if (static_cast<int64_t>(sizes.size()) != n)
    return err() << sizes.size() << " split sizes for " << n << " outputs";
  for (int64_t s : sizes)
    if (s <= 0)
      return err() << "split sizes " << shapeString(sizes)
                   << " contain an empty piece; empty tensors are not "
                      "supported";
  auto op = createInferred<tsr::SplitOp>(n, *x, static_cast<uint64_t>(*axis),
                                         ArrayRef<int64_t>(sizes));
  if (failed(op))
    return failure();
  for (int64_t i = 0; i < n; ++i)
    if (failed(setOutput(i, op->getResult(i))))
      return failure();
  return success();
}

LogicalResult Importer::importSlice() {
  FailureOr<Value> x = input(0);
  if (failed(x))
    return failure();
  std::vector<int64_t> starts, ends, axes, steps;
  if (opset >= 10) {
    if (failed(checkAttributes({})))
      return failure();
    FailureOr<std::vector<int64_t>> s = constInts(1, "starts"),
                                    e = constInts(2, "ends");
    if (failed(s) || failed(e))
      return failure();
    starts = *s;
    ends = *e;
    if (hasInput(3)) {
      FailureOr<std::vector<int64_t>> a = constInts(3, "axes");
      if (failed(a))
        return failure();
      axes = *a;
    }
    if (hasInput(4)) {
      FailureOr<std::vector<int64_t>> st = constInts(4, "steps");
      if (failed(st))
        return failure();
      steps = *st;
    }
  } else {
    if (failed(checkAttributes({"starts", "ends", "axes"})))
      return failure();
    starts = attrInts("starts").value_or(std::vector<int64_t>());
    ends = attrInts("ends").value_or(std::vector<int64_t>());
    axes = attrInts("axes").value_or(std::vector<int64_t>());
  }
  for (int64_t s : steps)
    if (s < 0)
      return err() << "negative steps are not supported (input 'steps' is "
                   << shapeString(steps) << ")";
  std::vector<int64_t> shape(typeOf(*x).getShape().begin(),
                             typeOf(*x).getShape().end()),
      first, step, count;
  std::string error;
  if (!sliceBounds(shape, starts, ends, axes, steps, first, step, count, error))
    return err() << error;
  SmallVector<int64_t> limits;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (count[d] == 0)
      return err() << "the slice of dimension " << d
                   << " is empty; empty tensors are not supported";
    limits.push_back(first[d] + (count[d] - 1) * step[d] + 1);
  }
  if (ArrayRef<int64_t>(count) == typeOf(*x).getShape())
    return setOutput(0, *x);
  auto op = createInferred<tsr::SliceOp>(1, *x, ArrayRef<int64_t>(first),
                                         ArrayRef<int64_t>(limits),
                                         ArrayRef<int64_t>(step));
  if (failed(op))
    return failure();
  return setOutput(0, op->getResult());
}

LogicalResult Importer::importConcat() {
  if (failed(checkAttributes({"axis"})))
    return failure();
  SmallVector<Value> ins;
  for (size_t i = 0; i < node->inputs.size(); ++i) {
    FailureOr<Value> v = input(i);
    if (failed(v))
      return failure();
    ins.push_back(*v);
  }
  if (ins.empty())
    return err() << "needs at least one input";
  FailureOr<int64_t> axis =
      normalizeAxis(attrInt("axis", 0), typeOf(ins[0]).getRank());
  if (failed(axis))
    return failure();
  if (ins.size() == 1)
    return setOutput(0, ins[0]);
  auto op = createInferred<tsr::ConcatOp>(1, ValueRange(ins),
                                          static_cast<uint64_t>(*axis));
  if (failed(op))
    return failure();
  return setOutput(0, op->getResult());
}

LogicalResult Importer::importExpand() {
  if (failed(checkAttributes({})))
    return failure();
  FailureOr<Value> x = input(0);
  FailureOr<std::vector<int64_t>> shape = constInts(1, "shape");
  if (failed(x) || failed(shape))
    return failure();
  std::vector<int64_t> in(typeOf(*x).getShape().begin(),
                          typeOf(*x).getShape().end()),
      out;
  if (!broadcastShapes(in, *shape, out))
    return err() << "cannot expand " << shapeString(in) << " to "
                 << shapeString(*shape);
  if (out == in)
    return setOutput(0, *x);
  auto op = createTyped<tsr::BroadcastToOp>(
      tensorOf(out, typeOf(*x).getElementType()), *x);
  if (failed(op))
    return failure();
  return setOutput(0, op->getResult());
}

LogicalResult Importer::importGather() {
  if (failed(checkAttributes({"axis"})))
    return failure();
  FailureOr<Value> data = input(0);
  if (failed(data))
    return failure();
  auto dt = typeOf(*data);
  FailureOr<int64_t> axis = normalizeAxis(attrInt("axis", 0), dt.getRank());
  if (failed(axis))
    return failure();
  Value indices;
  if (const Tensor *idx = constInput(1)) {
    // tsr.gather wants indices in [0, size); ONNX also counts from the end.
    int64_t dim = dt.getDimSize(*axis);
    Tensor norm = Tensor::zeros(DType::Int64, idx->shape);
    for (int64_t i = 0, e = idx->numElements(); i < e; ++i) {
      int64_t j = idx->getInt(i);
      if (j < -dim || j >= dim)
        return err() << "index " << j << " is out of range for size " << dim;
      norm.setInt(i, j < 0 ? j + dim : j);
    }
    FailureOr<Value> v = materialize(norm, node->inputs[1]);
    if (failed(v))
      return failure();
    indices = *v;
  } else {
    FailureOr<Value> v = input(1);
    if (failed(v))
      return failure();
    indices = *v;
  }
  auto op = createInferred<tsr::GatherOp>(1, *data, indices,
                                          static_cast<uint64_t>(*axis));
  if (failed(op))
    return failure();
  return setOutput(0, op->getResult());
}

//===----------------------------------------------------------------------===//
// Training ops
//===----------------------------------------------------------------------===//

LogicalResult Importer::importDropout() {
  FailureOr<Value> x = input(0);
  if (failed(x))
    return failure();
  double ratio = 0.5;
  bool training = false;
  if (opset >= 12) {
    if (failed(checkAttributes({"seed"})))
      return failure();
    if (hasInput(1)) {
      FailureOr<const Tensor *> r = requireConst(1, "ratio");
      if (failed(r))
        return failure();
      ratio = (*r)->getDouble(0);
    }
    if (hasInput(2)) {
      FailureOr<const Tensor *> t = requireConst(2, "training_mode");
      if (failed(t))
        return failure();
      training = (*t)->getInt(0) != 0;
    }
  } else {
    // Before opset 12 Dropout has no training flag; its tests and runtimes
    // treat it as inference-mode identity.
    if (failed(checkAttributes({"ratio", "is_test"})))
      return failure();
  }
  auto xt = typeOf(*x);
  if (!training || ratio == 0.0) {
    if (failed(setOutput(0, *x)))
      return failure();
    if (!hasOutput(1))
      return success();
    Tensor mask =
        Tensor::zeros(DType::Bool, std::vector<int64_t>(xt.getShape().begin(),
                                                        xt.getShape().end()));
    for (int64_t i = 0, e = mask.numElements(); i < e; ++i)
      mask.setInt(i, 1);
    FailureOr<Value> m = materialize(mask, node->outputs[1]);
    if (failed(m))
      return failure();
    return setOutput(1, *m);
  }
  if (failed(requireFloat(*x, "the input")))
    return failure();
  // Without a seed ONNX generates one; a distinct seed per node keeps two
  // dropouts of the same shape from drawing the same mask.
  int64_t seed = attrInt("seed", static_cast<int64_t>(nodeIndex) + 1);
  auto op = createInferred<tsr::DropoutOp>(2, *x, b.getF64FloatAttr(ratio),
                                           b.getI64IntegerAttr(seed));
  if (failed(op))
    return failure();
  if (failed(setOutput(0, op->getOutput())) ||
      failed(setOutput(1, op->getMask())))
    return failure();
  return success();
}

LogicalResult Importer::importSoftmaxCrossEntropy() {
  if (failed(checkAttributes({"ignore_index", "reduction"})))
    return failure();
  if (hasInput(2))
    return err() << "class weights (input '" << node->inputs[2]
                 << "') are not supported";
  std::string red = attrString("reduction", "mean");
  tsr::LossReduction reduction;
  if (red == "mean")
    reduction = tsr::LossReduction::mean;
  else if (red == "sum")
    reduction = tsr::LossReduction::sum;
  else if (red == "none")
    reduction = tsr::LossReduction::none;
  else
    return err() << "unsupported value '" << red
                 << "' of attribute 'reduction'";
  FailureOr<Value> scores = input(0), labels = input(1);
  if (failed(scores) || failed(labels) ||
      failed(requireFloat(*scores, "the scores")))
    return failure();
  auto st = typeOf(*scores);
  int64_t rank = st.getRank();
  if (rank < 2)
    return err() << "scores must be N x C or N x C x D1 x ...";
  // tsr's loss is N x C; for N x C x D1.. move C last and flatten: the mean
  // over the non-ignored samples is the same.
  Value logits = *scores, lab = *labels;
  SmallVector<int64_t> lossShape(st.getShape().take_front(1));
  if (rank > 2) {
    SmallVector<int64_t> perm = {0};
    for (int64_t d = 2; d < rank; ++d)
      perm.push_back(d);
    perm.push_back(1);
    FailureOr<Value> t = transpose(logits, perm);
    if (failed(t))
      return failure();
    int64_t c = st.getDimSize(1);
    int64_t rows = st.getNumElements() / c;
    FailureOr<Value> flat = reshapeTo(*t, {rows, c});
    FailureOr<Value> flatLabels = reshapeTo(lab, {rows});
    if (failed(flat) || failed(flatLabels))
      return failure();
    logits = *flat;
    lab = *flatLabels;
    lossShape.append(st.getShape().begin() + 2, st.getShape().end());
  }
  int64_t ignore = attrInt("ignore_index", -100);
  if (!node->getAttribute("ignore_index")) {
    // ONNX then ignores nothing; valid labels lie in [0, C), so a
    // negative ignore_index never matches.
    ignore = -100;
  }
  auto op = createInferred<tsr::SoftmaxCrossEntropyOp>(
      1, logits, lab, b.getI64IntegerAttr(ignore),
      tsr::LossReductionAttr::get(ctx, reduction));
  if (failed(op))
    return failure();
  Value loss = op->getResult();
  if (reduction == tsr::LossReduction::none && rank > 2) {
    FailureOr<Value> r = reshapeTo(loss, lossShape);
    if (failed(r))
      return failure();
    loss = *r;
  }
  if (failed(setOutput(0, loss)))
    return failure();
  if (hasOutput(1)) {
    // log_prob: log_softmax over the class dimension.
    auto lp =
        createTyped<tsr::LogSoftmaxOp>(st, *scores, b.getI64IntegerAttr(1));
    if (failed(lp))
      return failure();
    return setOutput(1, lp->getResult());
  }
  return success();
}

} // namespace

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
  Importer importer(model, context, options);
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
