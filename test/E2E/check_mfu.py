#!/usr/bin/python3
"""Checks the throughput fields of a run's JSON lines against the compiled
model's FLOPs and the device spec's peak.

  check_mfu.py TRAIN.mlir LOG.jsonl --peak X --ranks R --tokens N

TRAIN.mlir is tessera-compile's OUT/train.mlir (its module attribute
tsr.flops_per_step, the model FLOPs of one step); N the tokens (or samples)
of one step. Each line's flops_per_s and tokens_per_s come from the same
step time, so flops_per_s / tokens_per_s must equal flops_per_step / N, and
mfu must equal flops_per_s / (R x X); both are printed with 6 significant
digits, so they agree to 1e-5 (relative). Exit 1 on a difference.
"""
import argparse
import json
import re
import struct
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mlir")
    ap.add_argument("log")
    ap.add_argument("--peak", type=float, required=True)
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--tokens", type=int, required=True)
    a = ap.parse_args()
    m = re.search(r"tsr\.flops_per_step = (0x[0-9A-Fa-f]+|[0-9.e+-]+) : f64",
                  open(a.mlir).read())
    if not m:
        print(f"FAIL {a.mlir} has no tsr.flops_per_step")
        return 1
    # MLIR prints a double that its short decimal form would not round-trip
    # as its bits in hex.
    text = m.group(1)
    flops = (struct.unpack(">d", bytes.fromhex(text[2:]))[0]
             if text.startswith("0x") else float(text))
    lines = [json.loads(x) for x in open(a.log) if x.strip()]
    bad = []
    for j in lines:
        rate = j["flops_per_s"] / j["tokens_per_s"]
        if abs(rate - flops / a.tokens) > 1e-5 * flops / a.tokens:
            bad.append(f"step {j['step']}: flops_per_s / tokens_per_s {rate:.6g}, "
                       f"expected {flops / a.tokens:.6g}")
        mfu = j["flops_per_s"] / (a.ranks * a.peak)
        if abs(j["mfu"] - mfu) > 1e-5 * mfu:
            bad.append(f"step {j['step']}: mfu {j['mfu']}, expected {mfu:.6g}")
    for b in bad:
        print("FAIL", b)
    if bad:
        return 1
    print(f"{len(lines)} steps: flops_per_s = {flops:.6g} FLOPs per step / step time, "
          f"mfu = flops_per_s / ({a.ranks} x {a.peak:g})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
