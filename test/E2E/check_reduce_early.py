#!/usr/bin/env python3
"""Checks dist-partition's reduce-early=auto choice.

    check_reduce_early.py AUTO ALWAYS NEVER

Each argument is a tessera-compile output directory of the same model and
plan, compiled with --reduce-early auto, always and never. The largest
predicted peak over the ranks (memory.json, "adamw") of AUTO must be the
smaller of ALWAYS's and NEVER's. Prints the three and exits 1 otherwise.
"""
import json
import os
import sys


def worst(d):
    with open(os.path.join(d, "memory.json")) as f:
        return max(json.load(f)["adamw"])


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    auto, always, never = (worst(d) for d in sys.argv[1:])
    ok = auto == min(always, never)
    print(f"{'ok' if ok else 'FAIL'} reduce-early: auto {auto} bytes, "
          f"always {always}, never {never}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
