//===- RuntimeCallToEmitC.cpp - ops to runtime calls in EmitC -------------===//
//
// One conversion pattern for every op that describes its runtime call
// (RuntimeCallOpInterface): the call's arguments become the operands and
// the `args` of an emitc.call_opaque, and the results come back as one
// Tensor, a std::tuple read with std::get, or a std::vector read with
// subscripts.
//
//===----------------------------------------------------------------------===//

#include "tessera/Conversion/RuntimeCallToEmitC.h"
#include "tessera/Dialect/Dist/IR/DistDialect.h"

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/IR/BuiltinTypes.h"

#include <cmath>
#include <sstream>

using namespace mlir;

namespace tessera {

std::string joinInts(ArrayRef<int64_t> values) {
  std::string s;
  for (auto [i, v] : llvm::enumerate(values))
    s += (i ? ", " : "") + std::to_string(v);
  return s;
}

RuntimeTypeConverter::RuntimeTypeConverter(MLIRContext *ctx) {
  addConversion([](Type t) { return t; });
  addConversion([ctx](RankedTensorType) -> Type {
    return emitc::OpaqueType::get(ctx, kRuntimeTensorType);
  });
}

std::string runtimeDTypeName(Type t) {
  if (t.isF32())
    return "f32";
  if (t.isF64())
    return "f64";
  if (t.isBF16())
    return "bf16";
  if (t.isInteger(64))
    return "i64";
  if (t.isInteger(32))
    return "i32";
  if (t.isInteger(1))
    return "i1";
  return "";
}

Attribute shapeLiteral(MLIRContext *ctx, Type tensorType) {
  return emitc::OpaqueAttr::get(
      ctx, "tessera::rt::Shape{" +
               joinInts(cast<RankedTensorType>(tensorType).getShape()) + "}");
}

Attribute dtypeLiteral(MLIRContext *ctx, Type tensorType) {
  return emitc::OpaqueAttr::get(
      ctx, "tessera::rt::DType::" +
               runtimeDTypeName(
                   cast<RankedTensorType>(tensorType).getElementType()));
}

Value tensorSlot(OpBuilder &b, Location loc, Value vector, int64_t index) {
  MLIRContext *ctx = b.getContext();
  Value i = emitc::LiteralOp::create(b, loc, emitc::SizeTType::get(ctx),
                                     std::to_string(index));
  return emitc::SubscriptOp::create(
      b, loc,
      emitc::LValueType::get(emitc::OpaqueType::get(ctx, kRuntimeTensorType)),
      vector, ValueRange{i});
}

LogicalResult verifyEmittable(const RuntimeCall &call) {
  Operation *op = call.op();
  auto check = [&](Type t) -> LogicalResult {
    auto tensor = dyn_cast<RankedTensorType>(t);
    if (!tensor || !runtimeDTypeName(tensor.getElementType()).empty())
      return success();
    return op->emitError("convert-tsr-to-emitc: the CPU runtime has no ")
           << tensor.getElementType() << " tensors";
  };
  for (Type t : op->getOperandTypes())
    if (failed(check(t)))
      return failure();
  for (Type t : op->getResultTypes())
    if (failed(check(t)))
      return failure();
  for (const RuntimeArg &a : call.args())
    if (a.type && failed(check(a.type)))
      return failure();
  return success();
}

Attribute rankVariantValue(OpBuilder &b, Operation *op, StringRef name,
                           Attribute own) {
  auto values = getAttr<Dist::RankValuesAttrHelper>(op);
  auto rows = values ? values.getAs<ArrayAttr>(name) : ArrayAttr();
  if (!rows || rows.empty())
    return own;
  // Tables are numbered in the function: count those declared before.
  int64_t index = 0;
  for (Operation &prior : *b.getInsertionBlock())
    if (auto v = dyn_cast<emitc::VerbatimOp>(prior))
      if (v.getValue().starts_with("static const"))
        ++index;
  std::string table = "kRankValues" + std::to_string(index);
  std::string text = "static const ";
  if (isa<DenseI64ArrayAttr>(rows[0])) {
    text += "std::vector<int64_t> " + table + "[] = {";
    for (auto [i, row] : llvm::enumerate(rows))
      text += std::string(i ? ", " : "") + "{" +
              joinInts(cast<DenseI64ArrayAttr>(row).asArrayRef()) + "}";
  } else {
    text += "int64_t " + table + "[] = {";
    for (auto [i, row] : llvm::enumerate(rows))
      text += std::string(i ? ", " : "") +
              std::to_string(cast<IntegerAttr>(row).getInt());
  }
  emitc::VerbatimOp::create(b, op->getLoc(), b.getStringAttr(text + "};"),
                            ValueRange{});
  return emitc::OpaqueAttr::get(b.getContext(),
                                "tessera::rt::rankValue(" + table + ")");
}

namespace {

/// Lowers one op of a given dialect through its RuntimeCall.
class RuntimeCallLowering : public ConversionPattern {
public:
  RuntimeCallLowering(const TypeConverter &converter, MLIRContext *ctx,
                      StringRef dialectNamespace)
      : ConversionPattern(converter, MatchAnyOpTypeTag(), /*benefit=*/1, ctx),
        dialectNamespace(dialectNamespace.str()) {}

