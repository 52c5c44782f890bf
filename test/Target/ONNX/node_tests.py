#!/usr/bin/python3
"""Runs the ONNX node tests of Debian's libonnx-testdata through the importer.

For every node test of an operator the importer supports (see SELECTION), it

1. bakes the inputs that the importer needs at import time (Reshape's shape,
   Slice's starts/ends/axes/steps, Split's sizes, ...) into initializers: node
   tests feed them as graph inputs, models exported by torch as constants;
2. imports the model with `tessera-translate --import-onnx --allow-no-loss`;
   tests listed in EXPECTED_REJECT must fail with the given message, all others
   must import;
3. if `tessera-interp` exists, converts test_data_set_*/input_N.pb to
   safetensors (keys: the ONNX input and initializer names), runs the imported
   @forward and compares every output with output_N.pb (rtol 1e-5, atol 1e-6;
   integers and booleans exactly).

With --fold, every graph input instead becomes a Constant node holding data
set 0's value, so that the whole graph is known at import time: the importer
then evaluates it (the constant folder, and the folders of the ops that import
rules build), and the imported @forward must still reproduce output_N.pb. Each
line says "folded" when no run-time op is left, else how many remain.

It prints one line per test and "N passed, N failed"; the exit status is 1 if
any test failed. Needs Debian's Python (/usr/bin/python3 with python3-onnx).

    node_tests.py --translate build/bin/tessera-translate \
        [--interp build/bin/tessera-interp] [--work DIR] [TEST_NAME_GLOB...]
"""

from __future__ import annotations

import argparse
import fnmatch
import glob
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

REPO = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "examples", "gpt"))
import safetensors_io  # noqa: E402  (the repository's numpy-only reader/writer)

DATA_DIR = "/usr/share/libonnx-testdata/data/node"

# Node tests of the supported operators (globs over test directory names).
SELECTION = [
    "test_matmul_*", "test_gemm_*", "test_add", "test_add_*", "test_sub",
    "test_sub_*", "test_mul", "test_mul_*", "test_div", "test_div_*",
    "test_pow", "test_pow_*", "test_sqrt", "test_sqrt_*", "test_erf",
    "test_tanh", "test_tanh_*", "test_relu", "test_gelu*",
    "test_layer_normalization_*", "test_softmax_*", "test_reshape_*",
    "test_transpose_*", "test_split_*", "test_slice", "test_slice_*",
    "test_concat_*", "test_unsqueeze*", "test_squeeze*", "test_gather_0",
    "test_gather_1", "test_gather_2d_indices", "test_gather_negative_indices",
    "test_where_*", "test_equal", "test_equal_*", "test_cast_*",
    "test_constant", "test_constantofshape_*", "test_expand_*", "test_shape",
    "test_shape_*", "test_dropout_*", "test_sce_*", "test_reduce_mean_*",
    "test_identity", "test_identity_*", "test_sigmoid", "test_sigmoid_*",
    "test_sin", "test_sin_example", "test_cos", "test_cos_example",
    "test_tril*", "test_triu*",
    # Convolutional networks (Rules/Vision.cpp).
    "test_basic_conv_*", "test_conv_with_*", "test_maxpool_*",
    "test_averagepool_*", "test_globalaveragepool*", "test_batchnorm_*",
    "test_constant_pad", "test_edge_pad", "test_reflect_pad",
    # Piecewise activations (Rules/Activations.cpp).
    "test_leakyrelu*", "test_abs", "test_softplus*", "test_clip*",
    "test_max_*", "test_min_*", "test_tile*",
    # Function-expanded variants: the op's definition in terms of others,
    # with Shape/Size/Slice/Neg/Concat shape arithmetic the importer folds.
    "test_layer_normalization_*_expanded", "test_softmax_*_expanded",
]

