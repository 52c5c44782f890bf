#!/usr/bin/python3
"""Checks the "lr" of every JSON step line against nanoGPT's get_lr.

  check_lr.py LOG.jsonl --lr X --warmup N --decay cosine|linear
              --decay-steps N --min-lr X

get_lr is train.py's formula (nanoGPT), with a linear decay beside its
cosine one; the program computes the same double-precision expression, so
the values must be equal, not close. Exit 1 on a difference.
"""
import argparse
import json
import math
import sys


def get_lr(it, lr, warmup, decay, decay_steps, min_lr):
    if it < warmup:
        return lr * (it + 1) / (warmup + 1)
    if it > decay_steps:
        return min_lr
    ratio = (it - warmup) / (decay_steps - warmup)
    coeff = 0.5 * (1.0 + math.cos(math.pi * ratio)) if decay == "cosine" else 1.0 - ratio
    return min_lr + coeff * (lr - min_lr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("--lr", type=float, required=True)
    ap.add_argument("--warmup", type=int, required=True)
    ap.add_argument("--decay", choices=("cosine", "linear"), required=True)
    ap.add_argument("--decay-steps", type=int, required=True)
    ap.add_argument("--min-lr", type=float, required=True)
    a = ap.parse_args()
    lines = [json.loads(line) for line in open(a.log) if line.strip()]
    bad = [(j["step"], j["lr"]) for j in lines
           if j["lr"] != get_lr(j["step"], a.lr, a.warmup, a.decay, a.decay_steps, a.min_lr)]
    if bad:
        print(f"FAIL lr differs from get_lr at (step, lr): {bad}")
        return 1
    print(f"{len(lines)} steps: every lr equals get_lr")
    return 0


if __name__ == "__main__":
    sys.exit(main())
