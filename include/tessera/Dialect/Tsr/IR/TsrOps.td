//===- TsrOps.td - tsr operations ---------------------------*- tablegen -*-===//
//
// Operators of the single-device training graph. Each op passes its
// dimension annotation to Tsr_Op: it becomes the op's static
// getAnnotationTemplate() and the first line of its documentation.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_DIALECT_TSR_IR_TSROPS_TD
#define TESSERA_DIALECT_TSR_IR_TSROPS_TD

include "tessera/Dialect/Tsr/IR/TsrDialect.td"
include "tessera/Interfaces/TesseraOpBase.td"
include "tessera/Interfaces/GradientInterface.td"
include "tessera/Interfaces/RankVariantInterface.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ViewLikeInterface.td"

//===----------------------------------------------------------------------===//
// Types and enums
//===----------------------------------------------------------------------===//

// Every tensor of a tsr op holds at most 2^48 elements (256 Ti): element
// counts, byte sizes and their sums in the passes, the planner and the
// runtime then fit in int64_t, whatever shapes an input file claims.
class Tsr_TensorOf<list<Type> allowedTypes>
    : Type<And<[StaticShapeTensorOf<allowedTypes>.predicate,
                CPred<"::tessera::tsr::hasBoundedElementCount($_self)">]>,
           StaticShapeTensorOf<allowedTypes>.summary #
               " of at most 2^48 elements",
           "::mlir::TensorType">;

// f64 is for reference runs (gradient checks against finite differences).
def Tsr_FloatTensor : Tsr_TensorOf<[F32, F64, BF16, F16]>;
def Tsr_IndexTensor : Tsr_TensorOf<[I32, I64]>;
def Tsr_BoolTensor : Tsr_TensorOf<[I1]>;
def Tsr_AnyTensor : Tsr_TensorOf<[F32, F64, BF16, F16, I32, I64, I1]>;
def Tsr_NumericTensor : Tsr_TensorOf<[F32, F64, BF16, F16, I32, I64]>;

def Tsr_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "how gelu evaluates the normal CDF", [
      I32EnumAttrCase<"exact", 0>,
      I32EnumAttrCase<"tanh", 1>]> {
  let cppNamespace = "::tessera::tsr";
}

def Tsr_ComparePredicate : I32EnumAttr<"ComparePredicate",
    "comparison predicate", [
      I32EnumAttrCase<"eq", 0>, I32EnumAttrCase<"ne", 1>,
      I32EnumAttrCase<"lt", 2>, I32EnumAttrCase<"le", 3>,
      I32EnumAttrCase<"gt", 4>, I32EnumAttrCase<"ge", 5>]> {
  let cppNamespace = "::tessera::tsr";
}

def Tsr_LossReduction : I32EnumAttr<"LossReduction",
    "how a per-sample loss is reduced", [
      I32EnumAttrCase<"mean", 0>, I32EnumAttrCase<"sum", 1>,
      I32EnumAttrCase<"none", 2>]> {
  let cppNamespace = "::tessera::tsr";
}

def Tsr_NonNegativeFloat : AttrConstraint<
    CPred<"!::llvm::cast<::mlir::FloatAttr>($_self).getValue().isNegative()">,
    "whose value is non-negative">;
// NaN and infinity are not negative, but as an epsilon they turn every
// output into NaN or zero.
def Tsr_FiniteNonNegativeFloat : AttrConstraint<
    CPred<"::llvm::cast<::mlir::FloatAttr>($_self).getValue().isFinite() && "
          "!::llvm::cast<::mlir::FloatAttr>($_self).getValue().isNegative()">,
    "whose value is finite and non-negative">;

// Ops with a gradient rule (TsrGradients.cpp) for tsr-autodiff.
def Tsr_Differentiable : DeclareOpInterfaceMethods<GradientOpInterface>;

// The runtime returns a view of the input's storage (no copy): always for
// reshape; for cast and broadcast_to when the result type equals the
// input's, and their getViewSource() is null otherwise (TsrOps.cpp).
// Memory prediction counts a view's storage once.
def Tsr_View : DeclareOpInterfaceMethods<ViewLikeOpInterface>;
def Tsr_ViewWhenIdentity : DeclareOpInterfaceMethods<ViewLikeOpInterface>;

