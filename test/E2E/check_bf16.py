#!/usr/bin/python3
"""Checks `--precision bf16` programs against their fp32 program.

  check_bf16.py --reference DIR FP32_OUT,BF16_OUT [...]

DIR is examples/gpt/export.py's output; each OUT is a run_plan.sh output
(train.jsonl: 5 AdamW steps, memory.json) of one plan, compiled without and
with --precision bf16. For each pair:

  * the first loss against PyTorch's float64 loss: within the bound of
    bf16_bound.py (its probabilistic bound, which is below its worst-case
    first-order bound) plus the float32 evaluation's own bound b
    (fp32_bound.py), relative to the loss;
  * every step's measured peak tensor memory of every rank equals the
    prediction in memory.json, exactly;
  * each rank's peak is below the same rank's peak of the fp32 program.

The fp32 program's first loss is checked against the float64 loss within b
(the base the bound is added to). Exit 1 on any failure.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fp32_bound import one_program  # noqa: E402


def lines(out):
    with open(os.path.join(out, "train.jsonl")) as f:
        return [json.loads(x) for x in f.read().splitlines() if x.strip()]


def peaks(out):
    """(measured peaks per step and rank, predicted per rank)."""
    measured = [s.get("peak_bytes_per_rank", [s.get("peak_bytes")])
                for s in lines(out)]
    with open(os.path.join(out, "memory.json")) as f:
        predicted = json.load(f)["adamw"]
    return measured, predicted


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reference", required=True)
    ap.add_argument("pairs", nargs="+", metavar="FP32_OUT,BF16_OUT")
    args = ap.parse_args()

    with open(os.path.join(args.reference, "reference.json")) as f:
        config = json.load(f)["config"]
    b = one_program(config)
    bound = json.loads(subprocess.check_output(
        [sys.executable, os.path.join(HERE, "bf16_bound.py"), args.reference]))
    exact = bound["loss_f64"]
    tol = bound["probabilistic_bound"] + b * abs(exact)
    print(f"float64 loss {exact:.9f}; bf16 bound: first-order worst case "
          f"{bound['bound']:.3e}, probabilistic {bound['probabilistic_bound']:.3e} "
          f"over {bound['sites']} sites; float32 b = {b:.2e}")
    failed = False

    for pair in args.pairs:
        fp32, out = pair.split(",")
        name = os.path.basename(os.path.normpath(out))
        fp32_first = lines(fp32)[0]["loss"]
        ok = abs(fp32_first - exact) <= b * abs(exact)
        failed |= not ok
        print(f"{'ok' if ok else 'FAIL'} {name} fp32 first loss "
              f"{fp32_first:.9f} (|diff| {abs(fp32_first - exact):.2e} <= "
              f"{b * abs(exact):.2e})")
        first = lines(out)[0]["loss"]
        diff = abs(first - exact)
        ok = diff <= tol
        failed |= not ok
        print(f"{'ok' if ok else 'FAIL'} {name} bf16 first loss {first:.9f} "
              f"(|diff| {diff:.2e} <= {tol:.2e}, {diff / tol:.3f} of the "
              f"bound)")
        measured, predicted = peaks(out)
        same = all(step == predicted for step in measured)
        fp32_peaks = peaks(fp32)[1]
        lower = len(fp32_peaks) == len(predicted) and all(
            p < q for p, q in zip(predicted, fp32_peaks))
        failed |= not (same and lower)
        print(f"{'ok' if same else 'FAIL'} {name} peak measured "
              f"{measured[0]} = predicted {predicted} at every step")
        print(f"{'ok' if lower else 'FAIL'} {name} peak below fp32's "
              f"{fp32_peaks} (x{max(predicted) / max(fp32_peaks):.3f})")
    print("FAIL" if failed else "ok bf16")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