  LogicalResult
  matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rewriter) const override {
    Dialect *dialect = op->getDialect();
    if (!dialect || dialect->getNamespace() != dialectNamespace)
      return failure();
    auto iface = dyn_cast<RuntimeCallOpInterface>(op);
    if (!iface)
      return failure();
    RuntimeCall call = iface.getRuntimeCall();
    if (!call.isCall())
      return failure();

    MLIRContext *ctx = op->getContext();
    Location loc = op->getLoc();
    Type tensorType = emitc::OpaqueType::get(ctx, kRuntimeTensorType);
    auto opaque = [&](const Twine &text) -> Attribute {
      return emitc::OpaqueAttr::get(ctx, text.str());
    };

    // emitc.call_opaque's operands, and its args with an operand written
    // as its index (an IndexAttr) into them.
    SmallVector<Value> callOperands;
    SmallVector<Attribute> args;
    auto operandArg = [&](Value v) {
      args.push_back(rewriter.getIndexAttr(callOperands.size()));
      callOperands.push_back(v);
    };
    for (const RuntimeArg &a : call.args()) {
      switch (a.kind) {
      case RuntimeArg::Kind::Operand:
        operandArg(operands[a.index]);
        break;
      case RuntimeArg::Kind::NoTensor:
        args.push_back(opaque("tessera::rt::Tensor()"));
        break;
      case RuntimeArg::Kind::OperandList: {
        // tensorList(a, b, ...) builds the std::vector<Tensor>.
        auto list = emitc::CallOpaqueOp::create(
            rewriter, loc,
            TypeRange{emitc::OpaqueType::get(
                ctx, "std::vector<tessera::rt::Tensor>")},
            "tessera::rt::tensorList",
            ValueRange(operands.slice(a.index, a.count)), ArrayAttr(),
            ArrayAttr());
        operandArg(list.getResult(0));
        break;
      }
      case RuntimeArg::Kind::Int: {
        Attribute own = rewriter.getI64IntegerAttr(a.integer);
        args.push_back(
            a.rankVariant.empty()
                ? own
                : rankVariantValue(rewriter, op, a.rankVariant, own));
        break;
      }
      case RuntimeArg::Kind::Float:
        args.push_back(rewriter.getF64FloatAttr(a.real));
        break;
      case RuntimeArg::Kind::Bool:
        args.push_back(opaque(a.flag ? "true" : "false"));
        break;
      case RuntimeArg::Kind::Ints: {
        Attribute own =
            opaque("std::vector<int64_t>{" + joinInts(a.integers) + "}");
        args.push_back(
            a.rankVariant.empty()
                ? own
                : rankVariantValue(rewriter, op, a.rankVariant, own));
        break;
      }
      case RuntimeArg::Kind::Shape:
        args.push_back(shapeLiteral(ctx, a.type));
        break;
      case RuntimeArg::Kind::DType:
        // verifyEmittable (run by the pass first) checked the dtype.
        args.push_back(dtypeLiteral(ctx, a.type));
        break;
      case RuntimeArg::Kind::Enum:
        args.push_back(opaque("tessera::rt::" + a.enumType + "::" + a.text));
        break;
      }
    }

    std::string callee = "tessera::rt::" + call.callee().str();
    unsigned n = op->getNumResults();
    auto create = [&](TypeRange types) {
      return emitc::CallOpaqueOp::create(
          rewriter, loc, types, rewriter.getStringAttr(callee), callOperands,
          rewriter.getArrayAttr(args), ArrayAttr());
    };
    switch (call.results()) {
    case RuntimeResults::None:
      create(TypeRange{});
      rewriter.eraseOp(op);
      return success();
    case RuntimeResults::Tensor:
      rewriter.replaceOp(op, create(TypeRange{tensorType}).getResults());
      return success();
    case RuntimeResults::Tuple: {
      std::string tupleType = "std::tuple<";
      for (unsigned i = 0; i < n; ++i)
        tupleType += std::string(i ? ", " : "") + kRuntimeTensorType;
      tupleType += ">";
      Value t = create(TypeRange{emitc::OpaqueType::get(ctx, tupleType)})
                    .getResult(0);
      SmallVector<Value> results;
      for (unsigned i = 0; i < n; ++i)
        results.push_back(
            emitc::CallOpaqueOp::create(
                rewriter, loc, TypeRange{tensorType}, "std::get", ValueRange{t},
                ArrayAttr(),
                rewriter.getArrayAttr({rewriter.getI32IntegerAttr(i)}))
                .getResult(0));
      rewriter.replaceOp(op, results);
      return success();
    }
    case RuntimeResults::List: {
      Value list = create(TypeRange{emitc::OpaqueType::get(
                              ctx, "std::vector<tessera::rt::Tensor>")})
                       .getResult(0);
      SmallVector<Value> results;
      for (unsigned i = 0; i < n; ++i)
        results.push_back(emitc::LoadOp::create(
            rewriter, loc, tensorType, tensorSlot(rewriter, loc, list, i)));
      rewriter.replaceOp(op, results);
      return success();
    }
    }
    return failure();
  }

private:
  std::string dialectNamespace;
};

} // namespace

void populateRuntimeCallToEmitCPatterns(ConversionTarget &target,
                                        TypeConverter &typeConverter,
                                        RewritePatternSet &patterns,
                                        StringRef dialectNamespace) {
  target.addIllegalDialect(dialectNamespace);
  patterns.add<RuntimeCallLowering>(typeConverter, patterns.getContext(),
                                    dialectNamespace);
}

} // namespace tessera