//===----------------------------------------------------------------------===//
// Base classes
//===----------------------------------------------------------------------===//

// The common record of a tsr op: annotation, runtime call and cost
// (tessera/Interfaces/TesseraOpBase.td).
class Tsr_Op<string mnemonic, string annotationText, list<Trait> traits = [],
             list<string> annotationOverrides = []>
    : Tessera_Op<Tsr_Dialect, mnemonic, annotationText, traits,
                 annotationOverrides>;

// Elementwise ops on one float tensor. `scalarFn` is the op on one f32 `x`
// (a C++ expression): the folder applies it to constant operands, so the
// op's meaning on constants is stated once, here. `foldFirst` is C++ run
// before that (algebraic rules such as neg(neg(x)) = x).
class Tsr_UnaryOp<string mnemonic, string summaryText, code scalarFn,
                  code foldFirst = "">
    : Tsr_Op<mnemonic, "* -> *",
             [Pure, SameOperandsAndResultType, Tsr_Differentiable]> {
  let summary = summaryText;
  let arguments = (ins Tsr_FloatTensor:$input);
  let results = (outs Tsr_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasFolder = 1;
  let extraDefinitions = [{
    ::mlir::OpFoldResult $cppClass::fold(FoldAdaptor adaptor) {
      }] # foldFirst # [{
      return foldUnaryF32(adaptor.getInput(), getType(),
                          [](float x) -> float { return }] # scalarFn # [{; });
    }
  }];
}

// Elementwise ops on two float tensors with numpy broadcasting. `scalarFn`
// is the op on f32 `a` and `b`, folded on constants (splats, or dense
// operands with a result of at most 2^16 elements); `identity` is the right
// operand's value for which the op returns its left operand.
class Tsr_BinaryOp<string mnemonic, string summaryText, string identity,
                   code scalarFn, list<Trait> traits = []>
    : Tsr_Op<mnemonic, "*, * -> *",
             !listconcat(traits, [Pure, InferTypeOpAdaptor,
                                  Tsr_Differentiable])> {
  let summary = summaryText;
  let opDescription = [{
    Shapes broadcast as in numpy (and ONNX): aligned to the right, a
    dimension of size 1 stretches to the other operand's size.
  }];
  let arguments = (ins Tsr_FloatTensor:$lhs, Tsr_FloatTensor:$rhs);
  let results = (outs Tsr_FloatTensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
  let extraDefinitions = [{
    ::mlir::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return inferBroadcast(loc, "operands", adaptor.getLhs(),
                            adaptor.getRhs(), types);
    }
    ::mlir::OpFoldResult $cppClass::fold(FoldAdaptor adaptor) {
      return foldBinary(*this, adaptor.getLhs(), adaptor.getRhs(), }] #
      identity # [{,
          [](float a, float b) -> float { return }] # scalarFn # [{; });
    }
  }];
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

def Tsr_NegOp : Tsr_UnaryOp<"neg", "elementwise negation", [{-x}], [{
  if (auto inner = getInput().getDefiningOp<NegOp>())
    return inner.getInput();
}]>;
def Tsr_ExpOp : Tsr_UnaryOp<"exp", "elementwise exponential", [{std::exp(x)}]>;
def Tsr_LogOp
    : Tsr_UnaryOp<"log", "elementwise natural logarithm", [{std::log(x)}]>;
def Tsr_SqrtOp : Tsr_UnaryOp<"sqrt", "elementwise square root", [{std::sqrt(x)}]>;
def Tsr_RsqrtOp : Tsr_UnaryOp<"rsqrt", "elementwise reciprocal square root",
                              [{1.0f / std::sqrt(x)}]>;
def Tsr_ErfOp
    : Tsr_UnaryOp<"erf", "elementwise Gauss error function", [{std::erf(x)}]>;
def Tsr_TanhOp
    : Tsr_UnaryOp<"tanh", "elementwise hyperbolic tangent", [{std::tanh(x)}]>;
def Tsr_ReluOp : Tsr_UnaryOp<"relu", "elementwise max(x, 0)", [{x > 0 ? x : 0.0f}], [{
  if (auto inner = getInput().getDefiningOp<ReluOp>())
    return inner.getResult();
}]>;
def Tsr_SigmoidOp : Tsr_UnaryOp<"sigmoid",
    "elementwise logistic sigmoid 1 / (1 + exp(-x))",
    [{1.0f / (1.0f + std::exp(-x))}]>;
