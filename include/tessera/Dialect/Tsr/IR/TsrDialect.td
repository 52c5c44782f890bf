//===- TsrDialect.td - the tsr dialect ----------------------*- tablegen -*-===//

#ifndef TESSERA_DIALECT_TSR_IR_TSRDIALECT_TD
#define TESSERA_DIALECT_TSR_IR_TSRDIALECT_TD

include "mlir/IR/OpBase.td"
include "tessera/Dialect/Common/DiscardableAttrs.td"

// Every tsr.* discardable attribute: the roles of a step function's
// arguments and results, and the marks passes leave on ops and functions.
defvar Tsr_DiscardableAttrs = [
  TesseraDiscardableAttr<"source", "::mlir::StringAttr", "Module", "a string",
    "the file the module was imported from (set by the ONNX importer)">,
  TesseraDiscardableAttr<"inputs", "::mlir::ArrayAttr", "Module",
    "an array of strings",
    "the model's data inputs (graph inputs that are not initializers) in "
    "graph order (set by the ONNX importer): the driver maps a token file's "
    "tokens and next tokens onto the first two">,
  TesseraDiscardableAttr<"state_dict", "::mlir::ArrayAttr", "Module",
    "an array of [name, initializer] string pairs",
    "the PyTorch state_dict in order (set by the ONNX importer from the "
    "model's metadata): --save writes each name with its initializer's "
    "value, so tied weights appear under every name and buffers too">,
  TesseraDiscardableAttr<"flops_per_step", "::mlir::FloatAttr", "Module",
    "a float attribute",
    "the model FLOPs of one training step: the gradient function's ops, "
    "forward and backward, by their cost interface (set by tsr-optimizer; "
    "the program logs the utilisation against the device's peak)">,
  TesseraDiscardableAttr<"param", "::mlir::StringAttr", "ArgOrResult",
    "a string (the parameter's name)",
    "a trained parameter: its name in the weights file">,
  TesseraDiscardableAttr<"input", "::mlir::StringAttr", "Arg",
    "a string (the input's name)", "a data input (tokens, labels)">,
  TesseraDiscardableAttr<"output", "::mlir::StringAttr", "Result",
    "a string (the output's name)", "a graph output of the imported model">,
  TesseraDiscardableAttr<"loss", "::mlir::UnitAttr", "Result",
    "a unit attribute", "the scalar loss the step minimises">,
  TesseraDiscardableAttr<"grad", "::mlir::StringAttr", "Result",
    "a string (the parameter's name)",
    "the gradient of the named parameter (set by tsr-autodiff)">,
  TesseraDiscardableAttr<"state", "::mlir::StringAttr", "ArgOrResult",
    "a string (`<optimizer>.<slot>/<parameter>`)",
    "optimizer state, e.g. `adamw.m/wte` (set by tsr-optimizer)">,
  TesseraDiscardableAttr<"hyper", "::mlir::StringAttr", "Arg",
    "a string (the hyperparameter's name)",
    "a run-time hyperparameter such as `lr` (set by tsr-optimizer)">,
  TesseraDiscardableAttr<"hyper_default", "::mlir::FloatAttr", "Arg",
    "a float attribute",
    "the value a hyperparameter takes when the run does not set it "
    "(`clip_norm`: tessera-compile's --clip-norm; set by tsr-optimizer)">,
  TesseraDiscardableAttr<"grad_norm", "::mlir::UnitAttr", "Result",
    "a unit attribute",
    "the global L2 norm of the step's gradients, before clipping (set by "
    "tsr-optimizer)">,
  TesseraDiscardableAttr<"step", "::mlir::UnitAttr", "Arg", "a unit attribute",
    "the step counter (set by tsr-optimizer)">,
  TesseraDiscardableAttr<"backward", "::mlir::Attribute", "Op",
    "a unit attribute or a string",
    "an op of the backward pass (set by tsr-autodiff; the string, when "
    "present, names the forward op it differentiates)">,
  TesseraDiscardableAttr<"update", "::mlir::UnitAttr", "Op",
    "a unit attribute", "an op of the optimizer update (set by tsr-optimizer)">,
  TesseraDiscardableAttr<"test_split", "::mlir::DictionaryAttr", "Op",
    "a dictionary", "test only: the split tsr-test-annotation applies">,
  TesseraDiscardableAttr<"train_step", "::mlir::StringAttr", "Func",
    "a string (the optimizer's name)",
    "a training step function (set by tsr-optimizer)">,
  TesseraDiscardableAttr<"grad_step", "::mlir::UnitAttr", "Func",
    "a unit attribute",
    "the gradient-only step a one-device program exports (set by "
    "tsr-export-grad-step)">
];

def Tsr_Dialect : Dialect {
  let name = "tsr";
  let cppNamespace = "::tessera::tsr";
  let summary = "Tessera's single-device training graph on builtin tensors";
  let description = [{
    `tsr` holds one device's training step: the forward graph as imported
    from ONNX, the loss, the backward ops autodiff adds and the optimizer
    update. Values are builtin statically shaped tensors of f32, bf16 or f16
    (activations, parameters), i32 or i64 (token ids) and i1 (masks).

    Every op implements `DimAnnotationOpInterface` with an nnScaler-style
    dimension annotation, shown as **Annotation** in each op's description:
    a name per dimension, `+` for a reduced dimension (splitting it leaves
    partial sums), `^` for a dimension that must never be split, `(a b)` for
    a grouped dimension, `1` for a broadcast dimension, `*` for any number
    of shared leading dimensions (numpy-aligned) and `()` for a rank-0
    tensor. Annotations marked *(adapted to attributes)* move their named
    dimensions to the positions given by the op's attributes.

    Parameters, data inputs and the loss are function arguments and results
    carrying attributes, so autodiff and the optimizer are passes.

    **Discardable attributes.** The dialect verifies each one's place and
    form and rejects any other `tsr.*` name.
  }] # DiscardableAttrDocTable<"tsr", Tsr_DiscardableAttrs>.value;
  let discardableAttrs = DiscardableAttrDag<Tsr_DiscardableAttrs>.value;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration =
    DiscardableAttrTable<"tsr", Tsr_DiscardableAttrs>.value;
  let useDefaultAttributePrinterParser = 0;
  let hasConstantMaterializer = 1;
}

#endif // TESSERA_DIALECT_TSR_IR_TSRDIALECT_TD
