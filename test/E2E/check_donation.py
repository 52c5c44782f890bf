#!/usr/bin/env python3
"""Checks argument donation: same results, less memory, as predicted.

    check_donation.py DONATED KEPT [--memory-rtol R]

DONATED is a run_plan.sh output (the driver hands the parameters and
optimizer state over to each step, the default); KEPT holds train.jsonl and
final.safetensors of the same program, data and flags run with --no-donate
(the driver keeps the old values through the step). Donation changes only
when a tensor is freed, never a value, so the losses and the saved
parameters must be equal bit for bit. Each rank's measured peak
(train.jsonl's last line) must be lower with donation, and within
--memory-rtol (5 %, issue 14's bound) of DONATED/memory.json, which models
the donated step. Prints one line per rank and exits 1 on any failure.
"""
import argparse
import json
import os
import sys


def losses_and_peaks(d):
    with open(os.path.join(d, "train.jsonl")) as f:
        lines = [json.loads(x) for x in f.read().splitlines() if x.strip()]
    last = lines[-1]
    return ([x["loss"] for x in lines],
            last.get("peak_bytes_per_rank", [last["peak_bytes"]]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("donated")
    ap.add_argument("kept")
    ap.add_argument("--memory-rtol", type=float, default=0.05)
    args = ap.parse_args()
    failures = []
    dl, dp = losses_and_peaks(args.donated)
    kl, kp = losses_and_peaks(args.kept)
    # JSON floats round-trip exactly: equal text is the same double.
    if dl != kl:
        failures.append(f"losses differ: {dl} vs {kl}")
    with open(os.path.join(args.donated, "final.safetensors"), "rb") as f:
        dw = f.read()
    with open(os.path.join(args.kept, "final.safetensors"), "rb") as f:
        kw = f.read()
    if dw != kw:
        failures.append("final.safetensors differ")
    with open(os.path.join(args.donated, "memory.json")) as f:
        predicted = json.load(f)["adamw"]
    if not (len(dp) == len(kp) == len(predicted)):
        sys.exit(f"rank counts differ: {len(dp)} donated, {len(kp)} kept, "
                 f"{len(predicted)} predicted")
    for r, (d, k, p) in enumerate(zip(dp, kp, predicted)):
        err = abs(d - p) / p
        ok = d < k and err <= args.memory_rtol
        if not ok:
            failures.append(f"rank {r}")
        print(f"{'ok' if ok else 'FAIL'} rank {r}: measured peak {k} -> {d} "
              f"bytes ({(d - k) / k:+.1%}) with donation, predicted {p} "
              f"({err:.2%} off)")
    if failures:
        print("FAIL " + "; ".join(failures))
        sys.exit(1)
    print(f"ok donation: {len(dl)} losses and the saved parameters equal bit "
          f"for bit")


if __name__ == "__main__":
    main()
