#!/usr/bin/python3
"""Compares two one-device checkpoints of the same model after the same steps.

  compare_checkpoints.py A_DIR B_DIR --model MODEL_DIR

A_DIR and B_DIR are checkpoint directories (their newest step-NNNNNNNN) of
one rank each, e.g. a tensor-parallel run's checkpoint put together on one
device (OUT/run --resume --checkpoint-dir with every step done) and the
one-device run's own. Two plans compute the same steps with float32 sums in
another order, so after t steps every parameter and first moment agrees
normwise within (t + 1) tau (relative; tau = 2 D gamma_N + 2u from the
model's sizes, fp32_bound.py, the bounded rule of compare_losses.py) and
every second moment, a mean of squared gradients, within twice that. A
piece put back in the wrong place is off by about 1. Prints the worst
tensor of each kind; exit 1 when one is beyond its bound or the
checkpoints differ in step or tensors.
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "gpt"))
from fp32_bound import load_config, two_programs  # noqa: E402
from safetensors_io import load_file  # noqa: E402


def newest(path):
    steps = sorted(n for n in os.listdir(path) if n.startswith("step-"))
    if not steps:
        sys.exit(f"{path}: no checkpoint")
    return os.path.join(path, steps[-1]), int(steps[-1][5:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--model", required=True)
    args = ap.parse_args()
    (a_dir, a_step), (b_dir, b_step) = newest(args.a), newest(args.b)
    if a_step != b_step:
        print(f"FAIL steps {a_step} and {b_step}")
        return 1
    a = load_file(os.path.join(a_dir, "rank-00000.safetensors"))
    b = load_file(os.path.join(b_dir, "rank-00000.safetensors"))
    if set(a) != set(b):
        print(f"FAIL tensors differ: {sorted(set(a) ^ set(b))}")
        return 1
    tau = two_programs(load_config(args.model))
    ok = True
    worst = {}
    for name in sorted(b):
        x, y = a[name].astype(np.float64), b[name].astype(np.float64)
        if x.shape != y.shape:
            print(f"FAIL {name}: shapes {x.shape} and {y.shape}")
            return 1
        kind = name.split("/")[0] if "/" in name else "parameters"
        bound = (a_step + 1) * tau * (2 if kind.endswith(".v") else 1)
        rel = np.linalg.norm(x - y) / max(np.linalg.norm(y), 1e-30)
        if rel > bound:
            print(f"FAIL {name}: normwise {rel:.2e} > {bound:.2e}")
            ok = False
        if kind not in worst or rel > worst[kind][1]:
            worst[kind] = (name, rel, bound)
    for kind, (name, rel, bound) in sorted(worst.items()):
        print(f"{'ok' if rel <= bound else 'FAIL'} {kind}: worst {name} "
              f"within {rel:.2e} (bound {bound:.2e})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