def Tsr_SinOp : Tsr_UnaryOp<"sin", "elementwise sine", [{std::sin(x)}]>;
def Tsr_CosOp : Tsr_UnaryOp<"cos", "elementwise cosine", [{std::cos(x)}]>;

def Tsr_GeluOp : Tsr_Op<"gelu", "* -> *", [Tsr_Differentiable, Pure, SameOperandsAndResultType]> {
  let rtArgs = [{.operands().flag(getApproximate() == GeluApproximation::tanh)}];
  let summary = "Gaussian error linear unit (exact or tanh approximation)";
  let opDescription = [{
    `exact`: x * Phi(x) with the normal CDF through erf;
    `tanh`: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
  }];
  let arguments = (ins Tsr_GeluApproximation:$approximate,
                       Tsr_FloatTensor:$input);
  let results = (outs Tsr_FloatTensor:$result);
  let assemblyFormat = "$approximate $input attr-dict `:` type($input)";
}

def Tsr_AddOp : Tsr_BinaryOp<"add", "elementwise addition", "0.0", [{a + b}],
                             [Commutative]>;
def Tsr_SubOp
    : Tsr_BinaryOp<"sub", "elementwise subtraction", "0.0", [{a - b}]>;
def Tsr_MulOp : Tsr_BinaryOp<"mul", "elementwise multiplication", "1.0",
                             [{a * b}], [Commutative]>;
def Tsr_DivOp
    : Tsr_BinaryOp<"div", "elementwise division", "1.0", [{a / b}]>;
def Tsr_PowOp : Tsr_BinaryOp<"pow", "elementwise power lhs ^ rhs", "1.0",
                             [{std::pow(a, b)}]>;

