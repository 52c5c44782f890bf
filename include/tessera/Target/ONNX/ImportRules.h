//===- ImportRules.h - the ONNX importer's rules and their context -*- C++
//-*-===//
//
// The ONNX importer is a table of import rules keyed by (domain, op type,
// opset): one small function per op family turns a node into tsr ops (or
// any dialect's ops) through an ImportContext. The core rules live in
// lib/Target/ONNX/Rules/, one file per family; an extension adds its own
// with importRules().add(...) before importing (its registration function,
// called by the tools that link it).
//
// A rule reads the node's inputs (input(i): the SSA value; constInput(i) /
// constInts(i): a tensor known at import time), its attributes
// (checkAttributes first, so that an attribute the rule ignores is an
// error, then attrInt / attrFloat / attrString / attrInts), creates ops at
// `loc` with `b` (createInferred / createTyped check them and turn tsr's
// diagnostics into one error about the node), and records each output with
// setOutput(i, value) (checked against ONNX's inferred type) or
// setConstOutput(i, tensor) (a value known at import time). Errors start
// with err(): "node '<name>' (op <type>): ...".
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_TARGET_ONNX_IMPORTRULES_H
#define TESSERA_TARGET_ONNX_IMPORTRULES_H

#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Target/ONNX/ImportONNX.h"
#include "tessera/Target/ONNX/OnnxModel.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringMap.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace tessera::onnx_import {

// The rules and their context speak MLIR throughout.
using namespace mlir;

class ImportContext;

/// Imports the context's current node; fails after a diagnostic.
using ImportRule = std::function<LogicalResult(ImportContext &)>;

/// Import rules by (domain, op type), each valid from an opset version on.
class ImportRuleRegistry {
public:
  /// Registers `rule` for `opType` in `domain` ("" is ai.onnx) from opset
  /// `sinceVersion` on; a rule registered again for the same key and
  /// version replaces the earlier one (an extension can override a core
  /// rule).
  void add(StringRef opType, ImportRule rule, int64_t sinceVersion = 1,
           StringRef domain = "");
  /// The rule of the greatest version <= `opset`; null if there is none.
  const ImportRule *lookup(StringRef domain, StringRef opType,
                           int64_t opset) const;
  /// Whether any version of `opType` in `domain` has a rule.
  bool has(StringRef domain, StringRef opType) const;

private:
  struct Versioned {
    int64_t since;
    ImportRule rule;
  };
  /// "<domain>::<op type>" -> rules sorted by version.
  llvm::StringMap<std::vector<Versioned>> rules_;
};

/// The process-wide registry: the core rules (registered on first use),
/// then whatever extensions add.
ImportRuleRegistry &importRules();

/// The core families (lib/Target/ONNX/Rules/).
void registerConstantImportRules(ImportRuleRegistry &rules);
void registerElementwiseImportRules(ImportRuleRegistry &rules);
void registerContractionImportRules(ImportRuleRegistry &rules);
void registerShapeImportRules(ImportRuleRegistry &rules);
void registerTrainingImportRules(ImportRuleRegistry &rules);
void registerVisionImportRules(ImportRuleRegistry &rules);
void registerActivationImportRules(ImportRuleRegistry &rules);

/// "[2, 3]".
std::string shapeString(ArrayRef<int64_t> shape);
/// The element count, saturated at INT64_MAX (tsr's type constraints reject
/// such shapes when the op is built).
int64_t product(ArrayRef<int64_t> shape);

/// One import: the model, the module being built, the values by ONNX name,
/// and the node being imported (`node`, located at `loc`).
class ImportContext {
public:
  ImportContext(Model &model, MLIRContext *ctx, const ImportOptions &options,
                const ImportRuleRegistry &rules)
      : model(model), ctx(ctx), options(options), rules(rules), b(ctx),
        fileLoc(FileLineColLoc::get(ctx, model.path, 0, 0)), loc(fileLoc) {}

  /// Imports the whole model: the module of `@forward`, or null after a
  /// diagnostic.
  OwningOpRef<ModuleOp> run();

  /// Fills `parameters`: the float initializers that are trained
  /// (Parameters.cpp); reports the decision through options.report.
  LogicalResult decideParameters();
  /// The model's metadata "tessera.state_dict" (a JSON list of [name,
  /// initializer] pairs, which examples/*/export.py write) as the module's
  /// tsr.state_dict: what --save writes, tied weights under each name.
  LogicalResult recordStateDict(ModuleOp module);

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

  /// Input `i`, which must be a floating-point tensor (`what` names it in
  /// the diagnostic).
  FailureOr<Value> floatInput(size_t i, StringRef what = "the input") {
    FailureOr<Value> v = input(i);
    if (failed(v) || failed(requireFloat(*v, what)))
      return failure();
    return v;
  }

