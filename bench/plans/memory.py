#!/usr/bin/python3
"""The auto planner's memory model vs the program's replay, per plan kind.

    bench/plans/memory.py [--build DIR] [--out FILE.md] [--check PCT]

Exports the 2-layer GPT of the equivalence tests (4 heads, width 64,
context 32, batch 8, no biases; a 4-layer one of the same shape for the
rows that say so), compiles it under each plan of PLANS with
--no-build, and compares per rank the memory the planner's model predicts
(the `predicted step ..., memory A, B GiB per device by stage` line every
plan prints) with the replayed peak of the emitted step (memory.json, which
the E2E tests hold to the runtime's measurement). Ranks are row-major
with pp innermost, so rank r is on stage r % pp. The model prints three
significant digits, so each ratio is good to about 0.3 %.

Compiles only (about a second a plan); no GPU, no MPI run. With --check
PCT it fails unless every rank's model is within PCT % of its replay
(test/E2E/memory-model.test holds it to 5 %).
"""
import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# (label, devices, pp, tessera-compile flags[, layers: 2 unless given])
PLANS = [
    ("dp2", 2, 1, ["--plan", "dp"]),
    ("dp2 ZeRO-1", 2, 1, ["--plan", "dp", "--zero1"]),
    ("dp2 ZeRO-3", 2, 1, ["--plan", "dp", "--zero3"]),
    ("dp2 recompute h.0, h.1", 2, 1,
     ["--plan", os.path.join(REPO, "examples/plans/gpt-recompute.json")]),
    ("tp2", 2, 1, ["--plan", "tp"]),
    ("dp2xtp2", 4, 1, ["--plan", "dp2xtp2"]),
    ("pp2 1F1B mb4", 2, 2, ["--plan", "pp", "--micro-batches", "4"]),
    ("pp2 GPipe mb4", 2, 2,
     ["--plan", "pp", "--micro-batches", "4", "--schedule", "gpipe"]),
    ("pp4 1F1B mb4", 4, 4, ["--plan", "pp", "--micro-batches", "4"]),
    ("one device mb4", 1, 1, ["--micro-batches", "4"]),
    ("dp2 ZeRO-2", 2, 1, ["--plan", "dp", "--zero2"]),
    ("dp2 recompute + ZeRO-3", 2, 1,
     ["--plan", os.path.join(REPO, "examples/plans/gpt-recompute-zero3.json")]),
    ("dp2 mb2", 2, 1, ["--plan", "dp", "--micro-batches", "2"]),
    ("tp2 recompute", 2, 1,
     ["--plan", os.path.join(REPO, "examples/plans/gpt-tp-recompute.json")]),
    ("tp2 co-shard 2 + recompute", 2, 1,
     ["--plan", os.path.join(REPO, "examples/plans/gpt-coshard.json")]),
    ("pp2 zb-h1 mb4", 2, 2,
     ["--plan", "pp", "--micro-batches", "4", "--schedule", "zb-h1"]),
    ("dp2xpp2 1F1B mb4", 4, 2, ["--plan", "dp2xpp2", "--micro-batches", "4"]),
    ("dp2xpp2 1F1B mb2", 4, 2, ["--plan", "dp2xpp2", "--micro-batches", "2"]),
    ("dp2 ZeRO-3 mb2", 2, 1, ["--plan", "dp", "--zero3", "--micro-batches", "2"]),
    ("dp2xpp2 ZeRO-3 mb4", 4, 2,
     ["--plan", "dp2xpp2", "--zero3", "--micro-batches", "4"]),
    ("dp2xpp2 interlaced mb2", 4, 2,
     ["--plan", os.path.join(REPO, "examples/plans/gpt-interlaced.json")]),
    ("dp2xpp2 interlaced, vocabulary over pp, mb2", 4, 2,
     ["--plan", os.path.join(REPO, "examples/plans/gpt-interlaced-vocab.json")]),
    ("dp2xtp2 ZeRO-1", 4, 1, ["--plan", "dp2xtp2", "--zero1"]),
    ("dp2xtp2 ZeRO-3", 4, 1, ["--plan", "dp2xtp2", "--zero3"]),
    ("tp2xpp2 1F1B mb4", 4, 2, ["--plan", "tp2xpp2", "--micro-batches", "4"]),
    ("pp2 1F1B mb8 recompute h.0, h.1", 2, 2,
     ["--plan", os.path.join(REPO, "examples/plans/gpt-pp-recompute.json"),
      "--micro-batches", "8"]),
    ("pp2 GPipe mb4 recompute h.0, h.1", 2, 2,
     ["--plan", os.path.join(REPO, "examples/plans/gpt-pp-recompute.json"),
      "--micro-batches", "4", "--schedule", "gpipe"]),
    ("pp2 interleaved mb4", 2, 2,
     ["--plan", "pp", "--micro-batches", "4", "--schedule", "interleaved"]),
    ("pp2 zb-v mb4", 2, 2,
     ["--plan", "pp", "--micro-batches", "4", "--schedule", "zb-v"]),
    ("one device mb4 recompute h.0, h.1", 1, 1,
     ["--plan", os.path.join(REPO, "examples/plans/gpt-pp-recompute.json"),
      "--micro-batches", "4"]),
    ("dp2 co-shard 2 + recompute", 2, 1,
     ["--plan", os.path.join(REPO, "examples/plans/gpt-dp-coshard.json")]),
    ("one device co-shard 4 + recompute", 1, 1,
     ["--plan", os.path.join(REPO, "examples/plans/gpt-one-device-coshard.json")]),
    ("pp2 zb-h1 mb2", 2, 2,
     ["--plan", "pp", "--micro-batches", "2", "--schedule", "zb-h1"]),
    ("dp2xpp2 interlaced zb-h1 mb2", 4, 2,
     ["--plan", os.path.join(REPO, "examples/plans/gpt-interlaced.json"),
      "--schedule", "zb-h1"]),
    # The 4-layer GPT: pipelines of two layers a device, and interlaced
    # zero-bubble pipelines with virtual stages (ZB-V needs four groups
    # on the stages).
    ("4 layers: pp2 zb-h1 mb2", 2, 2,
     ["--plan", "pp", "--micro-batches", "2", "--schedule", "zb-h1"], 4),
    ("4 layers: pp2 zb-v mb4", 2, 2,
     ["--plan", "pp", "--micro-batches", "4", "--schedule", "zb-v"], 4),
    ("4 layers: dp2xpp2 interlaced zb-h1 mb2", 4, 2,
     ["--plan", os.path.join(REPO, "examples/plans/gpt-interlaced.json"),
      "--schedule", "zb-h1"], 4),
    ("4 layers: dp2xpp2 interlaced zb-v mb2", 4, 2,
     ["--plan", os.path.join(REPO, "examples/plans/gpt-interlaced.json"),
      "--schedule", "zb-v"], 4),
    ("4 layers: dp2xpp2 interlaced interleaved mb2", 4, 2,
     ["--plan", os.path.join(REPO, "examples/plans/gpt-interlaced.json"),
      "--schedule", "interleaved"], 4),
    # --plan auto below the no-saver minimum, each stage with the savers it
    # needs (the report's `stage N: ..., X GiB per device` lines): recompute
    # on three of pp4's four stages, ZeRO-3 on one stage of two, on both.
    ("4 layers: auto at 0.0018 GiB (recompute on stages 0-2 of pp4)", 4, 4,
     ["--plan", "auto", "--memory-gib", "0.0018"], 4),
    ("auto dp2xpp2 at 0.00125 GiB (ZeRO-3 on stage 0)", 4, 2,
     ["--plan", "{tmp}/auto-dp2xpp2.json", "--memory-gib", "0.00125"]),
    ("auto dp2xpp2 at 0.0011 GiB (ZeRO-3 on both stages)", 4, 2,
     ["--plan", "{tmp}/auto-dp2xpp2.json", "--memory-gib", "0.0011"]),
]

