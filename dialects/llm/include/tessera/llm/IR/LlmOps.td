//===- LlmOps.td - llm operations --------------------------*- tablegen -*-===//
//
// Each op is one Tessera_Op record (tessera/Interfaces/TesseraOpBase.td):
// annotation, runtime call and cost here, the gradient in LlmOps.cpp, the
// kernels in dialects/llm/runtime.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_LLM_IR_LLMOPS_TD
#define TESSERA_LLM_IR_LLMOPS_TD

include "tessera/llm/IR/LlmDialect.td"
include "tessera/Interfaces/GradientInterface.td"
include "tessera/Interfaces/TesseraOpBase.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Llm_FloatTensor : StaticShapeTensorOf<[F32, F64]>;

def Llm_Differentiable : DeclareOpInterfaceMethods<GradientOpInterface>;

// A finite scale factor.
def Llm_FiniteFloat : AttrConstraint<
    CPred<"::llvm::cast<::mlir::FloatAttr>($_self).getValue().isFinite()">,
    "whose value is finite">;

// An epsilon: NaN, infinity or a negative value would turn every output
// into NaN or zero.
def Llm_FiniteNonNegativeFloat : AttrConstraint<
    CPred<"::llvm::cast<::mlir::FloatAttr>($_self).getValue().isFinite() && "
          "!::llvm::cast<::mlir::FloatAttr>($_self).getValue().isNegative()">,
    "whose value is finite and non-negative">;

// The runtime calls are tessera::rt::llm::<name>, declared in
// tessera/llm/Runtime.h.
class Llm_Op<string mnemonic, string annotationText, list<Trait> traits = []>
    : Tessera_Op<Llm_Dialect, mnemonic, annotationText, traits> {
  let rtCallee = "llm::" # mnemonic;
  let rtHeader = "tessera/llm/Runtime.h";
}

