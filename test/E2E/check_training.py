#!/usr/bin/python3
"""Compares an emitted training program's run with PyTorch's reference.

  check_training.py --reference DIR [--sgd LOG.jsonl] [--adamw LOG.jsonl]
                    [--grads GRADS.safetensors]

DIR holds reference.json and grads.safetensors as examples/gpt/export.py
writes them. LOG files are the program's stdout (one JSON line per step).
Checks: the first loss to relative 1e-5; every parameter gradient norm-wise
to relative 1e-4 (parameters whose reference gradient is itself rounding
noise, with norm below 1e-6 of the global norm, are compared absolutely
against that scale); each step's loss to relative 1e-4. Exit 1 on any
failure, with a table of what was compared.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "gpt"))
import numpy as np  # noqa: E402
from safetensors_io import load_file  # noqa: E402


def read_losses(path):
    losses = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                losses.append(float(json.loads(line)["loss"]))
    return losses


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reference", required=True)
    ap.add_argument("--sgd")
    ap.add_argument("--adamw")
    ap.add_argument("--grads")
    ap.add_argument("--loss-rtol", type=float, default=1e-5)
    ap.add_argument("--grad-rtol", type=float, default=1e-4)
    ap.add_argument("--steps-rtol", type=float, default=1e-4)
    args = ap.parse_args()

    ref = json.load(open(os.path.join(args.reference, "reference.json")))
    failures = []

    def check(what, err, tol):
        ok = err <= tol
        print(f"{'ok  ' if ok else 'FAIL'} {what}: {err:.3e} (tolerance {tol:g})")
        if not ok:
            failures.append(what)

    for name in ("sgd", "adamw"):
        log = getattr(args, name)
        if not log:
            continue
        losses = read_losses(log)
        expected = ref[name]["losses"]
        if len(losses) < len(expected):
            failures.append(f"{name}: {len(losses)} steps logged, "
                            f"{len(expected)} expected")
            print("FAIL", failures[-1])
            continue
        check(f"{name} first loss {losses[0]:.7f} vs {expected[0]:.7f}",
              rel(losses[0], expected[0]), args.loss_rtol)
        worst = max(rel(a, b) for a, b in zip(losses, expected))
        check(f"{name} {len(expected)} step losses (worst)", worst,
              args.steps_rtol)

    if args.grads:
        ours = load_file(args.grads)
        theirs = load_file(os.path.join(args.reference, "grads.safetensors"))
        scale = float(ref["global_grad_norm"])
        for name, g_ref in theirs.items():
            if name not in ours:
                failures.append(f"gradient of {name} missing")
                print("FAIL", failures[-1])
                continue
            g = np.asarray(ours[name], dtype=np.float64)
            g_ref = np.asarray(g_ref, dtype=np.float64)
            if g.shape != g_ref.shape:
                failures.append(f"gradient of {name}: shape {g.shape} vs "
                                f"{g_ref.shape}")
                print("FAIL", failures[-1])
                continue
            diff = np.linalg.norm(g - g_ref)
            norm = np.linalg.norm(g_ref)
            if norm < 1e-6 * scale:
                check(f"grad {name} (noise-level reference, vs global norm)",
                      diff / scale, args.grad_rtol)
            else:
                check(f"grad {name}", diff / norm, args.grad_rtol)

    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
