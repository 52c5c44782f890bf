//===- Passes.td - tsr passes -------------------------------*- tablegen -*-===//

#ifndef TESSERA_DIALECT_TSR_TRANSFORMS_PASSES_TD
#define TESSERA_DIALECT_TSR_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TsrAutodiff : Pass<"tsr-autodiff", "::mlir::ModuleOp"> {
  let summary = "Reverse-mode autodiff: the loss and every parameter's gradient";
  let description = [{
    For the function named by `func` (default: the only function with a
    result marked `tsr.loss`), builds `<func>_grad` with the same arguments
    and as results the loss (`tsr.loss`) and the gradient of every argument
    marked `tsr.param` (`tsr.grad = "<name>"`), in argument order. Other
    results (e.g. logits) are dropped. Each op's vector-Jacobian product
    comes from GradientOpInterface, so extension ops bring their own; an op
    on the path from a parameter to the loss without a gradient rule is an
    error at its location. A parameter the loss does not use gets a zero
    gradient.

    Activations are kept for the backward; recomputing them instead is a
    plan choice (a plan file's `recompute` entries, applied by
    dist-recompute).

    Every op of the backward is marked `tsr.backward`, so that pipeline
    staging and schedules can tell it from the forward; where the forward op
    it differentiates has a name (the ONNX node), the mark is that name.
  }];
  let options = [
    Option<"funcName", "func", "std::string", /*default=*/"\"\"",
           "The function to differentiate (default: the one with a tsr.loss result)">,
  ];
  let dependentDialects = ["::tessera::tsr::TsrDialect",
                           "::mlir::func::FuncDialect"];
}

def TsrOptimizer : Pass<"tsr-optimizer", "::mlir::ModuleOp"> {
  let summary = "Build the whole training step: micro-batches, clipping, update";
  let description = [{
    From the gradient function built by tsr-autodiff (`func`, default: the
    only function with `tsr.grad` results), builds `train_step_<optimizer>`,
    marked `tsr.train_step = "<optimizer>"` (passes find steps by the mark):

        (params, optimizer state, data inputs, hyperparameters, step)
            -> (loss, gradient norm, new params, new state)

    The step computes the gradients' global L2 norm (result `tsr.grad_norm`)
    and, when the run-time hyperparameter `clip_norm` is > 0, scales the
    gradients as torch's clip_grad_norm_ does: by min(1, clip_norm /
    (norm + 1e-6)); with `clip_norm` 0 the scale is exactly 1. The option
    `clip-norm` is `clip_norm`'s default (`tsr.hyper_default`), which the
    run's `--clip-norm` overrides. The update
    is SGD (`tsr.sgd_update`) or AdamW (`tsr.adamw_update`, with moments `m`
    and `v` per parameter). Hyperparameters are rank-0 arguments
    (`tsr.hyper`) so the emitted program reads them from its command line.

    Gradient accumulation over micro-batches is not a loop here: it is the
    micro-batch axis of `dist-partition` (which also serves pipeline
    micro-batches), so `tessera-compile --micro-batches M` accumulates on one
    device too, with the same result as the whole batch.

    The clipping and update ops are marked `tsr.update`.

    Argument attributes: `tsr.param`, `tsr.state = "adamw.m/<param>"`,
    `tsr.input`, `tsr.hyper = "lr" | "beta1" | "beta2" | "eps" |
    "weight_decay" | "clip_norm"`, `tsr.step`. Result attributes:
    `tsr.loss`, `tsr.grad_norm`, `tsr.param`, `tsr.state`.
  }];
  let options = [
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"adamw\"",
           "adamw or sgd">,
    Option<"clipNorm", "clip-norm", "double", /*default=*/"0.0",
           "The default of the run-time clip_norm: clip gradients to this "
           "global norm (a finite f32 number >= 0; 0: no clipping)">,
    Option<"funcName", "func", "std::string", /*default=*/"\"\"",
           "The gradient function (default: the one with tsr.grad results)">,
  ];
  let dependentDialects = ["::tessera::tsr::TsrDialect",
                           "::mlir::func::FuncDialect"];
}

def TsrDecomposeMeans : Pass<"tsr-decompose-means"> {
  let summary = "Rewrite means as sums divided by a count";
  let description = [{
    Before partitioning: a mean over a dimension that is split (over data
    parallel ranks or micro-batches) must divide by the GLOBAL count, so
    that the pieces' partial results add up to the mean. This pass makes
    the division explicit: `softmax_cross_entropy mean` becomes the `sum`
    loss divided by the number of labels different from `ignore_index`
    (itself a sum over the labels), its gradient op takes `dloss / count`
    with `sum` reduction, and `reduce_mean` becomes `reduce_sum` times
    1/n. The new ops keep the `tsr.backward` / `tsr.update` marks of the ops
    they replace.
  }];
}

def TsrSplitFusedProjections : Pass<"tsr-split-fused-projections"> {
  let summary = "One projection per piece of a projection's split output";
  let description = [{
    `split(x @ W (+ b))` along the last (feature) dimension becomes
    `x @ slice(W) (+ slice(b))` per piece: GPT's fused QKV projection turns
    into q, k and v projections whose features are whole heads, so the tp
    policy's head trace splits them column-parallel. Each output element is
    the same dot product. tessera-train-pipeline runs it before tsr-autodiff
    when the plan names tp > 1 (`tp`, or a product with `tp2` and more).
  }];
}

