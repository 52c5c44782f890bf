#!/usr/bin/python3
"""Compares the losses of two runs' JSON step lines, step by step.

  compare_losses.py A.jsonl B.jsonl --model MODEL_DIR [--first K]

Two programs that compute the same steps with float32 sums in another
order (another plan) agree on the loss of step t within (t + 1) tau,
relative, tau = 2 D gamma_N + 2u from the model's sizes (fp32_bound.py; the
bounded rule of check_equivalence.py). Steps are matched by their "step"
numbers; only steps >= K are compared. Exit 1 on a difference or when no
step is common.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fp32_bound import load_config, two_programs  # noqa: E402


def read(path):
    out = {}
    for line in open(path):
        if line.strip():
            j = json.loads(line)
            out[j["step"]] = float(j["loss"])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--model", required=True)
    ap.add_argument("--first", type=int, default=0)
    args = ap.parse_args()
    tau = two_programs(load_config(args.model))
    a, b = read(args.a), read(args.b)
    steps = sorted(t for t in set(a) & set(b) if t >= args.first)
    if not steps:
        print("FAIL no common step")
        return 1
    worst = max(steps, key=lambda t: abs(a[t] - b[t]) / abs(b[t]) / (t + 1))
    rel = abs(a[worst] - b[worst]) / abs(b[worst])
    ok = rel <= (worst + 1) * tau
    print(f"{'ok' if ok else 'FAIL'} steps {steps[0]}-{steps[-1]}: worst step {worst} "
          f"within {rel:.2e} (bound (t+1) tau = {(worst + 1) * tau:.2e})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
