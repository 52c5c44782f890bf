#!/usr/bin/env python3
"""Checks a run's --trace against its --log.

    check_trace.py TRACE LOG RANKS

TRACE is the Chrome trace (JSON) the run wrote, LOG its per-step JSON
lines. The trace must name one process per rank ("rank R"), and on each
rank hold one "step I" event per logged step with one "step function"
event inside it; every other event (a wait on other ranks) inside a step
lies inside that step. Rank 0's waits inside step I add up to the log's
wait_s_per_rank[0] of step I (both come from the same scopes; each event
was read off the clock apart from the total, so they may differ by a
microsecond per event). Prints a summary per rank; exits 1 on a failure.
"""
import json
import re
import sys


def fail(message):
    sys.exit(f"FAIL: {message}")


def main():
    trace_path, log_path, ranks = sys.argv[1], sys.argv[2], int(sys.argv[3])
    trace = json.load(open(trace_path))
    lines = [json.loads(l) for l in open(log_path) if l.strip()]
    events = trace["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M"}
    if names != {r: f"rank {r}" for r in range(ranks)}:
        fail(f"processes {names}, expected ranks 0..{ranks - 1}")
    for r in range(ranks):
        mine = [e for e in events if e["ph"] == "X" and e["pid"] == r]
        is_step = lambda e: re.fullmatch(r"step [0-9]+", e["name"])
        steps = {e["name"]: e for e in mine if is_step(e)}
        if sorted(steps) != sorted(f"step {l['step']}" for l in lines):
            fail(f"rank {r}: step events {sorted(steps)}")
        waits_in = 0
        for line in lines:
            s = steps[f"step {line['step']}"]
            lo, hi = s["ts"], s["ts"] + s["dur"]
            # Microseconds, written to 3 decimals.
            inside = lambda e: lo - 1e-3 <= e["ts"] and e["ts"] + e["dur"] <= hi + 1e-3
            calls = [e for e in mine if e["name"] == "step function" and inside(e)]
            if len(calls) != 1:
                fail(f"rank {r} step {line['step']}: {len(calls)} step functions inside")
            waits = [e for e in mine if not is_step(e)
                     and e["name"] != "step function" and inside(e)]
            waits_in += len(waits)
            if r == 0 and ranks > 1:
                total = sum(e["dur"] for e in waits) * 1e-6
                logged = line["wait_s_per_rank"][0]
                if abs(total - logged) > 1e-6 * (len(waits) + 1) + 1e-6 * logged:
                    fail(f"step {line['step']}: rank 0's waits add up to {total} s, "
                         f"the log says {logged}")
        print(f"rank {r}: {len(steps)} steps, {waits_in} waits inside them")


if __name__ == "__main__":
    main()