# Tests that must be rejected, with (a substring of) the expected diagnostic
# and why the case lies outside what Tessera imports.
EXPECTED_REJECT = {
    # Element types tsr does not have (it has f32/f16/bf16, i64/i32, i1).
    "test_add_uint8": ("unsupported element type UINT8", "uint8 tensors"),
    "test_sub_uint8": ("unsupported element type UINT8", "uint8 tensors"),
    "test_mul_uint8": ("unsupported element type UINT8", "uint8 tensors"),
    "test_div_uint8": ("unsupported element type UINT8", "uint8 tensors"),
    "test_pow_types_float32_uint32": ("unsupported element type UINT32", "uint32 exponent"),
    "test_pow_types_float32_uint64": ("unsupported element type UINT64", "uint64 exponent"),
    "test_pow_types_float": ("arithmetic on 'i64'", "integer base: integer arithmetic at run time"),
    "test_pow_types_int32_float32": ("arithmetic on 'i32'", "integer base: integer arithmetic at run time"),
    "test_pow_types_int32_int32": ("arithmetic on 'i32'", "integer base: integer arithmetic at run time"),
    "test_pow_types_int64_float32": ("arithmetic on 'i64'", "integer base: integer arithmetic at run time"),
    "test_pow_types_int64_int64": ("arithmetic on 'i64'", "integer base: integer arithmetic at run time"),
    "test_cast_DOUBLE_to_FLOAT": ("unsupported element type DOUBLE", "float64 tensors"),
    "test_cast_DOUBLE_to_FLOAT16": ("unsupported element type DOUBLE", "float64 tensors"),
    "test_cast_FLOAT16_to_DOUBLE": ("unsupported element type DOUBLE", "float64 tensors"),
    "test_cast_FLOAT_to_DOUBLE": ("unsupported element type DOUBLE", "float64 tensors"),
    "test_cast_FLOAT_to_STRING": ("unsupported element type STRING", "string tensors"),
    "test_cast_STRING_to_FLOAT": ("unsupported element type STRING", "string tensors"),
    # Shapes tsr cannot express.
    "test_slice_neg_steps": ("negative steps are not supported", "negative slice steps"),
    "test_slice_start_out_of_bounds": ("empty tensors are not supported", "empty result"),
    "test_split_zero_size_splits": ("empty tensors are not supported", "empty split pieces"),
    "test_constantofshape_int_shape_zero": ("empty tensors are not supported", "empty result"),
    "test_reshape_allowzero_reordered": ("empty tensors are not supported", "empty input and result (allowzero with a 0 dim)"),
    # Loss variants outside the importer's scope.
    "test_sce_NCd1_mean_weight_negative_ii": ("class weights", "class weights"),
    "test_sce_NCd1_mean_weight_negative_ii_log_prob": ("class weights", "class weights"),
    "test_sce_NCd1d2d3_sum_weight_high_ii": ("class weights", "class weights"),
    "test_sce_NCd1d2d3_sum_weight_high_ii_log_prob": ("class weights", "class weights"),
    "test_sce_NCd1d2d3d4d5_mean_weight": ("class weights", "class weights"),
    "test_sce_NCd1d2d3d4d5_mean_weight_log_prob": ("class weights", "class weights"),
    "test_sce_mean_weight": ("class weights", "class weights"),
    "test_sce_mean_weight_ii": ("class weights", "class weights"),
    "test_sce_mean_weight_ii_3d": ("class weights", "class weights"),
    "test_sce_mean_weight_ii_3d_log_prob": ("class weights", "class weights"),
    "test_sce_mean_weight_ii_4d": ("class weights", "class weights"),
    "test_sce_mean_weight_ii_4d_log_prob": ("class weights", "class weights"),
    "test_sce_mean_weight_ii_log_prob": ("class weights", "class weights"),
    "test_sce_mean_weight_log_prob": ("class weights", "class weights"),
    "test_sce_none_weights": ("class weights", "class weights"),
    "test_sce_none_weights_log_prob": ("class weights", "class weights"),
    "test_tril_zero": ("empty tensors are not supported", "empty input"),
    "test_triu_zero": ("empty tensors are not supported", "empty input"),
    # Convolutional ops outside Rules/Vision.cpp's scope (2-D images,
    # explicit pads, floor rounding, constant padding).
    "test_averagepool_1d_default": ("only 2-D images are supported", "1-D pooling"),
    "test_averagepool_3d_default": ("only 2-D images are supported", "3-D pooling"),
    "test_maxpool_1d_default": ("only 2-D images are supported", "1-D pooling"),
    "test_maxpool_3d_default": ("only 2-D images are supported", "3-D pooling"),
    "test_averagepool_2d_ceil": ("ceil_mode 1 is not supported", "ceil rounding"),
    "test_maxpool_2d_ceil": ("ceil_mode 1 is not supported", "ceil rounding"),
    "test_averagepool_2d_precomputed_same_upper": ("auto_pad 'SAME_UPPER' is not supported", "auto_pad"),
    "test_averagepool_2d_same_lower": ("auto_pad 'SAME_LOWER' is not supported", "auto_pad"),
    "test_averagepool_2d_same_upper": ("auto_pad 'SAME_UPPER' is not supported", "auto_pad"),
    "test_maxpool_2d_precomputed_same_upper": ("auto_pad 'SAME_UPPER' is not supported", "auto_pad"),
    "test_maxpool_2d_same_lower": ("auto_pad 'SAME_LOWER' is not supported", "auto_pad"),
    "test_maxpool_2d_same_upper": ("auto_pad 'SAME_UPPER' is not supported", "auto_pad"),
    "test_conv_with_autopad_same": ("auto_pad 'SAME_LOWER' is not supported", "auto_pad"),
    "test_maxpool_2d_uint8": ("unsupported element type UINT8", "uint8 tensors"),
    "test_maxpool_with_argmax_2d_precomputed_pads": ("the Indices output is not supported", "argmax indices"),
    "test_maxpool_with_argmax_2d_precomputed_strides": ("the Indices output is not supported", "argmax indices"),
    "test_edge_pad": ("mode 'edge' is not supported", "edge padding"),
    "test_reflect_pad": ("mode 'reflect' is not supported", "reflect padding"),
    # Min, Max and Clip on element types tsr lacks.
    "test_clip_default_int8_inbounds": ("unsupported element type INT8", "int8 tensors"),
    "test_clip_default_int8_max": ("unsupported element type INT8", "int8 tensors"),
    "test_clip_default_int8_min": ("unsupported element type INT8", "int8 tensors"),
    "test_max_float64": ("unsupported element type DOUBLE", "float64 tensors"),
    "test_max_int16": ("unsupported element type INT16", "int16 tensors"),
    "test_max_int8": ("unsupported element type INT8", "int8 tensors"),
    "test_max_uint16": ("unsupported element type UINT16", "uint16 tensors"),
    "test_max_uint32": ("unsupported element type UINT32", "uint32 tensors"),
    "test_max_uint64": ("unsupported element type UINT64", "uint64 tensors"),
    "test_max_uint8": ("unsupported element type UINT8", "uint8 tensors"),
    "test_min_float64": ("unsupported element type DOUBLE", "float64 tensors"),
    "test_min_int16": ("unsupported element type INT16", "int16 tensors"),
    "test_min_int8": ("unsupported element type INT8", "int8 tensors"),
    "test_min_uint16": ("unsupported element type UINT16", "uint16 tensors"),
    "test_min_uint32": ("unsupported element type UINT32", "uint32 tensors"),
    "test_min_uint64": ("unsupported element type UINT64", "uint64 tensors"),
    "test_min_uint8": ("unsupported element type UINT8", "uint8 tensors"),
    # Sequence values.
    "test_identity_sequence": ("is not a tensor", "sequence values"),
    "test_identity_opt": ("is not a tensor", "optional values"),
}

