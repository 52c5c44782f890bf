"""Checks a program compiled with the static memory plan (PLAN) against the
same plan compiled with --static-memory=false (BASE), both run by
run_plan.sh (5 AdamW steps into train.jsonl, one SGD step into probe.jsonl):

  - the plan changes where tensors lie, nothing they hold: every loss and
    the saved parameters are equal bit for bit;
  - every step of every rank measures exactly the footprint PLAN/memory.json
    predicts (the arena plus the caching allocator's peak beside it), and
    exactly the peak of live tensor bytes it predicts, which BASE measures
    too;
  - no placement found its slot busy (no arena_conflicts).

Prints one line per rank and optimizer with the peak, the arena and the
footprint, and "ok" or "FAIL".

  check_static_memory.py PLAN BASE
"""
import json
import os
import sys


def steps(d, name):
    with open(os.path.join(d, name)) as f:
        return [json.loads(line) for line in f if line.strip()]


def per_rank(line, key):
    return line.get(key + "_per_rank", [line[key]])


def main():
    plan, base = sys.argv[1], sys.argv[2]
    with open(os.path.join(plan, "memory.json")) as f:
        predicted = json.load(f)
    failed = False
    for name, opt in (("train.jsonl", "adamw"), ("probe.jsonl", "sgd")):
        got, ref = steps(plan, name), steps(base, name)
        if [s["loss"] for s in got] != [s["loss"] for s in ref]:
            print("FAIL %s: losses %s != %s" % (
                opt, [s["loss"] for s in got], [s["loss"] for s in ref]))
            failed = True
        for s in got:
            if s.get("arena_conflicts", 0):
                print("FAIL %s step %d: %d arena conflicts" % (
                    opt, s["step"], s["arena_conflicts"]))
                failed = True
        for r, (peak, arena, footprint) in enumerate(zip(
                predicted[opt], predicted["arena"][opt],
                predicted["footprint"][opt])):
            measured = [(per_rank(s, "peak_bytes")[r],
                         per_rank(s, "footprint_bytes")[r]) for s in got]
            unplanned = [per_rank(s, "peak_bytes")[r] for s in ref]
            ok = (arena > 0 and
                  all(m == (peak, footprint) for m in measured) and
                  all(u == peak for u in unplanned))
            print("%s %s rank %d: peak %d, arena %d, footprint %d (%+.1f %%)"
                  " predicted; measured %s" % (
                      "ok" if ok else "FAIL", opt, r, peak, arena, footprint,
                      100.0 * (footprint - peak) / peak, sorted(set(measured))))
            failed = failed or not ok
    for name in ("final.safetensors", "probe.safetensors"):
        with open(os.path.join(plan, name), "rb") as a, \
                open(os.path.join(base, name), "rb") as b:
            if a.read() != b.read():
                print("FAIL %s differs" % name)
                failed = True
    if not failed:
        print("ok static memory: losses and saved parameters equal bit for bit")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