def Llm_RmsNormOp : Llm_Op<"rms_norm", "* d^, d^ -> * d^, * 1",
    [Llm_Differentiable, Pure, InferTypeOpAdaptor]> {
  let summary = "RMS normalisation over the last dimension, with its rstd";
  let opDescription = [{
    y = x * rstd * weight with rstd = 1 / sqrt(mean(x^2) + epsilon) over
    the last dimension (LLaMA's RMSNorm). `rstd` keeps the leading
    dimensions and has size 1 in the last; the backward op reuses it.
  }];
  let arguments = (ins Llm_FloatTensor:$input, Llm_FloatTensor:$weight,
                       ConfinedAttr<F64Attr, [Llm_FiniteNonNegativeFloat]>:$epsilon);
  let results = (outs Llm_FloatTensor:$result, Llm_FloatTensor:$rstd);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` functional-type(operands, results)
  }];
  let rtArgs = [{.operands().f64(getEpsilon())}];
  // x^2, the row sum, and the scaling by rstd and weight.
  let flops = [{4.0 * double(getResult().getType().getNumElements())}];
}

def Llm_RmsNormGradOp : Llm_Op<"rms_norm_grad",
    "*+ d^, *+ d^, d^, *+ 1 -> * d^, d^", [Pure, InferTypeOpAdaptor]> {
  let summary = "the gradients of rms_norm's input and weight";
  let opDescription = [{
    From the gradient of y, the input x, the weight w and the forward's
    rstd r (per row, n = the last dimension's size):
    dx = r * (g*w - x * r^2 * mean(g*w*x)), dw = sum over rows of g*x*r.
  }];
  let arguments = (ins Llm_FloatTensor:$grad, Llm_FloatTensor:$input,
                       Llm_FloatTensor:$weight, Llm_FloatTensor:$rstd);
  let results = (outs Llm_FloatTensor:$input_grad,
                      Llm_FloatTensor:$weight_grad);
  let assemblyFormat = [{
    $grad `,` $input `,` $weight `,` $rstd attr-dict `:`
    functional-type(operands, results)
  }];
  let flops = [{8.0 * double(getInputGrad().getType().getNumElements())}];
}

def Llm_SiluOp : Llm_Op<"silu", "* -> *",
    [Llm_Differentiable, Pure, SameOperandsAndResultType]> {
  let summary = "elementwise x * sigmoid(x) (SiLU, swish)";
  let arguments = (ins Llm_FloatTensor:$input);
  let results = (outs Llm_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let flops = [{4.0 * double(getType().getNumElements())}];
}

def Llm_SwigluOp : Llm_Op<"swiglu", "*, * -> *",
    [Llm_Differentiable, Pure, SameOperandsAndResultType]> {
  let summary = "silu(gate) * up, the gated unit of a SwiGLU MLP";
  let opDescription = [{
    The elementwise core of LLaMA's MLP, down(silu(gate(x)) * up(x)): one
    pass over the two projections' outputs instead of three.
  }];
  let arguments = (ins Llm_FloatTensor:$gate, Llm_FloatTensor:$up);
  let results = (outs Llm_FloatTensor:$result);
  let assemblyFormat = "$gate `,` $up attr-dict `:` type($result)";
  let flops = [{5.0 * double(getType().getNumElements())}];
}

def Llm_RopeOp : Llm_Op<"rope", "* t d^, t d^, t d^ -> * t d^",
    [Llm_Differentiable, Pure, AllTypesMatch<["input", "result"]>,
     AllTypesMatch<["cos", "sin"]>]> {
  let summary = "rotary position embedding with cos/sin tables";
  let opDescription = [{
    y = x * cos + rotate(x) * sin over the last dimension d (even), for
    each position t of the second-to-last dimension; `cos` and `sin` are
    [t, d] tables (inputs, or computed by `llm.rope_tables`). `rotate`
    pairs element i with i + d/2 and maps (a, b) to (-b, a): Hugging
    Face's `rotate_half` (GPT-NeoX); with `interleaved` it pairs 2i with
    2i + 1 (Meta's original Llama and GPT-J). With `transpose` the op
    applies the transposed map, y = x * cos + rotate^T(x * sin), which is
    the gradient of the other (rope is linear in x). The tables get no
    gradient: they are position tables, not parameters.
  }];
  let arguments = (ins Llm_FloatTensor:$input, Llm_FloatTensor:$cos,
                       Llm_FloatTensor:$sin,
                       DefaultValuedAttr<BoolAttr, "false">:$interleaved,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose);
  let results = (outs Llm_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $cos `,` $sin attr-dict `:` type($input) `,` type($cos)
  }];
  let hasVerifier = 1;
  let rtArgs = [{.operands().flag(getInterleaved()).flag(getTranspose())}];
  let flops = [{3.0 * double(getType().getNumElements())}];
}

def Llm_RopeTablesOp : Llm_Op<"rope_tables", " -> t d^, t d^",
    [Pure, AllTypesMatch<["cos", "sin"]>]> {
  let summary = "the cos and sin tables of rotary position embedding";
  let opDescription = [{
    For positions p = 0..t-1 and frequencies f_j = theta^(-2j/d),
    j < d/2: cos[p, i] = cos(p f_j(i)), sin likewise, where j(i) = i mod
    d/2 (the halves layout that `llm.rope` uses by default) or i / 2 with
    `interleaved`. The sizes come from the result type [t, d], d even.
  }];
  let arguments = (ins ConfinedAttr<F64Attr, [Llm_FiniteNonNegativeFloat]>:$theta,
                       DefaultValuedAttr<BoolAttr, "false">:$interleaved);
  let results = (outs Llm_FloatTensor:$cos, Llm_FloatTensor:$sin);
  let assemblyFormat = "attr-dict `:` type($cos)";
  let hasVerifier = 1;
  let rtArgs = [{.f64(getTheta()).flag(getInterleaved())
                  .shape(getCos().getType()).dtype(getCos().getType())
                  .returnsTuple()}];
  let flops = [{2.0 * double(getCos().getType().getNumElements())}];
}

def Llm_RepeatKvOp : Llm_Op<"repeat_kv", "* h t d -> * (h r^) t d",
    [Llm_Differentiable, Pure]> {
  let summary = "repeat each key/value head for grouped-query attention";
  let opDescription = [{
    [.., h, t, d] -> [.., h * repeats, t, d]: output head i is input head
    i / repeats, as Hugging Face's `repeat_kv` (an expand and a reshape).
    The gradient sums each group of repeated heads.
  }];
  let arguments = (ins Llm_FloatTensor:$input,
                       ConfinedAttr<I64Attr, [IntMinValue<1>]>:$repeats);
  let results = (outs Llm_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
  let rtArgs = [{.operands().i64(getRepeats())}];
}

def Llm_AttentionOp : Llm_Op<"attention",
    "* t^ d^, * s^ d^, * s^ e^ -> * t^ e^, * t^ 1",
    [Llm_Differentiable, Pure, InferTypeOpAdaptor]> {
  let summary = "fused scaled dot-product attention, causal or not";
  let opDescription = [{
    y = softmax(scale * q k^T + mask) v over the last dimension, per
    leading index (batch and heads), with mask = -inf where key j > query
    i when `causal` (then t = s), and no mask otherwise. `lse` is each
    row's log-sum-exp of the masked, scaled scores, which the backward op
    reuses. The kernels never hold the [t, s] score matrix: they walk it
    in tiles with an online softmax (FlashAttention's scheme), so the
    op's memory is that of its operands and results, and a causal op
    computes only the tiles on or below the diagonal. tsr-raise makes it
    from the `softmax(q @ k^T * scale + mask) @ v` that PyTorch exports.
  }];
  let arguments = (ins Llm_FloatTensor:$query, Llm_FloatTensor:$key,
                       Llm_FloatTensor:$value,
                       ConfinedAttr<F64Attr, [Llm_FiniteFloat]>:$scale,
                       DefaultValuedAttr<BoolAttr, "false">:$causal);
  let results = (outs Llm_FloatTensor:$result, Llm_FloatTensor:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value attr-dict `:` functional-type(operands, results)
  }];
  let rtArgs = [{.operands().f64(getScale()).flag(getCausal())}];
  // q k^T and p v (2 t s d + 2 t s e), the exponentials and row sums; a
  // causal op computes about half of the [t, s] tiles.
  let flops = [{::tessera::llm::attentionFlops(
      getQuery().getType(), getKey().getType(), getValue().getType(),
      getCausal(), 1.0)}];
}

def Llm_AttentionGradOp : Llm_Op<"attention_grad",
    "* t^ e^, * t^ d^, * s^ d^, * s^ e^, * t^ e^, * t^ 1 -> * t^ d^, * s^ d^, * s^ e^",
    [Pure, InferTypeOpAdaptor]> {
  let summary = "the gradients of attention's query, key and value";
  let opDescription = [{
    From the gradient g of y, the operands, the forward's y and lse: with
    p = exp(scale * q k^T + mask - lse) recomputed tile by tile and
    D = rowsum(g * y): dv = p^T g, ds = p * (g v^T - D), dq = scale ds k,
    dk = scale ds^T q.
  }];
  let arguments = (ins Llm_FloatTensor:$grad, Llm_FloatTensor:$query,
                       Llm_FloatTensor:$key, Llm_FloatTensor:$value,
                       Llm_FloatTensor:$result, Llm_FloatTensor:$lse,
                       ConfinedAttr<F64Attr, [Llm_FiniteFloat]>:$scale,
                       DefaultValuedAttr<BoolAttr, "false">:$causal);
  let results = (outs Llm_FloatTensor:$query_grad, Llm_FloatTensor:$key_grad,
                      Llm_FloatTensor:$value_grad);
  let assemblyFormat = [{
    $grad `,` $query `,` $key `,` $value `,` $result `,` $lse attr-dict `:`
    functional-type(operands, results)
  }];
  let rtArgs = [{.operands().f64(getScale()).flag(getCausal())}];
  // Five products of the forward's size (q k^T again, p^T g, g v^T, ds k,
  // ds^T q).
  let flops = [{::tessera::llm::attentionFlops(
      getQuery().getType(), getKey().getType(), getValue().getType(),
      getCausal(), 2.5)}];
}

#endif // TESSERA_LLM_IR_LLMOPS_TD