# Operand positions each op needs at import time: (op_type, input index).
CONST_OPERANDS = {
    "Reshape": [1], "Slice": [1, 2, 3, 4], "Split": [1], "Unsqueeze": [1],
    "Squeeze": [1], "Expand": [1], "ReduceMean": [1], "ReduceSum": [1],
    "ReduceMax": [1], "ConstantOfShape": [0], "Dropout": [1, 2], "Tile": [1],
    "Trilu": [1], "Pad": [1, 2],
}

# Node tests whose numeric check cannot pass by construction (with why).
NUMERIC_SKIP = {
    "test_gather_negative_indices":
        "negative run-time indices: tsr.gather takes indices in [0, size) "
        "(constant indices are normalised at import)",
    "test_cast_BFLOAT16_to_FLOAT": "numpy has no bfloat16 for the input file",
    "test_cast_FLOAT_to_BFLOAT16": "numpy has no bfloat16 for the output file",
    "test_cast_FLOAT16_to_FLOAT": "the CPU runtime (tessera-interp) has no f16",
    "test_cast_FLOAT_to_FLOAT16": "the CPU runtime (tessera-interp) has no f16",
    "test_max_float16": "the CPU runtime (tessera-interp) has no f16",
    # --fold only (a run-time import rejects the DOUBLE input).
    "test_cast_DOUBLE_to_FLOAT16": "the CPU runtime (tessera-interp) has no f16",
    "test_min_float16": "the CPU runtime (tessera-interp) has no f16",
}


def read_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t


def data_sets(test_dir):
    return sorted(glob.glob(os.path.join(test_dir, "test_data_set_*")))


