#!/usr/bin/env python3
"""Checks the per-rank waits a multi-rank run logs.

    check_waits.py LOG RANKS

LOG is a run's --log (one JSON line per step). Every line must carry
wait_s_per_rank with RANKS entries, each a finite number of seconds >= 0,
and, for a pipeline whose every rank receives from another rank in every
step (pp with one micro-batch: the last stage waits for the forward, the
others for the backward), each entry > 0 from the second step on: a
blocking receive that returned took time. Prints each rank's median wait
and exits 1 on any failure.
"""
import json
import math
import statistics
import sys


def main():
    path, ranks = sys.argv[1], int(sys.argv[2])
    with open(path) as f:
        lines = [json.loads(l) for l in f if l.strip()]
    if not lines:
        sys.exit(f"{path}: no steps")
    for line in lines:
        waits = line.get("wait_s_per_rank")
        if not isinstance(waits, list) or len(waits) != ranks:
            sys.exit(f"step {line['step']}: wait_s_per_rank is {waits!r}, "
                     f"expected {ranks} numbers")
        for r, w in enumerate(waits):
            if not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0:
                sys.exit(f"step {line['step']}: rank {r} waited {w!r}")
            if line["step"] > 0 and w == 0:
                sys.exit(f"step {line['step']}: rank {r} waited 0 s, but it "
                         "receives from another rank every step")
    for r in range(ranks):
        med = statistics.median(l["wait_s_per_rank"][r] for l in lines)
        print(f"rank {r}: waits ok (median {med * 1e3:.3f} ms)")


if __name__ == "__main__":
    main()
