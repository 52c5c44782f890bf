#!/usr/bin/python3
"""Compares an emitted training program's run with PyTorch's reference.

  check_training.py --reference DIR [--sgd LOG.jsonl] [--adamw LOG.jsonl]
                    [--grads GRADS.safetensors]

DIR holds reference.json, grads.safetensors and grads_f64.safetensors as
examples/gpt/export.py writes them. LOG files are the program's stdout (one
JSON line per step). The tolerances are derived, not chosen (fp32_bound.py):
with D reductions of at most N terms in sequence, one float32 evaluation is
within b = D gamma_N of the exact value, two within 2b.

  * the first loss and every parameter's first-step gradient (norm-wise)
    against PyTorch in float64: within b (gradients whose reference norm
    is below b times the global norm, i.e. rounding noise themselves, are
    compared absolutely against b times the global norm);
  * each step's loss against PyTorch's float32 run: step t (0-based) within
    2 (t + 1) b, relative (each step's forward adds at most 2b, to first
    order; AdamW's division near eps moves weights whose gradient is below
    about eps, which changes the loss only through those gradients). A
    reference trained with clipping (export.py --clip-norm) is compared
    with a run that clips the same way;
  * the first step's "grad_norm" (the global gradient norm) against the
    float64 gradients' norm G: each parameter's gradient is within b of its
    own norm, or within b G for the k noise-level ones (above), so the
    norm is within b sqrt(1 + k) (relative) of G, plus the norm's own
    float32 evaluation: sums of squares over at most M elements per
    parameter, then P parameters in sequence, gamma_M + gamma_P (the
    square root halves a relative error).

Exit 1 on any failure, with a table of what was compared.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "gpt"))
sys.path.insert(0, HERE)
import numpy as np  # noqa: E402
from safetensors_io import load_file  # noqa: E402
from fp32_bound import gamma, one_program, reductions  # noqa: E402


def read_losses(path, key="loss"):
    values = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                values.append(json.loads(line).get(key))
    return values


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reference", required=True)
    ap.add_argument("--sgd")
    ap.add_argument("--adamw")
    ap.add_argument("--grads")
    args = ap.parse_args()

    ref = json.load(open(os.path.join(args.reference, "reference.json")))
    b = one_program(ref["config"])
    n, d = reductions(ref["config"])
    print(f"bound b = D gamma_N = {b:.3e} (N {n}, D {d})")
    failures = []

    def check(what, err, tol):
        ok = err <= tol
        print(f"{'ok  ' if ok else 'FAIL'} {what}: {err:.3e} (tolerance {tol:.3e})")
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
        if ref[name].get("clip_norm", 0) > 0:
            print(f"     {name} reference clipped to global norm "
                  f"{ref[name]['clip_norm']}")
        check(f"{name} first loss {losses[0]:.7f} vs {ref['init_loss_f64']:.7f} "
              f"(float64)", rel(losses[0], ref["init_loss_f64"]), b)
        norms = read_losses(log, "grad_norm")
        if norms[0] is not None:
            g64 = load_file(os.path.join(args.reference, "grads_f64.safetensors"))
            exact = np.sqrt(sum(float(np.sum(np.asarray(g, np.float64) ** 2))
                                for g in g64.values()))
            largest = max(int(np.asarray(g).size) for g in g64.values())
            noise = sum(1 for g in g64.values()
                        if np.linalg.norm(np.asarray(g, np.float64)) < b * exact)
            check(f"{name} first grad_norm {norms[0]:.7f} vs {exact:.7f} "
                  f"(float64)", rel(norms[0], exact),
                  b * np.sqrt(1 + noise) + gamma(largest) + gamma(len(g64)))
        worst_t = max(range(len(expected)),
                      key=lambda t: rel(losses[t], expected[t]) / (t + 1))
        check(f"{name} {len(expected)} step losses (worst: step {worst_t})",
              rel(losses[worst_t], expected[worst_t]), 2 * (worst_t + 1) * b)

    if args.grads:
        ours = load_file(args.grads)
        theirs = load_file(os.path.join(args.reference, "grads_f64.safetensors"))
        scale = np.sqrt(sum(float(np.sum(np.asarray(g, np.float64) ** 2))
                            for g in theirs.values()))
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
            if norm < b * scale:
                check(f"grad {name} (noise-level reference, vs global norm)",
                      diff / scale, b)
            else:
                check(f"grad {name}", diff / norm, b)

    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