def bake_constant_inputs(model, inputs):
    """Turns graph inputs used in import-time positions into initializers.
    Returns the names baked."""
    graph = model.graph
    init_names = {t.name for t in graph.initializer}
    wanted = set()
    for node in graph.node:
        for pos in CONST_OPERANDS.get(node.op_type, []):
            if pos < len(node.input) and node.input[pos]:
                wanted.add(node.input[pos])
    baked = []
    keep = []
    for vi in graph.input:
        if vi.name in wanted and vi.name not in init_names and vi.name in inputs:
            t = numpy_helper.from_array(inputs[vi.name], vi.name)
            graph.initializer.append(t)
            baked.append(vi.name)
        else:
            keep.append(vi)
    del graph.input[:]
    graph.input.extend(keep)
    if baked and model.ir_version < 4:
        model.ir_version = 4  # initializers need not be inputs from IR 4 on
    return baked


def bake_all_inputs(model, inputs):
    """--fold: every graph input with a value in `inputs` becomes a Constant
    node at the start of the graph. Returns the names baked."""
    graph = model.graph
    init_names = {t.name for t in graph.initializer}
    baked, keep, nodes = [], [], []
    for vi in graph.input:
        if vi.name not in init_names and vi.name in inputs:
            nodes.append(onnx.helper.make_node(
                "Constant", [], [vi.name],
                value=numpy_helper.from_array(inputs[vi.name], vi.name)))
            baked.append(vi.name)
        else:
            keep.append(vi)
    del graph.input[:]
    graph.input.extend(keep)
    rest = list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes + rest)
    return baked


RUNTIME_OP = re.compile(r"=\s+([a-z_]+\.[a-z_]+)")


def runtime_ops(mlir_path):
    """The ops of the imported module other than constants and the return."""
    with open(mlir_path) as f:
        ops = RUNTIME_OP.findall(f.read())
    return [op for op in ops if not op.endswith(".constant")]


def load_inputs(model, ds_dir):
    """input_N.pb -> {graph input name: array}, by position among the graph
    inputs that are not initializers (the ONNX backend test convention)."""
    init_names = {t.name for t in model.graph.initializer}
    names = [vi.name for vi in model.graph.input if vi.name not in init_names]
    arrays = {}
    for i, name in enumerate(names):
        p = os.path.join(ds_dir, f"input_{i}.pb")
        if not os.path.exists(p):
            continue
        try:
            arrays[name] = numpy_helper.to_array(read_pb(p))
        except Exception:  # sequences, optionals: the importer rejects them
            pass
    return arrays


def load_outputs(model, ds_dir):
    outs = {}
    for i, vi in enumerate(model.graph.output):
        p = os.path.join(ds_dir, f"output_{i}.pb")
        if os.path.exists(p):
            outs[vi.name] = numpy_helper.to_array(read_pb(p))
    return outs


def compare(name, got, want, rtol=1e-5, atol=1e-6):
    if got.shape != want.shape:
        return f"{name}: shape {list(got.shape)} != expected {list(want.shape)}"
    if want.dtype.kind in "biu" or want.dtype == np.bool_:
        if not np.array_equal(got, want):
            return f"{name}: values differ"
        return None
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    if not np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True):
        err = np.max(np.abs(g - w)) if g.size else 0
        return f"{name}: max abs error {err:.3g}"
    return None


