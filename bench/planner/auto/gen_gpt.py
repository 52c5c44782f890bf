#!/usr/bin/python3
"""Writes the forward of a GPT-shaped model as tsr text, without weights.

  gen_gpt.py --layers L --width C --heads H --context T --vocab V --batch B
             [--dtype bf16|f32] [-o model.mlir]

The planner only needs shapes, so parameters are function arguments
(tsr.param) and no initializer is written: a 175B-parameter model is a
few hundred kilobytes of text. The ops and their names follow what the ONNX
importer makes of examples/gpt (layer groups "/h.<i>/..." are the units
dist-plan cuts into stages), with two shortcuts that do not change shapes
or costs: the causal mask is a splat constant (the real one is a triangular
i1 tensor of T x T, which is large as text), and GELU is the tanh-free exact
form x * 0.5 * (1 + erf(x / sqrt 2)) the exporter writes. Then run
tessera-opt -tsr-autodiff -tsr-decompose-means -tsr-optimizer=optimizer=adamw
-inline -symbol-dce -canonicalize -cse to get the training step.
"""
import argparse
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, required=True)
    ap.add_argument("--width", type=int, required=True)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--context", type=int, required=True)
    ap.add_argument("--vocab", type=int, required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "f32"])
    ap.add_argument("-o", dest="out", default="-", help="output (default stdout)")
    opts = ap.parse_args()
    L, C, H, T, V, B, ft = (opts.layers, opts.width, opts.heads, opts.context,
                            opts.vocab, opts.batch, opts.dtype)
    if C % H:
        sys.exit("gen_gpt.py: --heads must divide --width")
    D = C // H
    F = 4 * C

    def ty(*shape):
        return "tensor<" + "x".join(str(s) for s in shape) + ("x" if shape else "") + ft + ">"

    args, body = [], []
    counter = [0]

    def param(name, *shape):
        n = f"%p{len(args)}"
        args.append(f'{n}: {ty(*shape)} {{tsr.param = "{name}"}}')
        return n

    def new():
        counter[0] += 1
        return f"%v{counter[0]}"

    def op(text, loc):
        v = new()
        body.append(f'    {v} = {text} loc("{loc}")')
        return v

    scalar = ty()
    x3 = ty(B, T, C)
    wte = param("wte", V, C)
    wpe = param("wpe", T, C)
    layer_params = []
    for i in range(L):
        pre = f"h.{i}"
        layer_params.append(dict(
            ln1w=param(f"{pre}.ln_1.weight", C), ln1b=param(f"{pre}.ln_1.bias", C),
            qkvw=param(f"{pre}.attn.c_attn.weight", 3 * C, C),
            qkvb=param(f"{pre}.attn.c_attn.bias", 3 * C),
            projw=param(f"{pre}.attn.c_proj.weight", C, C),
            projb=param(f"{pre}.attn.c_proj.bias", C),
            ln2w=param(f"{pre}.ln_2.weight", C), ln2b=param(f"{pre}.ln_2.bias", C),
            fcw=param(f"{pre}.mlp.c_fc.weight", F, C), fcb=param(f"{pre}.mlp.c_fc.bias", F),
            fc2w=param(f"{pre}.mlp.c_proj.weight", C, F),
            fc2b=param(f"{pre}.mlp.c_proj.bias", C)))
    lnfw = param("ln_f.weight", C)
    lnfb = param("ln_f.bias", C)
    idx = f"%p{len(args)}"
    args.append(f'{idx}: tensor<{B}x{T}xi64> {{tsr.input = "idx"}}')
    tgt = f"%p{len(args)}"
    args.append(f'{tgt}: tensor<{B}x{T}xi64> {{tsr.input = "targets"}}')

    def layer_norm(x, w, b, loc):
        v = new()
        body.append(
            f"    {v}:3 = tsr.layer_norm {x}, {w}, {b} {{axis = 2 : i64, epsilon = 1.0E-5 : f64}}"
            f" : ({x3}, {ty(C)}, {ty(C)}) -> ({x3}, {ty(B, T, 1)}, {ty(B, T, 1)})"
            f' loc("{loc}")')
        return v + "#0"

    def linear(x, w, b, n_in, n_out, loc, rows=(B, T)):
        wt = op(f"tsr.transpose {w} {{perm = array<i64: 1, 0>}} : {ty(n_out, n_in)} to {ty(n_in, n_out)}",
                loc + "/Transpose")
        y = op(f"tsr.matmul {x}, {wt} : ({ty(*rows, n_in)}, {ty(n_in, n_out)}) -> {ty(*rows, n_out)}",
               loc + "/MatMul")
        if b is None:
            return y
        return op(f"tsr.add {b}, {y} : ({ty(n_out)}, {ty(*rows, n_out)}) -> {ty(*rows, n_out)}",
                  loc + "/Add")

    def const(value, loc):
        return op(f"tsr.constant dense<{value}> : {scalar}", loc)

    h = op(f"tsr.gather {wte}[{idx}] : ({ty(V, C)}, tensor<{B}x{T}xi64>) -> {x3}", "/wte/Gather")
    h = op(f"tsr.add {h}, {wpe} : ({x3}, {ty(T, C)}) -> {x3}", "/Add")
    s4 = ty(B, T, H, D)
    a4 = ty(B, H, T, D)
    sc = ty(B, H, T, T)
    for i, p in enumerate(layer_params):
        pre = f"/h.{i}"
        a = layer_norm(h, p["ln1w"], p["ln1b"], pre + "/ln_1/LayerNormalization")
        qkv = linear(a, p["qkvw"], p["qkvb"], C, 3 * C, pre + "/attn/c_attn")
        sp = new()
        body.append(f"    {sp}:3 = tsr.split {qkv} {{axis = 2 : i64, sizes = array<i64: {C}, {C}, {C}>}}"
                    f" : {ty(B, T, 3 * C)} -> {x3}, {x3}, {x3} loc(\"{pre}/attn/Split\")")
        q = op(f"tsr.reshape {sp}#0 : {x3} to {s4}", pre + "/attn/Reshape")
        q = op(f"tsr.transpose {q} {{perm = array<i64: 0, 2, 1, 3>}} : {s4} to {a4}", pre + "/attn/Transpose")
        k = op(f"tsr.reshape {sp}#1 : {x3} to {s4}", pre + "/attn/Reshape_1")
        v = op(f"tsr.reshape {sp}#2 : {x3} to {s4}", pre + "/attn/Reshape_2")
        v = op(f"tsr.transpose {v} {{perm = array<i64: 0, 2, 1, 3>}} : {s4} to {a4}", pre + "/attn/Transpose_1")
        k = op(f"tsr.transpose {k} {{perm = array<i64: 0, 2, 3, 1>}} : {s4} to {ty(B, H, D, T)}",
               pre + "/attn/Transpose_2")
        s = op(f"tsr.matmul {q}, {k} : ({a4}, {ty(B, H, D, T)}) -> {sc}", pre + "/attn/MatMul")
        scale = const(f"{1.0 / D ** 0.5:.8e}", pre + "/attn/Constant_4")
        s = op(f"tsr.mul {s}, {scale} : ({sc}, {scalar}) -> {sc}", pre + "/attn/Mul")
        mask = op(f"tsr.constant dense<true> : tensor<{T}x{T}xi1>", pre + "/attn/Cast")
        ninf = const("0xFF80" if ft == "bf16" else "0xFF800000", pre + "/attn/Constant_6")
        s = op(f"tsr.where {mask}, {ninf}, {s} : (tensor<{T}x{T}xi1>, {scalar}, {sc}) -> {sc}",
               pre + "/attn/Where")
        s = op(f"tsr.softmax {s} {{axis = 3 : i64}} : {sc}", pre + "/attn/Softmax")
        o = op(f"tsr.matmul {s}, {v} : ({sc}, {a4}) -> {a4}", pre + "/attn/MatMul_1")
        o = op(f"tsr.transpose {o} {{perm = array<i64: 0, 2, 1, 3>}} : {a4} to {s4}", pre + "/attn/Transpose_3")
        o = op(f"tsr.reshape {o} : {s4} to {x3}", pre + "/attn/Reshape_3")
        o = linear(o, p["projw"], p["projb"], C, C, pre + "/attn/c_proj")
        h = op(f"tsr.add {h}, {o} : ({x3}, {x3}) -> {x3}", pre + "/Add")
        m = layer_norm(h, p["ln2w"], p["ln2b"], pre + "/ln_2/LayerNormalization")
        f = linear(m, p["fcw"], p["fcb"], C, F, pre + "/mlp/c_fc")
        f3 = ty(B, T, F)
        half = const("5.000000e-01", pre + "/mlp/Constant")
        g0 = op(f"tsr.mul {f}, {half} : ({f3}, {scalar}) -> {f3}", pre + "/mlp/Mul")
        sq2 = const("1.41421354", pre + "/mlp/Constant_1")
        g1 = op(f"tsr.div {f}, {sq2} : ({f3}, {scalar}) -> {f3}", pre + "/mlp/Div")
        g1 = op(f"tsr.erf {g1} : {f3}", pre + "/mlp/Erf")
        one = const("1.000000e+00", pre + "/mlp/Constant_2")
        g1 = op(f"tsr.add {g1}, {one} : ({f3}, {scalar}) -> {f3}", pre + "/mlp/Add")
        g = op(f"tsr.mul {g0}, {g1} : ({f3}, {f3}) -> {f3}", pre + "/mlp/Mul_1")
        f = linear(g, p["fc2w"], p["fc2b"], F, C, pre + "/mlp/c_proj")
        h = op(f"tsr.add {h}, {f} : ({x3}, {x3}) -> {x3}", pre + "/Add_1")
    h = layer_norm(h, lnfw, lnfb, "/ln_f/LayerNormalization")
    logits = linear(h, wte, None, C, V, "")
    flat = op(f"tsr.reshape {logits} : {ty(B, T, V)} to {ty(B * T, V)}", "/Reshape")
    t = op(f"tsr.reshape {tgt} : tensor<{B}x{T}xi64> to tensor<{B * T}xi64>", "/Reshape_1")
    loss = op(f"tsr.softmax_cross_entropy mean {flat}, {t} {{ignore_index = -1 : i64}}"
              f" : ({ty(B * T, V)}, tensor<{B * T}xi64>) -> {scalar}", "/SoftmaxCrossEntropyLoss")
    out = sys.stdout if opts.out == "-" else open(opts.out, "w")
    out.write("module {\n")
    out.write("  func.func @forward(" + ", ".join(args) +
              f") -> ({scalar} {{tsr.loss}}) {{\n")
    out.write("\n".join(body) + "\n")
    out.write(f"    return {loss} : {scalar}\n  }}\n}}\n")


if __name__ == "__main__":
    main()
