#!/usr/bin/python3
"""Check an exported model directory (model.onnx + reference files) for consistency.

    /usr/bin/python3 examples/gpt/check_reference.py examples/gpt/tiny [--data FILE.bin]

1. The ONNX model passes onnx.checker; its initializers are exactly the tensors of
   init.safetensors (names, order, shapes, values).
2. The first batch read from the token file under the batching rule equals the one
   recorded in reference.json (and the file's sha256 matches).
3. The exported GRAPH is evaluated on the first batch by a small numpy interpreter
   (below; onnx 1.12 has no onnx.reference.ReferenceEvaluator, and onnxruntime is
   not packaged by Debian), in float32 and in float64: its loss must equal PyTorch's
   ``init_loss`` to relative 1e-5 and its logits PyTorch's logits. This shows the
   exported graph is the same computation as the PyTorch model.
4. PyTorch, started from init.safetensors, reproduces the loss, grads.safetensors
   (norm-wise relative 1e-6 per parameter) and the SGD and AdamW loss sequences
   (and final weights, if present) of reference.json. (Skipped with --no-torch.)

Exits non-zero on the first failure.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import safetensors_io  # noqa: E402


# ------------------------------------------------------------ numpy ONNX interpreter

class NumpyOnnx:
    """Evaluates an ONNX graph made of the ops the example GPT uses (and a few more).

    Floating-point tensors are computed in ``float_dtype`` (float32 or float64).
    Dropout is the identity when its ratio is 0 or training_mode is false; a
    training-mode Dropout with ratio > 0 is random and is refused.
    """

    def __init__(self, model, float_dtype=np.float32):
        from onnx import mapping, numpy_helper
        self.model = model
        self.fdt = np.dtype(float_dtype)
        self._np_type = lambda t: self._fix(np.dtype(mapping.TENSOR_TYPE_TO_NP_TYPE[t]))
        self._to_array = numpy_helper.to_array

    def _fix(self, dt: np.dtype) -> np.dtype:
        return self.fdt if dt.kind == "f" else dt

    def _arr(self, a) -> np.ndarray:
        a = np.asarray(a)
        return a.astype(self.fdt) if a.dtype.kind == "f" else a

    def run(self, feeds: dict) -> dict:
        import onnx
        g = self.model.graph
        env = {t.name: self._arr(self._to_array(t)) for t in g.initializer}
        env.update({k: self._arr(v) for k, v in feeds.items()})
        for node in g.node:
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
            ins = [env[n] if n else None for n in node.input]
            fn = getattr(self, "op_" + node.op_type, None)
            if fn is None:
                raise NotImplementedError(f"op {node.op_type} is not implemented by the numpy evaluator")
            outs = fn(ins, attrs, len(node.output))
            if not isinstance(outs, (list, tuple)):
                outs = [outs]
            for name, val in zip(node.output, outs):
                if name:
                    env[name] = np.asarray(val)
        return {o.name: env[o.name] for o in g.output}

    # -- elementwise
    def op_Add(self, i, a, n): return i[0] + i[1]
    def op_Sub(self, i, a, n): return i[0] - i[1]
    def op_Mul(self, i, a, n): return i[0] * i[1]

    def op_Div(self, i, a, n):
        x, y = i
        if x.dtype.kind in "iu":
            return (np.trunc(x / y)).astype(x.dtype)
        return x / y

    def op_Pow(self, i, a, n): return np.power(i[0], i[1].astype(i[0].dtype))
    def op_Sqrt(self, i, a, n): return np.sqrt(i[0])
    def op_Tanh(self, i, a, n): return np.tanh(i[0])
    def op_Relu(self, i, a, n): return np.maximum(i[0], 0).astype(i[0].dtype)
    def op_Identity(self, i, a, n): return i[0]

    def op_Erf(self, i, a, n):
        x = i[0]
        return np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64)).astype(x.dtype)

    def op_Gelu(self, i, a, n):
        x = i[0]
        if a.get("approximate", b"none") in (b"tanh", "tanh"):
            return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
        return 0.5 * x * (1 + self.op_Erf([x / math.sqrt(2)], {}, 1))

    def op_Equal(self, i, a, n): return np.equal(i[0], i[1])
    def op_Where(self, i, a, n): return np.where(i[0], i[1], i[2])
    def op_Cast(self, i, a, n): return i[0].astype(self._np_type(a["to"]))

    # -- linear algebra and normalisation
    def op_MatMul(self, i, a, n): return np.matmul(i[0], i[1])

    def op_Gemm(self, i, a, n):
        A = i[0].T if a.get("transA", 0) else i[0]
        B = i[1].T if a.get("transB", 0) else i[1]
        y = a.get("alpha", 1.0) * (A @ B)
        if len(i) > 2 and i[2] is not None:
            y = y + a.get("beta", 1.0) * i[2]
        return y.astype(i[0].dtype)

    def op_LayerNormalization(self, i, a, n):
        x, scale = i[0], i[1]
        bias = i[2] if len(i) > 2 else None
        axis = a.get("axis", -1) % x.ndim
        axes = tuple(range(axis, x.ndim))
        eps = a.get("epsilon", 1e-5)
        mean = x.mean(axis=axes, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
        inv = 1.0 / np.sqrt(var + eps)
        y = (x - mean) * inv * scale
        if bias is not None:
            y = y + bias
        return [y.astype(x.dtype), mean, inv][:n]

    def op_Softmax(self, i, a, n):
        x = i[0]
        axis = a.get("axis", -1)
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)

    def op_ReduceMean(self, i, a, n):
        axes = a.get("axes")
        return i[0].mean(axis=tuple(axes) if axes is not None else None,
                         keepdims=bool(a.get("keepdims", 1)))

    def op_SoftmaxCrossEntropyLoss(self, i, a, n):
        scores, labels = i[0], i[1].astype(np.int64)
        weights = i[2] if len(i) > 2 else None
        reduction = a.get("reduction", b"mean")
        reduction = reduction.decode() if isinstance(reduction, bytes) else reduction
        ignore = a.get("ignore_index")
        s = scores - scores.max(axis=1, keepdims=True)
        logp = s - np.log(np.exp(s).sum(axis=1, keepdims=True))       # (N, C, ...)
        keep = np.ones(labels.shape, dtype=bool) if ignore is None else labels != ignore
        safe = np.where(keep, labels, 0)
        picked = np.take_along_axis(logp, np.expand_dims(safe, 1), axis=1).squeeze(1)
        w = weights[safe] if weights is not None else np.ones(labels.shape, dtype=scores.dtype)
        w = np.where(keep, w, 0).astype(scores.dtype)
        loss = -picked * w
        if reduction == "mean":
            loss = loss.sum() / w.sum()
        elif reduction == "sum":
            loss = loss.sum()
        return [np.asarray(loss, dtype=scores.dtype), logp][:n]

    def op_Dropout(self, i, a, n):
        x = i[0]
        ratio = float(i[1]) if len(i) > 1 and i[1] is not None else 0.5
        training = bool(i[2]) if len(i) > 2 and i[2] is not None else False
        if training and ratio > 0:
            raise NotImplementedError("training-mode Dropout with ratio > 0 is random; "
                                      "export with --dropout 0 to compare")
        return [x, np.ones(x.shape, dtype=bool)][:n]

    # -- shapes and data movement
    def op_Constant(self, i, a, n):
        if "value" in a:
            return self._arr(self._to_array(a["value"]))
        for k, dt in (("value_float", self.fdt), ("value_floats", self.fdt),
                      ("value_int", np.int64), ("value_ints", np.int64)):
            if k in a:
                return np.array(a[k], dtype=dt)
        raise NotImplementedError(f"Constant with attributes {list(a)}")

    def op_ConstantOfShape(self, i, a, n):
        v = self._arr(self._to_array(a["value"])) if "value" in a else np.zeros(1, self.fdt)
        return np.full(tuple(i[0].astype(np.int64)), v.reshape(-1)[0], dtype=v.dtype)

    def op_Shape(self, i, a, n):
        s = np.array(i[0].shape, dtype=np.int64)
        return s[a.get("start", 0):a.get("end", None)]

    def op_Reshape(self, i, a, n):
        x, shape = i[0], [int(d) for d in i[1]]
        if not a.get("allowzero", 0):
            shape = [x.shape[k] if d == 0 else d for k, d in enumerate(shape)]
        return x.reshape(shape)

    def op_Transpose(self, i, a, n):
        perm = a.get("perm")
        return np.transpose(i[0], perm if perm is not None else None)

    def op_Split(self, i, a, n):
        x = i[0]
        axis = a.get("axis", 0)
        sizes = [int(s) for s in i[1]] if len(i) > 1 and i[1] is not None else \
            [x.shape[axis] // n] * n
        return np.split(x, np.cumsum(sizes)[:-1], axis=axis)

    def op_Slice(self, i, a, n):
        x, starts, ends = i[0], i[1], i[2]
        axes = i[3] if len(i) > 3 and i[3] is not None else range(len(starts))
        steps = i[4] if len(i) > 4 and i[4] is not None else [1] * len(starts)
        sl = [slice(None)] * x.ndim
        for s, e, ax, st in zip(starts, ends, axes, steps):
            sl[int(ax)] = slice(int(s), int(e), int(st))
        return x[tuple(sl)]

    def op_Concat(self, i, a, n): return np.concatenate(i, axis=a["axis"])

    def op_Unsqueeze(self, i, a, n):
        x = i[0]
        r = x.ndim + len(i[1])
        for ax in sorted(int(v) % r for v in i[1]):
            x = np.expand_dims(x, ax)
        return x

    def op_Squeeze(self, i, a, n):
        if len(i) > 1 and i[1] is not None:
            return np.squeeze(i[0], axis=tuple(int(v) for v in i[1]))
        return np.squeeze(i[0])

    def op_Expand(self, i, a, n):
        shape = np.broadcast_shapes(i[0].shape, tuple(int(d) for d in i[1]))
        return np.broadcast_to(i[0], shape).copy()

    def op_Gather(self, i, a, n): return np.take(i[0], i[1].astype(np.int64), axis=a.get("axis", 0))


# ---------------------------------------------------------------------- checks

def rel(a, b) -> float:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    d = np.linalg.norm((a - b).ravel())
    nb = np.linalg.norm(b.ravel())
    return float(d / nb) if nb > 0 else float(d)


class Checker:
    def __init__(self):
        self.failed = 0

    def __call__(self, ok: bool, what: str) -> None:
        print(("ok    " if ok else "FAIL  ") + what, flush=True)
        if not ok:
            self.failed += 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", help="a directory written by export.py")
    ap.add_argument("--data", default=None, help="token file (default: data/<file named in reference.json>)")
    ap.add_argument("--no-torch", action="store_true", help="skip the PyTorch re-runs")
    args = ap.parse_args(argv)

    import onnx
    import onnx.numpy_helper

    check = Checker()
    with open(os.path.join(args.dir, "reference.json")) as f:
        ref = json.load(f)
    cfg = ref["config"]
    B, T = ref["batching"]["B"], ref["batching"]["T"]
    files = ref["files"]
    init = safetensors_io.load_file(os.path.join(args.dir, files["init"]))
    grads = safetensors_io.load_file(os.path.join(args.dir, files["grads"]))

    # 1. the ONNX model and its initializers
    model = onnx.load(os.path.join(args.dir, files["model"]))
    onnx.checker.check_model(model)
    check(True, "onnx.checker.check_model")
    inits = [(t.name, onnx.numpy_helper.to_array(t)) for t in model.graph.initializer]
    check([n for n, _ in inits] == list(init), "initializer names and order == init.safetensors")
    check(all(np.array_equal(v, init[n]) for n, v in inits if n in init),
          "initializer values == init.safetensors")
    check(list(grads) == list(init) and all(grads[n].shape == init[n].shape for n in init),
          "grads.safetensors has one gradient per parameter, same shapes")

    # 2. the first batch
    data = args.data or os.path.join(HERE, "data", ref["data"]["file"])
    with open(data, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    check(digest == ref["data"]["sha256"], f"sha256 of {data}")
    tokens = np.fromfile(data, dtype="<u2")
    m = len(tokens) - T - 1
    offs = [((0 * B + j) * T) % m for j in range(B)]
    idx = np.stack([tokens[o:o + T] for o in offs]).astype(np.int64)
    targets = np.stack([tokens[o + 1:o + T + 1] for o in offs]).astype(np.int64)
    check(offs == ref["first_batch"]["offsets"] and idx.tolist() == ref["first_batch"]["idx"]
          and targets.tolist() == ref["first_batch"]["targets"], "first batch == reference.json")

    if cfg["dropout"] > 0:
        print(f"skip  dropout {cfg['dropout']} > 0: the graph's training-mode Dropout ops are random, "
              "so neither the numpy interpreter nor a re-run can reproduce the reference")
        return 1 if check.failed else 0

    # 3. the exported graph, run by the numpy interpreter
    results = {}
    for dt in (np.float32, np.float64):
        out = NumpyOnnx(model, dt).run({"idx": idx, "targets": targets})
        results[np.dtype(dt).name] = out
        r = abs(float(out["loss"]) - ref["init_loss"]) / abs(ref["init_loss"])
        check(r <= 1e-5, f"ONNX graph ({np.dtype(dt).name}) loss {float(out['loss']):.8f} vs PyTorch "
                         f"{ref['init_loss']:.8f}: rel {r:.2e} <= 1e-5")
        check(out["logits"].shape == (B, T, cfg["vocab"]), f"ONNX logits shape {out['logits'].shape}")

    if args.no_torch:
        return 1 if check.failed else 0

    # 4. PyTorch from init.safetensors
    import torch
    import export as E
    from model import GPT, GPTConfig
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    gpt = GPT(GPTConfig(**cfg))
    gpt.load_state_dict({k: torch.from_numpy(v) for k, v in init.items()}, strict=True)
    gpt.train()
    logits, loss = gpt(torch.from_numpy(idx), torch.from_numpy(targets))
    loss.backward()
    check(float(loss.item()) == ref["init_loss"], f"PyTorch loss from init.safetensors == init_loss "
                                                  f"({float(loss.item())!r})")
    for name, out in results.items():
        r = rel(out["logits"], logits.detach().numpy())
        check(r <= 1e-5, f"ONNX graph ({name}) logits vs PyTorch: norm-wise rel {r:.2e} <= 1e-5")
    worst = max((rel(p.grad.numpy(), grads[n]), n) for n, p in gpt.named_parameters())
    check(worst[0] <= 1e-6, f"gradients == grads.safetensors (worst {worst[1]}: rel {worst[0]:.2e})")
    for n, p in gpt.named_parameters():
        r = abs(float(np.linalg.norm(p.grad.numpy().astype(np.float64))) - ref["grad_norms"][n])
        if r > 1e-6 * max(ref["grad_norms"][n], 1e-30):
            check(False, f"grad_norms[{n}]")
    gpt.zero_grad(set_to_none=True)

    # ignore_index: mask every 7th target in both PyTorch and the ONNX graph.
    masked = targets.copy()
    masked.reshape(-1)[::7] = cfg["ignore_index"]
    with torch.no_grad():
        _, tloss = gpt(torch.from_numpy(idx), torch.from_numpy(masked))
    oloss = float(NumpyOnnx(model, np.float64).run({"idx": idx, "targets": masked})["loss"])
    r = abs(oloss - float(tloss)) / abs(float(tloss))
    check(r <= 1e-5, f"ignore_index {cfg['ignore_index']}: ONNX graph loss {oloss:.8f} vs PyTorch "
                     f"{float(tloss):.8f}: rel {r:.2e}")

    opt_cfg = {
        "sgd": lambda ps: torch.optim.SGD(ps, lr=ref["sgd"]["lr"], momentum=ref["sgd"]["momentum"],
                                          dampening=ref["sgd"]["dampening"],
                                          weight_decay=ref["sgd"]["weight_decay"],
                                          nesterov=ref["sgd"]["nesterov"]),
        "adamw": lambda ps: torch.optim.AdamW(ps, lr=ref["adamw"]["lr"], betas=tuple(ref["adamw"]["betas"]),
                                              eps=ref["adamw"]["eps"],
                                              weight_decay=ref["adamw"]["weight_decay"],
                                              amsgrad=ref["adamw"]["amsgrad"]),
    }
    for name, make in opt_cfg.items():
        losses, final = E.run_optimizer(gpt, make, tokens, B, T, ref[name]["steps"])
        r = max(abs(a - b) / abs(b) for a, b in zip(losses, ref[name]["losses"]))
        check(r <= 1e-6, f"{name}: {len(losses)} losses reproduced (max rel {r:.2e})")
        key = f"final_{name}"
        if key in files:
            saved = safetensors_io.load_file(os.path.join(args.dir, files[key]))
            # AdamW turns the rounding noise of the key part of c_attn.bias,
            # whose exact gradient is 0 (README, "Numerical caveats"), into
            # updates of about lr: that tensor depends on the machine's
            # kernels and is left out of the AdamW comparison; the same
            # division makes the other AdamW weights differ by up to ~3e-6
            # between correct float32 runs on different CPUs (float32 vs
            # float64 PyTorch: 3e-6), hence 1e-5 there.
            tol = 1e-5 if name == "adamw" else 1e-6
            skip = {n for n in saved if name == "adamw" and n.endswith("attn.c_attn.bias")}
            worst = max((rel(final[n], saved[n]), n) for n in saved if n not in skip)
            check(worst[0] <= tol, f"{name}: final weights == {files[key]} (worst {worst[1]}: "
                                    f"{worst[0]:.2e}{'; c_attn.bias left out' if skip else ''})")

    print(f"{'FAILED' if check.failed else 'all checks passed'} ({args.dir})")
    return 1 if check.failed else 0


if __name__ == "__main__":
    sys.exit(main())
