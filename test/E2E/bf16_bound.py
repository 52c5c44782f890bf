#!/usr/bin/python3
"""A first-order bound on the first loss of a `--precision bf16` program.

  bf16_bound.py REFERENCE_DIR      prints {"bound": B, "sites": N, ...}

REFERENCE_DIR is what examples/gpt/export.py writes (reference.json with the
config and the first batch, init.safetensors).

The bf16 program computes every op in f32 and rounds each value it stores
to bf16 once: the working weights, and each op's result (tsr-mixed-precision;
moves of elements are exact, the loss and per-row statistics stay f32).
A rounding replaces a value v by v (1 + d) with |d| <= u = 2^-8 (bf16 keeps
8 significant bits, round to nearest). To first order in the d's, the loss
changes by sum over the rounded values ("sites") of sum_i a_i v_i d_i,
where a = dL/dv is the site's adjoint, so

    |L_bf16 - L_f32| <= B = u * sum_sites sum_i |a_i v_i|   (+ O(u^2)).

B is evaluated here with PyTorch in float64: the sites are the parameters
and every float result of a torch function in the model's forward, except
views and copies (exact moves) and the loss. Tessera's sites are a subset
of these (its fused ops round fewer intermediate values, e.g. one site for
attention where PyTorch has five), so B bounds its first-order error; a
non-finite value (the -inf of a mask) is exact in bf16 and counts nothing.

B assumes every rounding goes the worst way at once. The tests also use the
tighter bound of the probabilistic model (below), under which B's sum of
|t_i| becomes a square root of the sum of t_i^2.
"""
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "gpt"))
import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch.overrides import TorchFunctionMode  # noqa: E402
from model import GPT, GPTConfig  # noqa: E402
from safetensors_io import load_file  # noqa: E402

U = 2.0 ** -8
# The probabilistic model of rounding errors (Higham and Mary, SIAM J. Sci.
# Comput. 41(5), 2019): the d's are independent, mean zero, |d| <= u. Then
# the first-order sum is a sum of independent terms t_i d_i / u, each within
# +-|t_i|, and Hoeffding's inequality bounds it by
#     lambda u sqrt(sum t_i^2)  with probability >= 1 - 2 exp(-lambda^2 / 2);
# lambda = 6.5 makes the failure probability below 1e-9 per comparison.
PROBABILISTIC = 6.5
# Element moves (exact in any type), and the loss, which stays f32.
NOT_SITES = {"reshape", "view", "transpose", "permute", "split", "contiguous",
             "clone", "__getitem__", "expand", "cross_entropy"}


class Sites(TorchFunctionMode):
    """Adds a zero tensor that requires grad to each site's value, so that
    the backward gives the site's adjoint as that tensor's gradient."""

    def __init__(self):
        super().__init__()
        self.sites = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = getattr(func, "__name__", "")
        if (isinstance(out, torch.Tensor) and out.is_floating_point()
                and out.requires_grad and not out._is_view()
                and name not in NOT_SITES):
            with torch._C.DisableTorchFunction():
                z = torch.zeros_like(out, requires_grad=True)
                self.sites.append((name, out.detach(), z))
                out = out + z
        return out


def main():
    ref_dir = sys.argv[1]
    with open(os.path.join(ref_dir, "reference.json")) as f:
        ref = json.load(f)
    cfg = GPTConfig(**ref["config"])
    model = GPT(cfg).double()
    init = load_file(os.path.join(ref_dir, "init.safetensors"))
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.from_numpy(np.asarray(init[name], dtype=np.float64)))
    idx = torch.tensor(ref["first_batch"]["idx"], dtype=torch.int64)
    targets = torch.tensor(ref["first_batch"]["targets"], dtype=torch.int64)
    mode = Sites()
    with mode:
        _, loss = model(idx, targets)
    loss.backward()

    def terms(adjoint, value):
        finite = torch.isfinite(value)
        return (adjoint[finite] * value[finite]).abs()

    total, squares, by_name = 0.0, 0.0, {}
    sites = [(n, v, z.grad) for n, v, z in mode.sites]
    sites += [("parameters", p.detach(), p.grad) for p in model.parameters()]
    for name, value, adjoint in sites:
        t = terms(adjoint, value)
        total += float(t.sum())
        squares += float((t * t).sum())
        by_name[name] = by_name.get(name, 0.0) + U * float(t.sum())
    print(json.dumps({
        "bound": U * total,
        "probabilistic_bound": PROBABILISTIC * U * math.sqrt(squares),
        "loss_f64": float(loss), "sites": len(sites),
        "by_name": dict(sorted(by_name.items()))}))


if __name__ == "__main__":
    main()
