#!/usr/bin/python3
"""Checks that a parallel plan computes the same training as one device.

  check_equivalence.py REF_DIR PLAN_DIR [--rtol 1e-5]

Each directory holds train.jsonl (the program's stdout: one JSON line per
step), final.safetensors (--save) and memory.json (tessera-compile's
predicted peak tensor memory per rank). Every step's loss must agree to the
relative tolerance, and every parameter norm-wise; the same parameter names
must be saved; and each rank's measured peak tensor memory must be within
--memory-rtol (10 %) of the prediction. Exit 1 on any failure, with what was
compared.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "gpt"))
import numpy as np  # noqa: E402
from safetensors_io import load_file  # noqa: E402


def losses(path):
    with open(path) as f:
        return [float(json.loads(l)["loss"]) for l in f if l.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("reference")
    ap.add_argument("plan")
    ap.add_argument("--rtol", type=float, default=1e-5)
    ap.add_argument("--memory-rtol", type=float, default=0.10)
    args = ap.parse_args()
    name = os.path.basename(os.path.normpath(args.plan))
    failures = []

    ref_l = losses(os.path.join(args.reference, "train.jsonl"))
    got_l = losses(os.path.join(args.plan, "train.jsonl"))
    if len(got_l) != len(ref_l):
        failures.append(f"{len(got_l)} steps logged, {len(ref_l)} expected")
    worst_loss = max((abs(a - b) / abs(b) for a, b in zip(got_l, ref_l)),
                     default=0.0)
    if worst_loss > args.rtol:
        failures.append(f"losses differ by {worst_loss:.2e}: {got_l} vs {ref_l}")

    ref_w = load_file(os.path.join(args.reference, "final.safetensors"))
    got_w = load_file(os.path.join(args.plan, "final.safetensors"))
    if sorted(ref_w) != sorted(got_w):
        failures.append(f"saved parameters differ: missing "
                        f"{sorted(set(ref_w) - set(got_w))}, extra "
                        f"{sorted(set(got_w) - set(ref_w))}")
    worst_w, worst_name = 0.0, ""
    for k in ref_w:
        if k not in got_w:
            continue
        a = np.asarray(got_w[k], np.float64)
        b = np.asarray(ref_w[k], np.float64)
        if a.shape != b.shape:
            failures.append(f"{k}: shape {a.shape} vs {b.shape}")
            continue
        rel = np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30)
        if rel > worst_w:
            worst_w, worst_name = rel, k
    if worst_w > args.rtol:
        failures.append(f"weights differ: {worst_name} by {worst_w:.2e}")

    # Memory: the prediction against the runtime's measured per-rank peaks.
    worst_mem = 0.0
    for d in (args.reference, args.plan):
        with open(os.path.join(d, "memory.json")) as f:
            predicted = json.load(f)["adamw"]
        with open(os.path.join(d, "train.jsonl")) as f:
            last = json.loads([l for l in f if l.strip()][-1])
        measured = last.get("peak_bytes_per_rank", [last["peak_bytes"]])
        if len(measured) != len(predicted):
            failures.append(f"{d}: {len(measured)} measured peaks, "
                            f"{len(predicted)} predicted")
            continue
        for p, m in zip(predicted, measured):
            worst_mem = max(worst_mem, abs(p - m) / m)
    if worst_mem > args.memory_rtol:
        failures.append(f"memory prediction off by {worst_mem:.1%}")

    status = "FAIL" if failures else "ok"
    print(f"{status} {name}: {len(got_l)} steps, worst loss difference "
          f"{worst_loss:.1e}, worst weight difference {worst_w:.1e} "
          f"({worst_name or '-'}), memory prediction within {worst_mem:.2%}")
    for f in failures:
        print(f"  {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