# Plan files the rows name as {tmp}/NAME.
PLAN_FILES = {"auto-dp2xpp2.json": {"policy": "auto", "mesh": {"dp": 2, "pp": 2}}}

PREDICT = re.compile(r"predicted step .*?, memory ([0-9.e+-]+(?:, [0-9.e+-]+)*)"
                     r" GiB (?:per|by) device")
# --plan auto's report: one line per stage.
AUTO_STAGE = re.compile(r"^  stage [0-9]+: units .*?, ([0-9.e+-]+) GiB per device",
                        re.M)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--out")
    ap.add_argument("--check", type=float,
                    help="fail unless every |model vs replay| <= CHECK %%")
    a = ap.parse_args()
    compile_ = os.path.join(a.build, "bin", "tessera-compile")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        models = {}
        for layers in sorted({p[4] if len(p) > 4 else 2 for p in PLANS}):
            models[layers] = os.path.join(tmp, f"model{layers}")
            subprocess.run(["/usr/bin/python3",
                            os.path.join(REPO, "examples/gpt/export.py"),
                            "--layers", str(layers), "--heads", "4", "--width", "64",
                            "--context", "32", "--batch", "8", "--no-bias",
                            "--out", models[layers], "--quiet", "--no-final"],
                           check=True)
        for name, plan in PLAN_FILES.items():
            with open(os.path.join(tmp, name), "w") as f:
                json.dump(plan, f)
        for label, devices, pp, flags, *rest in PLANS:
            model = models[rest[0] if rest else 2]
            flags = [x.replace("{tmp}", tmp) for x in flags]
            out = os.path.join(tmp, re.sub(r"[^a-z0-9]+", "_", label.lower()))
            cmd = [compile_, os.path.join(model, "model.onnx"), "-o", out,
                   "--no-build", "--devices", str(devices)] + flags
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"{label}: tessera-compile failed:\n{r.stderr}")
            m = PREDICT.search(r.stderr)
            if m:
                stages = [float(x) * 2**30 for x in m.group(1).split(", ")]
            else:
                stages = [float(x) * 2**30 for x in AUTO_STAGE.findall(r.stderr)]
            if not stages or len(stages) not in (1, pp):
                sys.exit(f"{label}: no memory prediction for {pp} stage(s) in:\n"
                         f"{r.stderr}")
            replay = json.load(open(os.path.join(out, "memory.json")))["adamw"]
            diffs = []
            for rank, measured in enumerate(replay):
                model_bytes = stages[rank % pp] if len(stages) > 1 else stages[0]
                diffs.append((rank, model_bytes, measured,
                              (model_bytes - measured) / measured))
            rows.append((label, diffs))
    lines = ["| plan | rank | model (bytes) | replay (bytes) | model vs replay |",
             "|---|---|---|---|---|"]
    for label, diffs in rows:
        seen = set()
        for rank, model_bytes, measured, d in diffs:
            # Ranks of one stage with equal figures are one row.
            key = (round(model_bytes), measured)
            if key in seen:
                continue
            seen.add(key)
            lines.append(f"| {label} | {rank} | {model_bytes:.0f} | "
                         f"{measured} | {100 * d:+.1f} % |")
    text = "\n".join(lines)
    print(text)
    worst = max(abs(d) for _, diffs in rows for *_, d in diffs)
    if a.check is not None:
        bad = [f"{label} rank {rank}: {100 * d:+.1f} %"
               for label, diffs in rows for rank, _, _, d in diffs
               if abs(d) > a.check / 100]
        if bad:
            sys.exit("beyond {:g} %:\n  ".format(a.check) + "\n  ".join(bad))
        print(f"ok: {len(rows)} plans within {a.check:g} % "
              f"(worst {100 * worst:.1f} %)")
    if a.out:
        with open(a.out, "w") as f:
            f.write("# Memory: the auto planner's model vs the replay\n\n")
            f.write("Produced by `bench/plans/memory.py` (the 2-layer GPT of "
                    "the equivalence tests, batch 8, AdamW; the rows that say "
                    "so: the same GPT with 4 layers).\n\n")
            f.write(f"machine: {platform.machine()}, {os.cpu_count()} CPU(s); "
                    f"date: {datetime.date.today()}\n\n{text}\n")


if __name__ == "__main__":
    main()