  /// How most rules start: the node has only `known` attributes; then its
  /// first input (floatFirstInput: which must be a floating-point tensor).
  FailureOr<Value> firstInput(std::initializer_list<StringRef> known) {
    if (failed(checkAttributes(known)))
      return failure();
    return input(0);
  }
  FailureOr<Value> floatFirstInput(std::initializer_list<StringRef> known) {
    if (failed(checkAttributes(known)))
      return failure();
    return floatInput(0);
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

  /// setOutput of a value a helper may have failed to build: a failure (its
  /// diagnostic already emitted) passes through.
  LogicalResult setOutput(size_t i, FailureOr<Value> v) {
    return failed(v) ? failure() : setOutput(i, *v);
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

  /// Integers given as constant input `i` (where a newer opset moved an
  /// attribute to an input) or else as attribute `name`; nullopt when the
  /// node has neither.
  FailureOr<std::optional<std::vector<int64_t>>>
  intsFromInputOrAttr(size_t i, const char *name) {
    if (hasInput(i)) {
      FailureOr<std::vector<int64_t>> v = constInts(i, name);
      if (failed(v))
        return failure();
      return std::optional<std::vector<int64_t>>(std::move(*v));
    }
    return attrInts(name);
  }

  /// The `axes` of Reduce*, Squeeze and Unsqueeze (input 1 in newer opsets,
  /// else the attribute); empty when neither is there, and `given` says
  /// which.
  FailureOr<std::vector<int64_t>> axesOperand(bool &given) {
    FailureOr<std::optional<std::vector<int64_t>>> axes =
        intsFromInputOrAttr(1, "axes");
    if (failed(axes))
      return failure();
    given = axes->has_value();
    return axes->value_or(std::vector<int64_t>());
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

  /// The values concatenated along `axis` (tsr.concat).
  FailureOr<Value> concat(ValueRange values, int64_t axis) {
    auto op =
        createInferred<tsr::ConcatOp>(1, values, static_cast<uint64_t>(axis));
    if (failed(op))
      return failure();
    return op->getResult();
  }

  template <typename OpTy> FailureOr<Value> unary(Value v) {
    auto op = createInferred<OpTy>(1, v);
    if (failed(op))
      return failure();
    return op->getResult();
  }

  FailureOr<Value> compare(tsr::ComparePredicate pred, Value lhs, Value rhs) {
    auto op = createInferred<tsr::CompareOp>(1, pred, lhs, rhs);
    if (failed(op))
      return failure();
    return op->getResult();
  }

  /// tsr.where: `cond ? x : y` elementwise.
  FailureOr<Value> select(Value cond, Value x, Value y) {
    auto op = createInferred<tsr::WhereOp>(1, cond, x, y);
    if (failed(op))
      return failure();
    return op->getResult();
  }

  /// A reduction (tsr.reduce_sum, reduce_mean, reduce_max) over `axes`.
  template <typename OpTy>
  FailureOr<Value> reduce(Value v, ArrayRef<int64_t> axes, bool keepdims) {
    auto op = createInferred<OpTy>(1, v, b.getDenseI64ArrayAttr(axes),
                                   b.getBoolAttr(keepdims));
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
  // Driver (ImportONNX.cpp)
  //===--------------------------------------------------------------------===//

  /// Every node whose op type has no rule (and that the constant folder
  /// does not know), listed in one error: op types with counts and the
  /// first node of each.
  LogicalResult checkSupported();
  LogicalResult importNode(size_t index);
  /// Folds the node if all its inputs are known; sets `folded`.
  LogicalResult tryFold(bool &folded);
  /// Whether the node has inputs and all of them are constants (known at
  /// import time, or materialised as constant ops).
  bool inputsAllConstant();
  /// After a rule imported a node whose inputs are all constants: folds
  /// the ops it built (those after `last` in `block`) through their own
  /// folders, and records outputs that became constants as import-time
  /// tensors.
  LogicalResult foldBuiltOps(Block *block, Operation *last);

  //===--------------------------------------------------------------------===//
  // State
  //===--------------------------------------------------------------------===//

  Model &model;
  MLIRContext *ctx;
  const ImportOptions &options;
  const ImportRuleRegistry &rules;
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
  /// The trained initializers (decideParameters); other float
  /// initializers are constants.
  std::set<std::string> parameters;
  std::unordered_map<std::string, Location> producers;
};

} // namespace tessera::onnx_import

#endif // TESSERA_TARGET_ONNX_IMPORTRULES_H
