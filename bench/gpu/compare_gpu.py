#!/usr/bin/python3
"""Checks and summarises what bench/gpu/run_on_gpu.sh brought back.

    bench/gpu/compare_gpu.py RESULTS.tar.gz [--prep build/gpu-prep]

1. Every tiny-cuda* run (the single-device CUDA program, and each plan whose
   ranks shared the GPU) against the CPU program of the same model
   (prepare.sh's build/gpu-prep/cpu) by test/E2E/check_equivalence.py's
   bounded rule (first-step gradients and losses within tau = 2 D gamma_N +
   2u, memory prediction within 10 %).
2. The single-device CUDA program against PyTorch on the same GPU
   (torch_gpt.py reference: float32, TF32 off): first-step gradients
   norm-wise within the same tau, the 5 AdamW losses within (t + 1) tau.
3. GPT-2 124M: tokens/s and MFU of each run (the median step after the
   first three), Tessera's and PyTorch's, and the GPU time per op of the
   profiled run.
Exit 1 if a check of 1 or 2 fails.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SRC, "test", "E2E"))
sys.path.insert(0, os.path.join(SRC, "examples", "gpt"))
import numpy as np  # noqa: E402
from check_equivalence import losses, probe_gradients, tolerance  # noqa: E402
from safetensors_io import load_file  # noqa: E402

PEAK = 989e12  # H100 SXM bf16 dense, the MFU denominator


def median_tps(jsonl):
    rows = [json.loads(l) for l in open(jsonl) if l.strip()]
    tps = sorted(r["tokens_per_s"] for r in rows[3:]) or [rows[-1]["tokens_per_s"]]
    return tps[len(tps) // 2], rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--prep", default=os.path.join(SRC, "build", "gpu-prep"))
    args = ap.parse_args()
    tmp = tempfile.mkdtemp()
    with tarfile.open(args.results) as t:
        t.extractall(tmp)
    res = os.path.join(tmp, "results")
    model = os.path.join(args.prep, "tiny-model")
    failures = 0

    print("== 1. CUDA programs against the CPU program")
    for run in sorted(glob.glob(os.path.join(res, "tiny-cuda*"))):
        name = os.path.basename(run)
        for f in ("init.safetensors", "memory.json"):
            shutil.copy(os.path.join(args.prep, name, f), run)
        if not os.path.exists(os.path.join(run, "probe.safetensors")):
            print(f"FAIL {name}: no results; its log:")
            print(open(os.path.join(run, "train.txt")).read()[-2000:])
            failures += 1
            continue
        r = subprocess.run([sys.executable, os.path.join(SRC, "test", "E2E",
                                                         "check_equivalence.py"),
                            os.path.join(args.prep, "cpu"), run, "--model", model],
                           capture_output=True, text=True)
        print(r.stdout.strip() or r.stderr.strip())
        failures += r.returncode != 0

    print("== 2. the CUDA program against PyTorch on the same GPU")
    tau, n, d = tolerance(model)
    ref = os.path.join(res, "torchref")
    cuda = os.path.join(res, "tiny-cuda")
    if os.path.exists(os.path.join(ref, "grads.safetensors")):
        g_t = load_file(os.path.join(ref, "grads.safetensors"))
        g_c = probe_gradients(cuda)
        worst, worst_name = 0.0, "-"
        for k, b in g_t.items():
            b = np.asarray(b, np.float64)
            rel = np.linalg.norm(g_c[k] - b) / max(np.linalg.norm(b), 1e-30)
            if rel > worst:
                worst, worst_name = rel, k
        t_l = json.load(open(os.path.join(ref, "adamw.json")))
        c_l = losses(os.path.join(cuda, "train.jsonl"))
        worst_l = max(abs(a - b) / abs(b) / (t + 1)
                      for t, (a, b) in enumerate(zip(c_l, t_l["adamw_losses"])))
        ok = worst <= tau and worst_l <= tau and len(c_l) == len(t_l["adamw_losses"])
        failures += not ok
        print(f"{'ok' if ok else 'FAIL'} tiny-cuda vs PyTorch {t_l['torch']} on "
              f"{t_l['device']}: first-step gradients within {worst:.1e} "
              f"({worst_name}), AdamW losses within {worst_l:.1e} per step, "
              f"bound tau {tau:.2e} (N {n}, D {d})")
    else:
        print("FAIL: no PyTorch reference")
        failures += 1

    print("== 3. GPT-2 124M (batch 8 x 1024 tokens), median step after 3")
    cfg = {"layers": 12, "heads": 12, "width": 768, "context": 1024, "vocab": 50257}
    n_params = 124439808  # with biases and the position table
    fpt = 6 * (n_params - cfg["context"] * cfg["width"]) + \
        12 * cfg["layers"] * cfg["width"] * cfg["context"]
    rows = []
    for j in sorted(glob.glob(os.path.join(res, "g124-tessera-*.jsonl"))):
        tps, _ = median_tps(j)
        rows.append((os.path.basename(j)[5:-6], tps))
    for txt in sorted(glob.glob(os.path.join(res, "g124-torch-*.txt"))):
        line = [l for l in open(txt) if l.startswith("{")]
        if line:
            r = json.loads(line[-1])
            rows.append((os.path.basename(txt)[5:-4], r["tokens_per_s"]))
        else:
            rows.append((os.path.basename(txt)[5:-4], float("nan")))
    print(f"{'run':32s} {'tokens/s':>10s} {'MFU':>7s}")
    for name, tps in rows:
        print(f"{name:32s} {tps:10.0f} {tps * fpt / PEAK:7.1%}")
    prof = os.path.join(res, "g124-tessera-tf32-profile.txt")
    if os.path.exists(prof):
        lines = open(prof).read().splitlines()
        start = [i for i, l in enumerate(lines) if l.startswith("profile (")]
        if start:
            print("\n".join(lines[start[0]:start[0] + 40]))
    shutil.rmtree(tmp)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
