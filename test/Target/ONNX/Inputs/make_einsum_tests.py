#!/usr/bin/python3
"""Writes ONNX node tests of Einsum in libonnx-testdata's layout, in float32
(the library's own Einsum tests are float64, which tsr's graph inputs lack):
OUT/test_einsum_<name>/model.onnx and test_data_set_0/{input,output}_N.pb,
the outputs computed by numpy.einsum in float64 and rounded to float32.

    make_einsum_tests.py OUT
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# name: (equation, operand shapes)
CASES = {
    "outer": ("i,j->ij", [(3,), (4,)]),
    "bmm": ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    "attention_scores": ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    "attention_values": ("bhqk,bhkd->bqhd", [(2, 2, 3, 5), (2, 2, 5, 4)]),
    "inner": ("i,i", [(5,), (5,)]),
    "implicit_matmul": ("ij,jk", [(3, 4), (4, 2)]),
    "ellipsis_matmul": ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
    "sum_free": ("ij,jk->i", [(3, 4), (4, 2)]),
    "transpose": ("ij->ji", [(3, 4)]),
    "sum": ("ij->i", [(3, 4)]),
    "total": ("ijk->", [(2, 3, 4)]),
    "spaces": ("b i j , b j k -> b k i", [(2, 3, 4), (2, 4, 5)]),
}


def main(out):
    rng = np.random.default_rng(0)
    for name, (equation, shapes) in CASES.items():
        d = os.path.join(out, "test_einsum_" + name)
        os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
        xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        y = np.einsum(equation.replace(" ", ""),
                      *[x.astype(np.float64) for x in xs]).astype(np.float32)
        names = ["x%d" % i for i in range(len(xs))]
        node = helper.make_node("Einsum", names, ["y"], equation=equation)
        graph = helper.make_graph(
            [node], "einsum_" + name,
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, x.shape)
             for n, x in zip(names, xs)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, y.shape)])
        model = helper.make_model(graph,
                                  opset_imports=[helper.make_opsetid("", 17)])
        onnx.checker.check_model(model)
        onnx.save(model, os.path.join(d, "model.onnx"))
        for i, (n, x) in enumerate(zip(names, xs)):
            with open(os.path.join(d, "test_data_set_0", "input_%d.pb" % i),
                      "wb") as f:
                f.write(numpy_helper.from_array(x, n).SerializeToString())
        with open(os.path.join(d, "test_data_set_0", "output_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(y, "y").SerializeToString())


if __name__ == "__main__":
    main(sys.argv[1])
