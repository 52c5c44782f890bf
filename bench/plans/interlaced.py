#!/usr/bin/python3
"""Interlaced pipelines against a plain pipeline, for a large vocabulary.

    bench/plans/interlaced.py [--build DIR] [--vocab V] [--rounds R]
                              [--steps S] [--device-spec SPEC]
                              [--profile-db DB] [--out FILE.md]

Exports the 2-layer GPT of the equivalence tests (4 heads, width 64,
context 32, batch 8, no biases) with a vocabulary of V tokens (default
16384: the head is most of the work), compiles three plans for 2 devices
with 2 micro-batches (pp2; the embedding and head on every device with
their batch split over pp; the same with the vocabulary split over pp:
examples/plans/gpt-interlaced*.json with a pp-only mesh), runs each for S
AdamW steps in R rotated rounds, and reports per plan the median over
rounds of the median tokens/s (steps after the fifth), its ratio to pp2 in
the same invocation, each rank's peak memory (the runtime's measurement)
and the last loss (equal across plans: the same training). Each plan's
predicted step (the auto planner's model, tessera-compile's `predicted step`
line; --device-spec and --profile-db, e.g. what `tessera-calibrate -o SPEC
--profile-db DB --ranks 2` measures; default the cpu spec) is set against its measured one (batch x context tokens over the median
tokens/s).
"""
import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(REPO, "examples/gpt/data/train.bin")
EDGES = r"\(before the layers\)|\(after the layers\)"

PLANS = {
    "pp2": {"mesh": {"pp": 2}, "micro_batches": 2},
    "interlaced, batch split": {
        "mesh": {"pp": 2}, "micro_batches": 2,
        "assign": [{"group": EDGES, "stage": "all"}]},
    "interlaced, vocabulary split": {
        "mesh": {"pp": 2}, "micro_batches": 2,
        "assign": [{"group": EDGES, "stage": "all"}],
        "trans": [{"params": r"transformer\.wte\.weight", "kind": "tsr.matmul",
                   "split": {"n": "pp"}, "propagate": True}]},
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--vocab", type=int, default=16384)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--device-spec", default="cpu")
    ap.add_argument("--profile-db")
    ap.add_argument("--out")
    args = ap.parse_args()
    compile_ = os.path.join(args.build, "bin", "tessera-compile")
    work = tempfile.mkdtemp(prefix="tessera-interlaced-")
    model = os.path.join(work, "model")
    subprocess.run(["/usr/bin/python3", os.path.join(REPO, "examples/gpt/export.py"),
                    "--layers", "2", "--heads", "4", "--width", "64",
                    "--context", "32", "--batch", "8", "--no-bias",
                    "--vocab", str(args.vocab), "--out", model, "--quiet",
                    "--no-final"], check=True)
    outs, predicted = {}, {}
    units = {"s": 1.0, "ms": 1e-3, "us": 1e-6}
    for i, (name, plan) in enumerate(PLANS.items()):
        path = os.path.join(work, f"plan{i}.json")
        with open(path, "w") as f:
            json.dump(plan, f)
        out = os.path.join(work, f"out{i}")
        built = subprocess.run(
            [compile_, os.path.join(model, "model.onnx"), "-o", out,
             "--devices", "2", "--plan", path, "--device-spec",
             args.device_spec] +
            (["--profile-db", args.profile_db] if args.profile_db else []),
            check=True, capture_output=True, text=True)
        m = re.search(r"predicted step ([0-9.]+) (s|ms|us)", built.stderr)
        if not m:
            sys.exit(f"{name}: no predicted step in tessera-compile's report")
        predicted[name] = float(m.group(1)) * units[m.group(2)]
        outs[name] = out
    rates = {name: [] for name in PLANS}
    last = {}
    for r in range(args.rounds):
        names = list(PLANS)
        names = names[r % len(names):] + names[:r % len(names)]
        for name in names:
            run = subprocess.run(
                [os.path.join(outs[name], "run"), "--data", DATA, "--steps",
                 str(args.steps), "--optimizer", "adamw", "--lr", "1e-3"],
                check=True, capture_output=True, text=True)
            rows = [json.loads(l) for l in run.stdout.splitlines()
                    if l.startswith("{")]
            rates[name].append(
                statistics.median(x["tokens_per_s"] for x in rows[5:]))
            last[name] = rows[-1]
    base = statistics.median(rates["pp2"])
    tokens = 8 * 32  # batch x context of the exported model
    lines = [
        f"machine: {platform.machine()}, {os.cpu_count()} CPU(s); date: "
        f"{datetime.date.today()}; vocabulary {args.vocab}, 2 devices, "
        f"2 micro-batches, {args.rounds} rotated rounds of {args.steps} steps; "
        f"device spec {os.path.basename(args.device_spec)}" +
        (f", profile database {os.path.basename(args.profile_db)}"
         if args.profile_db else ""),
        "",
        "| plan | tokens/s (median) | / pp2 | predicted step | measured step "
        "| predicted / measured | peak bytes per rank | last loss |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in PLANS:
        med = statistics.median(rates[name])
        step = tokens / med
        lines.append(
            f"| {name} | {med:.0f} | {med / base:.2f} | "
            f"{predicted[name] * 1e3:.2f} ms | {step * 1e3:.2f} ms | "
            f"{predicted[name] / step:.2f} | "
            f"{', '.join(str(b) for b in last[name]['peak_bytes_per_rank'])} | "
            f"{last[name]['loss']:.6f} |")
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