def TsrUnmergeDims : Pass<"tsr-unmerge-dims"> {
  let summary = "Give a dimension merged into its neighbour one of its own";
  let description = [{
    A reshape `[..., A, F*G, ...] -> [..., A*F, G, ...]` hides F inside a
    merged dimension whose outermost factor is A, and an annotation splits
    a merged dimension only by its outermost factor: nn.MultiheadAttention
    merges its heads into the batch ([T, B, H*D] -> [T, B*H, D]), so tp
    could not split them. The reshape becomes `[..., A, F, G, ...]` and the
    ops after it carry the extra dimension (transposes, batched matmuls,
    elementwise ops with broadcast operands, softmax over another axis)
    until a reshape merges it again; an op that cannot carry it gets its
    operand reshaped back. Inserting a dimension moves no element in
    row-major order, so every value is computed as before.
    tessera-train-pipeline runs it before tsr-split-fused-projections when
    the plan names tp > 1.
  }];
}

def TsrExportGradStep : Pass<"tsr-export-grad-step", "::mlir::ModuleOp"> {
  let summary = "Keep a copy of the gradient function as the program's grad_step";
  let description = [{
    A one-device program can dump its first-step gradients
    (`OUT/run --dump-grads`). This pass copies the gradient function that
    tsr-autodiff built (the function whose second result carries `tsr.grad`)
    as `grad_step`, marked `tsr.grad_step`, so that it survives
    tsr-internalize and the inliner; the emitter finds it by that mark. It
    is an error when there is no such function or `grad_step` exists.
  }];
  let dependentDialects = ["::tessera::tsr::TsrDialect"];
}

def TsrMixedPrecision : Pass<"tsr-mixed-precision", "::mlir::ModuleOp"> {
  let summary = "bf16 storage, f32 compute: casts around every op of the forward";
  let description = [{
    Rewrites the function with the `tsr.loss` result (`func`, as
    tsr-autodiff finds it) so that the values it keeps are bf16 while every
    op still computes in f32, before tsr-autodiff derives the backward from
    it (`tessera-compile --precision bf16`):

    - each f32 argument (parameters are the f32 master weights; float data
      inputs) is cast to bf16 once, at the top: the working weights;
    - an op that only moves elements (reshape, transpose, split, concat,
      slice) works on the bf16 values directly when all its float operands
      are bf16: the result is exact, and so are the gradients of these ops;
    - every other op gets its bf16 operands cast to f32 (one cast per value,
      shared by its users), runs as before, and its f32 results are cast to
      bf16 (rounded to nearest even), except the results kept in f32:
      rank-0 results (the loss and any other scalar) and the later results
      of an op that hold fewer elements than its first one (statistics such
      as layer_norm's mean and rstd or an attention's log-sum-exp);
    - a returned bf16 value is cast back to f32, so the function's type is
      unchanged.

    Constants stay f32 (they are operands of f32 computations), and so do
    values computed from constants and integers alone. A function that
    already holds bf16 values is an error. tsr-autodiff
    then differentiates the casts (a cast's gradient is the opposite cast),
    so the backward's values between ops are bf16 too, the gradients of the
    master weights are f32, and sums of bf16 gradients run in f32; the
    optimizer, the gradient norm and the gradient collectives are all f32.
    tsr-widen-at-use later keeps the f32 copies short-lived.
  }];
  let options = [
    Option<"funcName", "func", "std::string", /*default=*/"\"\"",
           "The function to rewrite (default: the one with a tsr.loss result)">,
  ];
  let dependentDialects = ["::tessera::tsr::TsrDialect"];
}

def TsrWidenAtUse : Pass<"tsr-widen-at-use"> {
  let summary = "Clone each widening cast before each of its users";
  let description = [{
    A `tsr.cast` from a narrower to a wider float type (bf16 to f32) with
    several users, or with a user that is not the next op, is cloned right
    before each user, which then reads its own copy. The wide copy then
    lives across one op: tsr-mixed-precision's f32 views of bf16
    activations are not kept from the forward to the backward (the backward
    casts the saved bf16 value again). A clone takes its user's location and
    `tsr.backward` mark, so that plans and schedules place it with the user.
    Runs after the last CSE, which would merge the clones again.
  }];
}

def TsrInternalize : Pass<"tsr-internalize", "::mlir::ModuleOp"> {
  let summary = "Make every function private but the program's entry points";
  let description = [{
    Marks private every function that is neither a training step
    (`tsr.train_step`) nor the gradient step (`tsr.grad_step`), so that the
    inliner and symbol-dce fold the forward and gradient functions into the
    steps.
  }];
}

def TsrRaise : Pass<"tsr-raise", "::mlir::ModuleOp"> {
  let summary = "Raise imported subgraphs into extension dialects' ops";
  let description = [{
    Applies the rewrite patterns of every dialect that implements
    `RaisePatternInterface` (include/tessera/Interfaces/ExtensionInterfaces.h),
    greedily, to the whole module: e.g. the llm extension turns
    `x * sigmoid(x)` into `llm.silu`, the RMSNorm that PyTorch code writes
    into `llm.rms_norm` and rotate_half rotary embeddings into `llm.rope`.
    Every available dialect is loaded first, so that an extension that the
    tool links registers its patterns without the pass naming it. It runs
    before tsr-autodiff (tessera-train-pipeline's `raise` option), so the
    raised ops' own gradient rules and kernels are used. Without patterns
    (no extension linked) it changes nothing.
  }];
  let options = [
    ListOption<"dialects", "dialects", "std::string",
               "Only the patterns of these dialects (default: all)">,
  ];
}

#endif // TESSERA_DIALECT_TSR_TRANSFORMS_PASSES_TD