def Tsr_CompareOp : Tsr_Op<"compare", "*, * -> *", [Pure, InferTypeOpAdaptor]> {
  let rtArgs = [{.enumValue("Compare", stringifyComparePredicate(getPredicate())).operands()}];
  let summary = "elementwise comparison giving an i1 mask";
  let opDescription = [{
    Both operands have the same element type; shapes broadcast as in numpy.
  }];
  let arguments = (ins Tsr_ComparePredicate:$predicate,
                       Tsr_NumericTensor:$lhs, Tsr_NumericTensor:$rhs);
  let results = (outs Tsr_BoolTensor:$result);
  let assemblyFormat = [{
    $predicate `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
}

def Tsr_WhereOp : Tsr_Op<"where", "*, *, * -> *", [Tsr_Differentiable, Pure, InferTypeOpAdaptor]> {
  let summary = "elementwise select: condition ? lhs : rhs";
  let opDescription = [{
    The three operands broadcast as in numpy; lhs and rhs share their
    element type.
  }];
  let arguments = (ins Tsr_BoolTensor:$condition, Tsr_AnyTensor:$lhs,
                       Tsr_AnyTensor:$rhs);
  let results = (outs Tsr_AnyTensor:$result);
  let assemblyFormat = [{
    $condition `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
}

def Tsr_CastOp : Tsr_Op<"cast", "* -> *", [Tsr_Differentiable, Pure, Tsr_ViewWhenIdentity]> {
  let rtArgs = [{.operands().dtype(getType())}];
  let summary = "elementwise conversion of the element type";
  let opDescription = [{
    Float to integer rounds toward zero; to i1 compares with zero.
  }];
  let arguments = (ins Tsr_AnyTensor:$input);
  let results = (outs Tsr_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tsr_ConstantOp : Tsr_Op<"constant", "-> *",
    [ConstantLike, Pure, AllTypesMatch<["value", "result"]>]> {
  // Materialised by the program frame (literals or the constants file).
  let rtCallee = "";
  let summary = "a tensor constant";
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Tsr_AnyTensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def Tsr_DropoutOp : Tsr_Op<"dropout", "* -> *, *", [Tsr_Differentiable, InferTypeOpAdaptor,
    DeclareOpInterfaceMethods<RankVariantOpInterface, ["getRankVariantAttrNames"]>]> {
  let rtArgs = [{.operands().f64(getRatio()).i64(int64_t(getSeed()))
                    .ints(getGlobalShape().value_or(ArrayRef<int64_t>{}))
                    .ints(getOffsets().value_or(ArrayRef<int64_t>{}), "offsets")}];
  let summary = "training-mode dropout with its keep mask";
  let opDescription = [{
    Zeroes each element with probability `ratio` and scales the kept ones
    by 1 / (1 - ratio); `mask` records which were kept (for the backward).
    The mask is a function of `seed`, the run's base seed, the training step
    and each element's position in the op's whole tensor, so it is the same
    in every plan. dist-partition marks a piece of the whole with `offsets`
    (where the piece starts) and `global_shape` (the whole's shape): a
    rank's or a micro-batch's piece draws its part of the single-device
    mask. Not `Pure`: two dropouts with the same operands and seeds draw
    different masks in different steps.
  }];
  let arguments = (ins Tsr_FloatTensor:$input,
                       ConfinedAttr<F64Attr, [Tsr_NonNegativeFloat]>:$ratio,
                       DefaultValuedAttr<I64Attr, "0">:$seed,
                       OptionalAttr<DenseI64ArrayAttr>:$offsets,
                       OptionalAttr<DenseI64ArrayAttr>:$global_shape);
  let results = (outs Tsr_FloatTensor:$output, Tsr_BoolTensor:$mask);
  // The attributes are spelled out (not in attr-dict) because the result
  // types are inferred while parsing, before attr-dict entries reach the
  // op's properties.
  let assemblyFormat = [{
    $input `ratio` $ratio (`seed` $seed^)?
    (`piece` $offsets^ `of` $global_shape)? attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Contractions and normalisations
//===----------------------------------------------------------------------===//

def Tsr_MatmulOp : Tsr_Op<"matmul", "* m k+, * k+ n -> * m n",
    [Tsr_Differentiable, Pure, InferTypeOpAdaptor]> {
  let flops = [{2.0 * double(getType().getNumElements()) *
                   double(getLhs().getType().getShape().back())}];
  let summary = "batched matrix product with broadcasting batch dimensions";
  let opDescription = [{
    Both operands have rank >= 2: the last two dimensions multiply as
    matrices (m x k times k x n), the leading ones broadcast as in numpy.
    Splitting `k` leaves partial sums.
  }];
  let arguments = (ins Tsr_FloatTensor:$lhs, Tsr_FloatTensor:$rhs);
  let results = (outs Tsr_FloatTensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

// Ops along one `axis` of their operands' common type (the softmax
// family): the verifier checks `axis` against the rank, and the annotation
// marks that dimension (d^) whatever the rank.
class Tsr_AxisOp<string mnemonic, string annotationText, int numInputs,
                 list<Trait> traits = []>
    : Tsr_Op<mnemonic, annotationText,
             !listconcat(traits, [Pure, SameOperandsAndResultType]),
             ["buildAnnotation"]> {
  let rtArgs = [{.operands().i64(getAxis())}];
  let results = (outs Tsr_FloatTensor:$result);
  let hasVerifier = 1;
  let extraDefinitions = [{
    ::mlir::LogicalResult $cppClass::verify() {
      return checkAxis(getLoc(), getAxis(), getType().getRank());
    }
    ::tessera::Result<::tessera::annotation::Annotation>
    $cppClass::buildAnnotation() {
      return axisAnnotation(getType().getRank(), getAxis(), }] #
      numInputs # [{);
    }
  }];
}

def Tsr_SoftmaxOp
    : Tsr_AxisOp<"softmax", "* d^ -> * d^", 1, [Tsr_Differentiable]> {
  let summary = "softmax along one axis";
  let opDescription = "`d` is the `axis` dimension.";
  let arguments = (ins Tsr_FloatTensor:$input, I64Attr:$axis);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Tsr_LogSoftmaxOp
    : Tsr_AxisOp<"log_softmax", "* d^ -> * d^", 1, [Tsr_Differentiable]> {
  let summary = "log of the softmax along one axis";
  let opDescription = "`d` is the `axis` dimension.";
  let arguments = (ins Tsr_FloatTensor:$input, I64Attr:$axis);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Tsr_LayerNormOp : Tsr_Op<"layer_norm", "* d^, d^, d^ -> * d^, * 1, * 1",
    [Tsr_Differentiable, Pure, InferTypeOpAdaptor], ["buildAnnotation"]> {
  let rtArgs = [{.tensor(getInput()).tensor(getWeight()).tensor(getBias())
                    .i64(getAxis()).f64(getEpsilon())}];
  let summary = "layer normalisation with its mean and reciprocal std";
  let opDescription = [{
    Normalises over the dimensions from `axis` to the last (`d` above stands
    for all of them): y = (x - mean) * rstd * weight + bias, with
    rstd = 1 / sqrt(var + epsilon). `weight` and the optional `bias` have the
    normalised shape. `mean` and `rstd` keep the leading dimensions and have
    size 1 in the normalised ones (as ONNX's LayerNormalization); the
    backward op reuses them.
  }];
  let arguments = (ins Tsr_FloatTensor:$input, Tsr_FloatTensor:$weight,
                       Optional<Tsr_FloatTensor>:$bias,
                       I64Attr:$axis,
                       ConfinedAttr<F64Attr, [Tsr_FiniteNonNegativeFloat]>:$epsilon);
  let results = (outs Tsr_FloatTensor:$result, Tsr_FloatTensor:$mean,
                      Tsr_FloatTensor:$rstd);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class Tsr_ReduceOp<string mnemonic, string summaryText, string markText>
    : Tsr_Op<mnemonic, "* -> *", [Pure, InferTypeOpAdaptor, Tsr_Differentiable],
             ["buildAnnotation"]> {
  // One operation per input element (the default counts the result's,
  // which a reduction makes smaller by the reduced dimensions).
  let flops = [{double(getInput().getType().getNumElements())}];
  let rtArgs = [{.operands().ints(getAxes()).flag(getKeepdims())}];
  let summary = summaryText;
  let opDescription = "The `axes` dimensions are marked `" # markText # [{`
    and removed from the result, or kept with size 1 when `keepdims`.
    `axes` is non-empty, in range and without repeats.
  }];
  let arguments = (ins Tsr_FloatTensor:$input, DenseI64ArrayAttr:$axes,
                       DefaultValuedAttr<BoolAttr, "false">:$keepdims);
  let results = (outs Tsr_FloatTensor:$result);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
}

def Tsr_ReduceSumOp : Tsr_ReduceOp<"reduce_sum", "sum over axes", "+">;
def Tsr_ReduceMeanOp : Tsr_ReduceOp<"reduce_mean", "mean over axes", "+"> {
  let opDescription = [{
    The `axes` dimensions are marked `+` and removed from the result, or
    kept with size 1 when `keepdims`. `axes` is non-empty, in range and
    without repeats. A split of a reduced dimension divides the local sums by
    the GLOBAL count (the partition pass keeps it), so that the partial
    results add up to the mean.
  }];
}
def Tsr_ReduceMaxOp : Tsr_ReduceOp<"reduce_max", "maximum over axes", "^">;

//===----------------------------------------------------------------------===//
// Shapes and data movement
//===----------------------------------------------------------------------===//

def Tsr_ReshapeOp : Tsr_Op<"reshape", "* -> *", [Tsr_Differentiable, Pure, Tsr_View], ["buildAnnotation"]> {
  let rtArgs = [{.operands().shape(getType())}];
  let summary = "reshape to a static shape with the same number of elements";
  let opDescription = [{
    The annotation groups dimensions whose products match, nnScaler-style:
    reshaping `b t c` to `b t h e` gives `b t (h e) -> b t h e`, so `h`
    (heads) may be split but not `e`. Dimensions with no exact
    correspondence are marked `^`.
  }];
  let arguments = (ins Tsr_AnyTensor:$input);
  let results = (outs Tsr_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tsr_TransposeOp : Tsr_Op<"transpose", "* -> *",
    [Tsr_Differentiable, Pure, InferTypeOpAdaptor], ["buildAnnotation"]> {
  let rtArgs = [{.operands().ints(getPerm())}];
  let summary = "permute dimensions: result dim i is input dim perm[i]";
  let arguments = (ins Tsr_AnyTensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Tsr_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasFolder = 1;
}

def Tsr_BroadcastToOp : Tsr_Op<"broadcast_to", "* -> *", [Tsr_Differentiable, Pure, Tsr_ViewWhenIdentity],
    ["buildAnnotation"]> {
  let rtArgs = [{.operands().shape(getType())}];
  let summary = "broadcast to the result shape (numpy rules, as ONNX Expand)";
  let arguments = (ins Tsr_AnyTensor:$input);
  let results = (outs Tsr_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tsr_SliceOp : Tsr_Op<"slice", "* -> *", [Tsr_Differentiable, Pure, InferTypeOpAdaptor,
    DeclareOpInterfaceMethods<RankVariantOpInterface, ["getRankVariantAttrNames"]>],
    ["buildAnnotation"]> {
  let rtArgs = [{.operands().ints(getStarts(), "starts")
                    .ints(getLimits(), "limits").ints(getSteps())}];
  let summary = "strided slice of every dimension";
  let opDescription = [{
    For each dimension i: elements starts[i], starts[i] + steps[i], ... below
    limits[i]; 0 <= starts[i] <= limits[i] <= size, steps[i] >= 1. Sliced
    dimensions are `^`; dimensions taken whole stay splittable.
  }];
  let arguments = (ins Tsr_AnyTensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$limits, DenseI64ArrayAttr:$steps);
  let results = (outs Tsr_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasFolder = 1;
}

def Tsr_SplitOp : Tsr_Op<"split", "* -> *, ...", [Tsr_Differentiable, Pure, InferTypeOpAdaptor],
    ["buildAnnotation"]> {
  let rtArgs = [{.operands().i64(getAxis()).ints(getSizes()).returnsList()}];
  let summary = "split along one axis into pieces of the given sizes";
  let opDescription = "The split axis is `^`.";
  let arguments = (ins Tsr_AnyTensor:$input, I64Attr:$axis,
                       DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<Tsr_AnyTensor>:$results);
  let assemblyFormat =
      "$input attr-dict `:` type($input) `->` type($results)";
}

def Tsr_ConcatOp : Tsr_Op<"concat", "*, ... -> *", [Tsr_Differentiable, Pure, InferTypeOpAdaptor],
    ["buildAnnotation"]> {
  let rtArgs = [{.operandList().i64(getAxis())}];
  let summary = "concatenate along one axis";
  let opDescription = "The concatenation axis is `^`.";
  let arguments = (ins Variadic<Tsr_AnyTensor>:$inputs, I64Attr:$axis);
  let results = (outs Tsr_AnyTensor:$result);
  let assemblyFormat =
      "$inputs attr-dict `:` functional-type($inputs, results)";
  let hasFolder = 1;
}

def Tsr_GatherOp : Tsr_Op<"gather", "v+ c, * -> * c",
    [Tsr_Differentiable, Pure, InferTypeOpAdaptor], ["buildAnnotation"]> {
  let rtArgs = [{.operands().i64(getAxis())}];
  let summary = "gather slices of data along an axis (embedding lookup)";
  let opDescription = [{
    As ONNX Gather: the result has data's dimensions before `axis`, then
    the indices' dimensions, then data's after `axis`. The template shows
    the embedding case (axis 0). Indices must lie in [0, size). On axis 0
    the table's rows may be split (a vocabulary-parallel embedding: each
    piece gives the rows of the indices in its range and zeros for the
    others, which add up to the whole; dist-partition makes the piece); on
    another axis the gathered dimension is `^`.
  }];
  let arguments = (ins Tsr_AnyTensor:$data, Tsr_IndexTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Tsr_AnyTensor:$result);
  let assemblyFormat =
      "$data `[` $indices `]` attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

def Tsr_SoftmaxCrossEntropyOp : Tsr_Op<"softmax_cross_entropy",
    "n+ c+, n+ -> ()", [Tsr_Differentiable, Pure, InferTypeOpAdaptor], ["buildAnnotation"]> {
  // Counted per logit, as its gradient is (the default would count the
  // loss's elements: one, or N): the calibrated rate
  // (tessera-calibrate --profile-db) prices the exponential in each.
  let flops = [{double(getLogits().getType().getNumElements())}];
  let rtArgs = [{.operands().i64(getIgnoreIndex())
                    .enumValue("Reduction", stringifyLossReduction(getReduction()))}];
  let summary = "cross-entropy of softmax(logits) against class labels";
  let opDescription = [{
    logits are N x C, labels N class ids. Samples whose label equals
    `ignore_index` contribute nothing; `mean` divides by the number of the
    others, `sum` does not divide, `none` returns the N per-sample losses
    (annotation `n c+, n -> n`). The classes may be split (a
    vocabulary-parallel cross-entropy, `sum` and `none`): dist-partition
    computes each piece's share with the row maximum and the sum of
    exponentials reduced over the pieces, so that the shares add up to the
    loss.
  }];
  let arguments = (ins Tsr_FloatTensor:$logits, Tsr_IndexTensor:$labels,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
                       DefaultValuedAttr<Tsr_LossReduction,
                                         "LossReduction::mean">:$reduction);
  let results = (outs Tsr_FloatTensor:$loss);
  let assemblyFormat = [{
    $reduction $logits `,` $labels attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Backward ops: gradients the forward ops cannot express well
//===----------------------------------------------------------------------===//

def Tsr_SoftmaxGradOp : Tsr_AxisOp<"softmax_grad", "* d^, * d^ -> * d^", 2> {
  let summary = "input gradient of softmax from its output and output gradient";
  let opDescription = "dx = y * (dy - sum(dy * y, axis)).";
  let arguments = (ins Tsr_FloatTensor:$output, Tsr_FloatTensor:$grad,
                       I64Attr:$axis);
  let assemblyFormat = "$output `,` $grad attr-dict `:` type($output)";
}

def Tsr_LogSoftmaxGradOp
    : Tsr_AxisOp<"log_softmax_grad", "* d^, * d^ -> * d^", 2> {
  let summary = "input gradient of log_softmax from its output and gradient";
  let opDescription = "dx = dy - exp(y) * sum(dy, axis).";
  let arguments = (ins Tsr_FloatTensor:$output, Tsr_FloatTensor:$grad,
                       I64Attr:$axis);
  let assemblyFormat = "$output `,` $grad attr-dict `:` type($output)";
}

def Tsr_GeluGradOp : Tsr_Op<"gelu_grad", "*, * -> *",
    [Pure, SameOperandsAndResultType]> {
  let rtArgs = [{.operands().flag(getApproximate() == GeluApproximation::tanh)}];
  let summary = "input gradient of gelu: dy * gelu'(x)";
  let arguments = (ins Tsr_GeluApproximation:$approximate,
                       Tsr_FloatTensor:$input, Tsr_FloatTensor:$grad);
  let results = (outs Tsr_FloatTensor:$result);
  let assemblyFormat =
      "$approximate $input `,` $grad attr-dict `:` type($input)";
}

def Tsr_LayerNormGradOp : Tsr_Op<"layer_norm_grad",
    "*+ d^, *+ d^, d^, *+ 1, *+ 1 -> * d^, d^, d^",
    [Pure, InferTypeOpAdaptor], ["buildAnnotation"]> {
  let rtArgs = [{.operands().i64(getAxis())}];
  let summary = "gradients of layer_norm for its input, weight and bias";
  let opDescription = [{
    Operands: the output gradient dy, the forward input x, weight, and the
    forward's mean and rstd. Results: dx, dweight, dbias. The leading
    dimensions are `+`: a split of them shards dx and leaves dweight and
    dbias as partial sums.
  }];
  let arguments = (ins Tsr_FloatTensor:$grad, Tsr_FloatTensor:$input,
                       Tsr_FloatTensor:$weight, Tsr_FloatTensor:$mean,
                       Tsr_FloatTensor:$rstd, I64Attr:$axis);
  let results = (outs Tsr_FloatTensor:$input_grad,
                      Tsr_FloatTensor:$weight_grad,
                      Tsr_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $grad `,` $input `,` $weight `,` $mean `,` $rstd attr-dict `:`
    functional-type(operands, results)
  }];
}

def Tsr_SoftmaxCrossEntropyGradOp : Tsr_Op<"softmax_cross_entropy_grad",
    "n c, n, () -> n c", [Pure, InferTypeOpAdaptor], ["buildAnnotation"]> {
  let rtArgs = [{.operands().i64(getIgnoreIndex())
                    .enumValue("Reduction", stringifyLossReduction(getReduction()))}];
  let summary = "logits gradient of softmax_cross_entropy";
  let opDescription = [{
    dlogits = (softmax(logits) - onehot(labels)) * dloss (divided by the
    number of counted samples for `mean`); ignored samples get zero. dloss
    is rank-0 for `mean` and `sum`, N for `none` (annotation
    `n c, n, n -> n c`). Split classes (`sum`, `none`): each piece from the
    row maximum and the sum of exponentials reduced over the pieces.
  }];
  let arguments = (ins Tsr_FloatTensor:$logits, Tsr_IndexTensor:$labels,
                       Tsr_FloatTensor:$grad,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
                       DefaultValuedAttr<Tsr_LossReduction,
                                         "LossReduction::mean">:$reduction);
  let results = (outs Tsr_FloatTensor:$result);
  let assemblyFormat = [{
    $reduction $logits `,` $labels `,` $grad attr-dict `:`
    functional-type(operands, results)
  }];
}

def Tsr_EmbeddingGradOp : Tsr_Op<"embedding_grad", "*+ c, *+ -> v c",
    [Pure]> {
  let rtArgs = [{.operands().shape(getType())}];
  let summary = "table gradient of gather on axis 0 (a scatter-add)";
  let opDescription = [{
    result[indices[i], :] += grad[i, :] over all positions i, into a zero
    table of the result's shape (V x C). Splitting the index dimensions
    leaves partial sums.
  }];
  let arguments = (ins Tsr_FloatTensor:$grad, Tsr_IndexTensor:$indices);
  let results = (outs Tsr_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $indices attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

// Rank-0 hyperparameters: buildable, so the assembly omits their types.
def Tsr_ScalarF32 : 0DTensorOf<[F32]> {
  let builderCall = "::mlir::RankedTensorType::get({}, $_builder.getF32Type())";
}
def Tsr_ScalarI64 : 0DTensorOf<[I64]> {
  let builderCall =
      "::mlir::RankedTensorType::get({}, $_builder.getIntegerType(64))";
}

def Tsr_SgdUpdateOp : Tsr_Op<"sgd_update", "*, *, (), () -> *",
    [Pure, AllTypesMatch<["param", "grad", "result"]>]> {
  let summary = "one SGD step: param - lr * (grad + weight_decay * param)";
  let opDescription = [{
    Hyperparameters are rank-0 f32 operands, so the emitted program reads
    them at run time (`--lr`, `--weight-decay`).
  }];
  let arguments = (ins Tsr_FloatTensor:$param, Tsr_FloatTensor:$grad,
                       Tsr_ScalarF32:$lr, Tsr_ScalarF32:$weight_decay);
  let results = (outs Tsr_FloatTensor:$result);
  let assemblyFormat = [{
    $param `,` $grad `lr` $lr `weight_decay` $weight_decay attr-dict `:` type($param)
  }];
}

def Tsr_AdamwUpdateOp : Tsr_Op<"adamw_update",
    "*, *, *, *, (), (), (), (), (), () -> *, *, *",
    [Pure, AllTypesMatch<["param", "grad", "m", "v", "new_param", "new_m",
                          "new_v"]>]> {
  let summary = "one AdamW step (decoupled weight decay, bias-corrected)";
  let opDescription = [{
    As torch.optim.AdamW with t = `step` (1-based):
    p' = p (1 - lr wd); m' = b1 m + (1 - b1) g; v' = b2 v + (1 - b2) g^2;
    p'' = p' - lr (m' / (1 - b1^t)) / (sqrt(v' / (1 - b2^t)) + eps).
    Returns the new parameter and moments. Hyperparameters are rank-0
    operands read at run time.
  }];
  let arguments = (ins Tsr_FloatTensor:$param, Tsr_FloatTensor:$grad,
                       Tsr_FloatTensor:$m, Tsr_FloatTensor:$v,
                       Tsr_ScalarI64:$step, Tsr_ScalarF32:$lr,
                       Tsr_ScalarF32:$beta1, Tsr_ScalarF32:$beta2,
                       Tsr_ScalarF32:$eps, Tsr_ScalarF32:$weight_decay);
  let results = (outs Tsr_FloatTensor:$new_param, Tsr_FloatTensor:$new_m,
                      Tsr_FloatTensor:$new_v);
  let assemblyFormat = [{
    $param `,` $grad `,` $m `,` $v `step` $step `lr` $lr `betas` `(` $beta1 `,`
    $beta2 `)` `eps` $eps `weight_decay` $weight_decay attr-dict `:` type($param)
  }];
}

#endif // TESSERA_DIALECT_TSR_IR_TSROPS_TD
