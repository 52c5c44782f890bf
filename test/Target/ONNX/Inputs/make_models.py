#!/usr/bin/python3
"""Writes the small ONNX models of the importer's lit tests into a folder.

    /usr/bin/python3 make_models.py OUT_DIR

Each model is a few nodes that exercise one rule of the importer; the lit
tests import them and FileCheck the IR or the diagnostic. Needs Debian's
python3-onnx (onnx 1.12).
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F, I64, B, F64 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL, TensorProto.DOUBLE


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def const(name, array):
    return helper.make_node("Constant", [], [name], name=name + "_node",
                            value=numpy_helper.from_array(np.asarray(array), name))


def save(out, file, nodes, inputs, outputs, inits=(), opset=17, check=True):
    graph = helper.make_graph(nodes, file, inputs, outputs,
                              initializer=list(inits))
    model = helper.make_model(graph, producer_name="tessera-tests",
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    if check:
        onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, file + ".onnx"))


def main(out):
    os.makedirs(out, exist_ok=True)
    x44 = vi("x", F, [4, 4])

    # Operators Tessera lacks: two types, three nodes, one unnamed.
    save(out, "unsupported", [
        helper.make_node("Relu", ["x"], ["r"], name="Relu_1"),
        helper.make_node("Hardmax", ["r"], ["h"], name="Hardmax_2"),
        helper.make_node("Softsign", ["h"], ["s"]),
        helper.make_node("Hardmax", ["s"], ["y"], name="Hardmax_4"),
    ], [x44], [vi("y", F, [4, 4])])

    # No rank-0 float output; two of them.
    save(out, "no_loss", [helper.make_node("Relu", ["x"], ["y"], name="relu")],
         [x44], [vi("y", F, [4, 4])])
    save(out, "two_losses", [
        helper.make_node("ReduceMean", ["x"], ["a"], name="mean_a", keepdims=0),
        helper.make_node("ReduceMean", ["x"], ["b"], name="mean_b", keepdims=0),
    ], [x44], [vi("a", F, []), vi("b", F, [])])

    # A dynamic dimension; an element type tsr lacks; an attribute value.
    save(out, "dynamic", [helper.make_node("Relu", ["x"], ["y"], name="relu")],
         [vi("x", F, ["N", 4])], [vi("y", F, ["N", 4])])
    save(out, "f64", [helper.make_node("Relu", ["x"], ["y"], name="relu")],
         [vi("x", F64, [4])], [vi("y", F64, [4])])
    save(out, "stash_type", [
        helper.make_node("LayerNormalization", ["x", "s"], ["y"], name="ln",
                         stash_type=0),
    ], [x44, vi("s", F, [4])], [vi("y", F, [4, 4])])
    # An epsilon that is not a finite number >= 0.
    for name, eps in [("epsilon_nan", float("nan")),
                      ("epsilon_inf", float("inf"))]:
        save(out, name, [
            helper.make_node("LayerNormalization", ["x", "s"], ["y"],
                             name="ln", epsilon=eps),
        ], [x44, vi("s", F, [4])], [vi("y", F, [4, 4])])

    # Shapes whose element count overflows int64_t (a fuzzer finding: a
    # Reshape target), or only exceeds tsr's 2^48 elements.
    save(out, "reshape_overflow", [
        const("huge", np.array([2, 4683743612465315840], np.int64)),
        helper.make_node("Reshape", ["x", "huge"], ["y"], name="reshape"),
    ], [x44], [vi("y", F, [2, 4683743612465315840])], check=False)
    save(out, "huge_input", [helper.make_node("Relu", ["x"], ["y"],
                                              name="relu")],
         [vi("x", F, [1 << 30, 1 << 20])], [vi("y", F, [1 << 30, 1 << 20])])

    # Gemm with every attribute; MatMul with 1-D operands.
    save(out, "gemm", [
        helper.make_node("Gemm", ["a", "b", "c"], ["y"], name="gemm",
                         transA=1, transB=1, alpha=2.0, beta=0.5),
    ], [vi("a", F, [3, 2]), vi("b", F, [5, 3]), vi("c", F, [5])],
        [vi("y", F, [2, 5])])
    save(out, "matmul_1d", [
        helper.make_node("MatMul", ["v", "m"], ["vm"], name="vec_mat"),
        helper.make_node("MatMul", ["m2", "v"], ["mv"], name="mat_vec"),
    ], [vi("v", F, [3]), vi("m", F, [3, 5]), vi("m2", F, [4, 3])],
        [vi("vm", F, [5]), vi("mv", F, [4])])

    # LayerNormalization with all three outputs.
    save(out, "layernorm_stats", [
        helper.make_node("LayerNormalization", ["x", "s", "bias"],
                         ["y", "mean", "inv_std"], name="ln", axis=1,
                         epsilon=1e-3),
    ], [vi("x", F, [2, 3, 4]), vi("s", F, [3, 4]), vi("bias", F, [3, 4])],
        [vi("y", F, [2, 3, 4]), vi("mean", F, [2, 1, 1]),
         vi("inv_std", F, [2, 1, 1])])

    # torch's shape arithmetic: Shape -> Gather -> Unsqueeze -> Concat ->
    # Reshape, and an INT64 initializer as a Reshape shape.
    save(out, "shape_fold", [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        const("zero", np.array(0, np.int64)),
        helper.make_node("Gather", ["s", "zero"], ["b"], name="gather_b"),
        const("axes0", np.array([0], np.int64)),
        helper.make_node("Unsqueeze", ["b", "axes0"], ["b1"], name="unsq"),
        const("minus1", np.array([-1], np.int64)),
        helper.make_node("Concat", ["b1", "minus1"], ["target"], name="cat",
                         axis=0),
        helper.make_node("Reshape", ["x", "target"], ["flat"], name="reshape"),
        helper.make_node("Reshape", ["flat", "back_shape"], ["y"],
                         name="reshape_back"),
    ], [vi("x", F, [2, 3, 4])], [vi("y", F, [2, 3, 4])],
        inits=[numpy_helper.from_array(np.array([0, 3, -1], np.int64),
                                       "back_shape")])

    # Float math on constants that the constant folder does not evaluate
    # (Cos, Sqrt, Pow, Sigmoid): the import rules build tsr ops, whose own
    # folders evaluate them at import time.
    save(out, "float_fold", [
        const("start", np.array(0, np.float32)),
        const("limit", np.array(4, np.float32)),
        const("delta", np.array(1, np.float32)),
        helper.make_node("Range", ["start", "limit", "delta"], ["r"],
                         name="range"),
        const("half", np.array(0.5, np.float32)),
        helper.make_node("Mul", ["r", "half"], ["rh"], name="mul_half"),
        helper.make_node("Cos", ["rh"], ["c"], name="cos"),
        helper.make_node("Mul", ["x", "c"], ["xc"], name="mul_cos"),
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        const("one", np.array(1, np.int64)),
        helper.make_node("Gather", ["s", "one"], ["n"], name="gather_n"),
        helper.make_node("Cast", ["n"], ["nf"], name="cast_n", to=F),
        helper.make_node("Sqrt", ["nf"], ["root"], name="sqrt"),
        helper.make_node("Div", ["xc", "root"], ["xd"], name="div_root"),
        const("base", np.array(10, np.float32)),
        helper.make_node("Pow", ["base", "rh"], ["p"], name="pow"),
        helper.make_node("Sigmoid", ["p"], ["g"], name="sigmoid"),
        helper.make_node("Add", ["xd", "g"], ["y"], name="add_g"),
    ], [vi("x", F, [2, 4])], [vi("y", F, [2, 4])])

    # Slice (negative start, clamped end, step 2) and Split into equal parts.
    save(out, "slice_split", [
        const("starts", np.array([-3, 0], np.int64)),
        const("ends", np.array([1000, 5], np.int64)),
        const("axes", np.array([0, 1], np.int64)),
        const("steps", np.array([1, 2], np.int64)),
        helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"],
                         ["s"], name="slice"),
        helper.make_node("Split", ["x"], ["p0", "p1"], name="split", axis=-1),
    ], [vi("x", F, [6, 6])],
        [vi("s", F, [3, 3]), vi("p0", F, [6, 3]), vi("p1", F, [6, 3])])

    # Expand; Equal/Where/Cast on a run-time mask.
    save(out, "expand_where", [
        const("shape", np.array([2, 3, 4], np.int64)),
        helper.make_node("Expand", ["x", "shape"], ["e"], name="expand"),
        const("pad", np.array(0, np.int64)),
        helper.make_node("Equal", ["ids", "pad"], ["is_pad"], name="equal"),
        const("ninf", np.array(-1e9, np.float32)),
        helper.make_node("Where", ["is_pad", "ninf", "e"], ["w"], name="where"),
        helper.make_node("Cast", ["is_pad"], ["pad_f"], name="cast", to=F),
    ], [vi("x", F, [3, 1]), vi("ids", I64, [3, 4])],
        [vi("w", F, [2, 3, 4]), vi("pad_f", F, [3, 4])])

    # Dropout: ratio 0 in training mode (identity, constant mask) and a real
    # one.
    save(out, "dropout", [
        const("zero", np.array(0.0, np.float32)),
        const("quarter", np.array(0.25, np.float32)),
        const("train", np.array(True)),
        helper.make_node("Dropout", ["x", "zero", "train"], ["y0", "m0"],
                         name="drop0"),
        helper.make_node("Dropout", ["y0", "quarter", "train"], ["y1", "m1"],
                         name="drop1"),
    ], [x44], [vi("y1", F, [4, 4]), vi("m0", B, [4, 4]), vi("m1", B, [4, 4])])

    # SoftmaxCrossEntropyLoss on N x C x D with the log_prob output.
    save(out, "sce_3d", [
        helper.make_node("SoftmaxCrossEntropyLoss", ["scores", "labels"],
                         ["loss", "log_prob"], name="sce", reduction="mean",
                         ignore_index=-1),
    ], [vi("scores", F, [2, 5, 3]), vi("labels", I64, [2, 3])],
        [vi("loss", F, []), vi("log_prob", F, [2, 5, 3])])

    # Opset 11 Softmax flattens at its axis; ReduceMean with axes attribute.
    save(out, "legacy_softmax", [
        helper.make_node("Softmax", ["x"], ["y"], name="softmax", axis=1),
        helper.make_node("ReduceMean", ["x"], ["m"], name="mean", axes=[-1],
                         keepdims=0),
    ], [vi("x", F, [2, 3, 4])], [vi("y", F, [2, 3, 4]), vi("m", F, [2, 3])],
        opset=11)

    # Gelu is opset 20, newer than Debian's onnx 1.12: written unchecked.
    save(out, "gelu", [
        helper.make_node("Gelu", ["x"], ["exact"], name="gelu_exact"),
        helper.make_node("Gelu", ["x"], ["approx"], name="gelu_tanh",
                         approximate="tanh"),
        helper.make_node("Gelu", ["x"], ["bad"], name="gelu_bad",
                         approximate="sigmoid"),
    ], [x44], [vi("exact", F, [4, 4]), vi("approx", F, [4, 4]),
               vi("bad", F, [4, 4])], opset=20, check=False)


if __name__ == "__main__":
    main(sys.argv[1])
