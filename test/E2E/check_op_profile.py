#!/usr/bin/env python3
"""Checks a profile database that `run --profile-ops` wrote.

    check_op_profile.py DB.json PROGRAM.cpp... [--function F] [--kept OP]
                        [--replaced SECONDS] [--ranks] [--driver LOG]

Every op key of the programs' step function (--function, default
train_step_adamw: its opMark ids in the Program table's /*opKeys=*/ list)
must have exactly one entry in DB, timed in seconds > 0 and finite; a rate entry
of op OP (seconds_per_flop) must still be there (--kept), and no entry may
still have the time SECONDS that a measurement replaced (--replaced).
With --ranks (the programs of several ranks), the communication ops
(all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send,
recv) must have no entry, and every other op of every program one, and
there must be no driver entry (several ranks do not time the driver).
With --driver LOG (the step log of the run that wrote DB last), the driver
entry ({"op": "driver", "dtype": "", "shapes": []}, the median time a step
takes outside its step function) must be there, above 0 and below the
median step of LOG (its elapsed_s differences after the first two steps):
a part of the step.
Prints "ok: N keys measured, M entries" or FAIL lines and exits 1.
"""
import argparse
import json
import math
import re
import sys


def program_keys(path, function):
    """The keys of the ops that `function` marks: its opMark ids, looked up
    in the /*opKeys=*/ list (entry i is id i, one per line)."""
    lines = open(path).read().splitlines()
    start = next((i for i, l in enumerate(lines) if "/*opKeys=*/{" in l), None)
    if start is None:
        return None
    ids = set()
    inside = False
    for line in lines:
        if line.startswith(f"void {function}("):
            inside = True
        elif inside and line.startswith("}"):
            break
        elif inside:
            m = re.search(r"tessera::rt::opMark\((\d+)\);", line)
            if m:
                ids.add(int(m.group(1)))
    keys = []
    for line in lines[start + 1:]:
        if line.startswith("};"):
            break
        k = re.match(r'\s*\{"([^"]+)", "([^"]+)", \{(.*)\}\}', line)
        if not k:
            raise SystemExit(f"FAIL {path}: cannot read key line {line!r}")
        # Each {...} without braces inside is one operand's shape.
        shapes = tuple(tuple(int(d) for d in s.split(",") if d.strip())
                       for s in re.findall(r"\{([^{}]*)\}", k.group(3)))
        keys.append((k.group(1), k.group(2), shapes))
    return {keys[i] for i in ids}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("programs", nargs="+")
    ap.add_argument("--function", default="train_step_adamw",
                    help="the step function the runs called")
    ap.add_argument("--kept")
    ap.add_argument("--replaced", type=float)
    ap.add_argument("--ranks", action="store_true")
    ap.add_argument("--driver", metavar="LOG")
    a = ap.parse_args()
    comm = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all",
            "broadcast", "send", "recv"}
    db = json.load(open(a.db))
    fails = []
    seen = {}
    for e in db["entries"]:
        if "shapes" not in e:
            continue
        key = (e["op"], e["dtype"], tuple(tuple(s) for s in e["shapes"]))
        if key in seen:
            fails.append(f"key {key} has two entries")
        seen[key] = e["seconds"]
        if not (math.isfinite(e["seconds"]) and e["seconds"] > 0):
            fails.append(f"key {key}: seconds {e['seconds']}")
        if a.replaced is not None and e["seconds"] == a.replaced:
            fails.append(f"key {key} still has the replaced time {a.replaced}")
    wanted = set()
    for p in a.programs:
        keys = program_keys(p, a.function)
        if keys is None:
            fails.append(f"{p} has no opKeys")
            continue
        wanted |= keys
    if a.ranks:
        if not any(k[0] in comm for k in wanted):
            fails.append("the programs have no communication op")
        for k in sorted(k for k in seen if k[0] in comm):
            fails.append(f"communication op {k} has an entry")
        wanted = {k for k in wanted if k[0] not in comm}
    for k in sorted(wanted - set(seen)):
        fails.append(f"key {k} of the programs was not measured")
    driver = [e["seconds"] for e in db["entries"]
              if e.get("op") == "driver" and e.get("shapes") == []]
    if a.ranks and driver:
        fails.append("a program of several ranks wrote a driver entry")
    if a.driver:
        elapsed = [json.loads(l)["elapsed_s"] for l in open(a.driver)
                   if l.strip()]
        steps = sorted([y - x for x, y in zip(elapsed, elapsed[1:])][1:])
        step = steps[len(steps) // 2] if steps else 0
        if len(driver) != 1:
            fails.append(f"{len(driver)} driver entries, expected one")
        elif not 0 < driver[0] < step:
            fails.append(f"the driver's {driver[0]} s per step is not above 0 "
                         f"and below the median step {step} s")
    if a.kept and not any(e.get("op") == a.kept and "seconds_per_flop" in e
                          for e in db["entries"]):
        fails.append(f"the rate of {a.kept} was dropped")
    for f in fails:
        print("FAIL", f)
    if fails:
        sys.exit(1)
    print(f"ok: {len(wanted)} keys measured, {len(db['entries'])} entries")


if __name__ == "__main__":
    main()
