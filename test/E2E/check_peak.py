#!/usr/bin/env python3
"""Checks that a plan lowers every rank's peak tensor memory.

    check_peak.py BASE PLAN

BASE and PLAN are run_plan.sh outputs of the same model and mesh (say a plan
and the same plan with activation recomputation). For each rank, the peak
measured by the runtime (the last line of train.jsonl: peak_bytes_per_rank,
or peak_bytes on one rank) and the one tessera-compile predicted
(memory.json, "adamw") must both be lower under PLAN than under BASE. The
memory prediction itself is checked against the measurement by
check_equivalence.py. Prints one line per rank and exits 1 if any peak is not
lower.
"""
import json
import os
import sys


def peaks(d):
    with open(os.path.join(d, "train.jsonl")) as f:
        last = json.loads(f.read().splitlines()[-1])
    measured = last.get("peak_bytes_per_rank", [last["peak_bytes"]])
    with open(os.path.join(d, "memory.json")) as f:
        predicted = json.load(f)["adamw"]
    if len(measured) != len(predicted):
        sys.exit(f"{d}: {len(measured)} measured peaks, "
                 f"{len(predicted)} predicted")
    return measured, predicted


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    base, plan = sys.argv[1], sys.argv[2]
    (bm, bp), (pm, pp) = peaks(base), peaks(plan)
    if len(bm) != len(pm):
        sys.exit(f"{base} has {len(bm)} ranks, {plan} has {len(pm)}")
    bad = 0
    for r, (b, p, bpred, ppred) in enumerate(zip(bm, pm, bp, pp)):
        ok = p < b and ppred < bpred
        bad += not ok
        print(f"{'ok' if ok else 'FAIL'} rank {r}: measured peak {b} -> {p} "
              f"bytes ({(p - b) / b:+.1%}), predicted {bpred} -> {ppred}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
