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

  check_mfu.py TRAIN.mlir --planner-report ERR

checks instead that the auto planner's report (tessera-compile --plan auto's
stderr) counts the same model FLOPs per step as the program: it prints
three significant digits, so the two agree to half a unit in the third
(5e-3 relative).
"""
import argparse
import json
import re
import struct
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mlir")
    ap.add_argument("log", nargs="?")
    ap.add_argument("--peak", type=float)
    ap.add_argument("--ranks", type=int)
    ap.add_argument("--tokens", type=int)
    ap.add_argument("--planner-report")
    a = ap.parse_args()
    if not a.planner_report and None in (a.log, a.peak, a.ranks, a.tokens):
        ap.error("LOG, --peak, --ranks and --tokens are required")
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
    if a.planner_report:
        r = re.search(r"\(([0-9.e+-]+) model FLOPs per step\)",
                      open(a.planner_report).read())
        if not r:
            print(f"FAIL {a.planner_report} has no planner report")
            return 1
        planned = float(r.group(1))
        if abs(planned - flops) > 5e-3 * flops:
            print(f"FAIL the planner counts {planned:.3g} model FLOPs per step, "
                  f"the program {flops:.6g}")
            return 1
        print(f"ok the planner counts {planned:.3g} model FLOPs per step, "
              f"the program {flops:.6g}")
        return 0
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
