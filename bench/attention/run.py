#!/usr/bin/python3
"""Fused causal attention (llm.attention) vs the imported ops, on CPU.

    bench/attention/run.py [--build DIR] [--contexts 128,256,512]
                           [--rounds R] [--steps S] [--out results.md]

For each context length, exports examples/gpt's GPT (2 layers, 4 heads,
width 128, batch 4), compiles it twice for one device: as tessera-compile
does by default (tsr-raise turns the masked softmax attention into
llm.attention) and with --raise=false (matmul, scale, where, softmax,
matmul, and their gradients, with the [t, t] scores and probabilities kept
for the backward). Then runs both in R rounds, alternating which goes
first, S AdamW steps each. A program's step time is the median of its
per-step times (elapsed_s differences after the first 3 steps) in a round,
then the median over rounds; its peak is the runtime's peak_bytes (the same
every step). Prints a table of the fused/unfused ratios; with --out, writes
it as markdown with the machine and the date.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stdout}{r.stderr}")
    return r.stdout


def measure(program, data, steps):
    out = run([program, "--data", data, "--steps", str(steps), "--optimizer",
               "adamw", "--lr", "1e-3"])
    lines = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    lines = [l for l in lines if "elapsed_s" in l]
    times = [b["elapsed_s"] - a["elapsed_s"]
             for a, b in zip(lines[3:], lines[4:])]
    return statistics.median(times), lines[-1]["peak_bytes"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--contexts", default="128,256,512")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--out")
    args = ap.parse_args()
    compile_ = os.path.join(args.build, "bin", "tessera-compile")
    data = os.path.join(REPO, "examples", "gpt", "data", "train.bin")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for t in [int(c) for c in args.contexts.split(",")]:
            model = os.path.join(tmp, f"gpt{t}")
            run(["/usr/bin/python3", os.path.join(REPO, "examples", "gpt",
                                                  "export.py"),
                 "--layers", "2", "--heads", "4", "--width", "128",
                 "--context", str(t), "--batch", "4", "--steps", "1",
                 "--out", model, "--quiet", "--no-final"])
            progs = {}
            for name, flags in (("fused", []), ("unfused", ["--raise=false"])):
                out = os.path.join(tmp, f"{name}{t}")
                run([compile_, os.path.join(model, "model.onnx"), "-o", out,
                     "--quiet"] + flags)
                progs[name] = os.path.join(out, "run")
            times = {"fused": [], "unfused": []}
            peaks = {}
            for r in range(args.rounds):
                order = ["fused", "unfused"] if r % 2 == 0 else \
                    ["unfused", "fused"]
                for name in order:
                    step, peak = measure(progs[name], data, args.steps)
                    times[name].append(step)
                    peaks[name] = peak
            f = statistics.median(times["fused"])
            u = statistics.median(times["unfused"])
            rows.append((t, u, f, peaks["unfused"], peaks["fused"]))
            print(f"context {t}: step {u * 1e3:.2f} -> {f * 1e3:.2f} ms "
                  f"(x{f / u:.2f}), peak {peaks['unfused']} -> "
                  f"{peaks['fused']} bytes (x{peaks['fused'] / peaks['unfused']:.2f})",
                  flush=True)
    table = ["| context | step, unfused (ms) | step, fused (ms) | time ratio | "
             "peak, unfused (bytes) | peak, fused (bytes) | peak ratio |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for t, u, f, pu, pf in rows:
        table.append(f"| {t} | {u * 1e3:.2f} | {f * 1e3:.2f} | {f / u:.2f} | "
                     f"{pu} | {pf} | {pf / pu:.2f} |")
    print("\n".join(table))
    if args.out:
        cpu = "unknown CPU"
        try:
            with open("/proc/cpuinfo") as fh:
                for line in fh:
                    if line.startswith("model name"):
                        cpu = line.split(":", 1)[1].strip()
                        break
        except OSError:
            pass
        with open(args.out, "w") as fh:
            fh.write("# Fused causal attention on CPU\n\n")
            fh.write(f"{datetime.date.today()}, {cpu}, {os.cpu_count()} "
                     f"cores. `bench/attention/run.py "
                     f"--contexts {args.contexts} --rounds {args.rounds} "
                     f"--steps {args.steps}`: examples/gpt's GPT (2 layers, "
                     "4 heads, width 128, batch 4), one device, AdamW; the "
                     "default program (llm.attention) against the same model "
                     "compiled with --raise=false, alternating in the same "
                     "invocation; medians of per-step times.\n\n")
            fh.write("\n".join(table) + "\n")


if __name__ == "__main__":
    main()