def run_test(name, args, work):
    test_dir = os.path.join(args.data, name)
    tdir = os.path.join(work, name)
    os.makedirs(tdir, exist_ok=True)
    model = onnx.load(os.path.join(test_dir, "model.onnx"))
    sets = data_sets(test_dir)
    first = load_inputs(model, sets[0]) if sets else {}
    if args.fold:
        sets = sets[:1]
        baked = bake_all_inputs(model, first)
    else:
        baked = bake_constant_inputs(model, first)
    model_path = os.path.join(tdir, "model.onnx")
    onnx.save(model, model_path)
    mlir_path = os.path.join(tdir, "model.mlir")
    weights = os.path.join(tdir, "weights.safetensors")
    cmd = [args.translate, "--import-onnx", model_path, "--allow-no-loss",
           "-o", mlir_path, "--weights-out", weights]
    p = subprocess.run(cmd, capture_output=True)
    stderr = p.stderr.decode("utf-8", "replace").strip()
    expected = EXPECTED_REJECT.get(name)
    expect_msg = expected[0] if expected else None
    if expect_msg is not None and args.fold and p.returncode in (0, 1):
        # Import-time evaluation may accept what run-time ops cannot hold
        # (a DOUBLE constant cast to FLOAT) or reject it earlier (a STRING
        # constant): either is fine if clean, and an import is checked.
        if p.returncode == 1:
            return "PASS", f"rejected ({expected[1]})"
        expect_msg = None
    if expect_msg is not None:
        if p.returncode == 0:
            return "FAIL", f"imported, but expected a rejection ({expected[1]})"
        if p.returncode != 1:
            return "FAIL", f"exit status {p.returncode} (crash?): {stderr[-300:]}"
        if expect_msg not in stderr:
            return "FAIL", f"rejected with an unexpected message: {stderr[-300:]}"
        return "PASS", f"rejected as expected ({expected[1]})"
    if p.returncode != 0:
        return "FAIL", f"import failed: {stderr[-400:]}"
    if not args.interp:
        return "PASS", "imported" + (f" (baked {', '.join(baked)})" if baked else "")
    if name in NUMERIC_SKIP:
        return "PASS", f"imported; numeric check skipped: {NUMERIC_SKIP[name]}"
    # Numeric check over every data set: initializers (incl. baked inputs)
    # and inputs go into one safetensors file keyed by ONNX name.
    params = safetensors_io.load_file(weights) if os.path.exists(weights) else {}
    for ds in sets:
        inputs = load_inputs(onnx.load(os.path.join(test_dir, "model.onnx")), ds)
        for b in baked:
            if not np.array_equal(inputs[b], first[b]):
                return "FAIL", f"{os.path.basename(ds)}: baked input '{b}' differs between data sets"
        feed = dict(params)
        feed.update({k: v for k, v in inputs.items()})
        in_path = os.path.join(tdir, "inputs.safetensors")
        out_path = os.path.join(tdir, "outputs.safetensors")
        safetensors_io.save_file(feed, in_path)
        q = subprocess.run([args.interp, mlir_path, "--inputs", in_path,
                            "--outputs", out_path], capture_output=True)
        if q.returncode != 0:
            return "FAIL", "tessera-interp failed: " + q.stderr.decode("utf-8", "replace")[-300:]
        got = safetensors_io.load_file(out_path)
        for oname, want in load_outputs(model, ds).items():
            if oname not in got:
                return "FAIL", f"{os.path.basename(ds)}: no output '{oname}'"
            msg = compare(oname, np.asarray(got[oname]), want)
            if msg:
                return "FAIL", f"{os.path.basename(ds)}: {msg}"
    if args.fold:
        left = runtime_ops(mlir_path)
        return "PASS", ("folded" if not left else
                        f"{len(left)} run-time op(s) left") + "; outputs match"
    return "PASS", f"imported; outputs match on {len(sets)} data set(s)"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--translate", required=True, help="tessera-translate binary")
    ap.add_argument("--interp", default="", help="tessera-interp binary (optional)")
    ap.add_argument("--data", default=DATA_DIR, help="libonnx-testdata node test folder")
    ap.add_argument("--work", default="", help="work folder (default: a temporary one)")
    ap.add_argument("--require-data", action="store_true",
                    help="fail (instead of skipping) without libonnx-testdata")
    ap.add_argument("--fold", action="store_true",
                    help="bake every input as a Constant node (see above)")
    ap.add_argument("tests", nargs="*", help="test name globs (default: SELECTION)")
    args = ap.parse_args()

    if not os.path.isdir(args.data):
        print(f"node tests not found in {args.data} "
              "(apt-get install libonnx-testdata)")
        if args.require_data:
            print("0 passed, 1 failed")
            return 1
        print("0 passed, 0 failed")
        return 0
    if args.interp and not os.path.exists(args.interp):
        args.interp = ""
    if not args.interp:
        print("tessera-interp not available: checking imports only, "
              "no numeric comparison")

    patterns = args.tests or SELECTION
    names = sorted(n for n in os.listdir(args.data)
                   if any(fnmatch.fnmatch(n, p) for p in patterns))
    # Expanded variants only where a pattern names them explicitly (the
    # SoftmaxCrossEntropyLoss ones need NegativeLogLikelihoodLoss).
    names = [n for n in names if not n.endswith("_expanded") or
             any(p.endswith("_expanded") and fnmatch.fnmatch(n, p)
                 for p in patterns)]
    work = args.work or tempfile.mkdtemp(prefix="tessera-node-tests-")
    passed = failed = 0
    width = max((len(n) for n in names), default=10)
    for name in names:
        try:
            status, detail = run_test(name, args, work)
        except Exception as e:  # a harness problem is a failure, not a crash
            status, detail = "FAIL", f"harness error: {type(e).__name__}: {e}"
        print(f"{status}  {name:<{width}}  {detail}")
        if status == "PASS":
            passed += 1
        else:
            failed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
