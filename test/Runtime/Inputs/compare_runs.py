#!/usr/bin/python3
"""Compares two runs of the same model: per-step losses (--log), final
parameters (--save) and first-batch gradients (--dump-grads).

usage: compare_runs.py TESSERA_SRC REF RUN [--rtol X]

REF and RUN are path prefixes: PREFIX.jsonl, PREFIX.safetensors and
PREFIX-grads.safetensors. Prints one line per kind, with RUN's tensor names in
its file order, and exits 1 on any difference above rtol (relative to the
largest magnitude of the reference tensor, so near-zero elements do not
dominate).
"""
import json
import sys

src, ref, run = sys.argv[1:4]
rtol = float(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[4] == "--rtol" else 1e-5
sys.path.insert(0, src + "/examples/gpt")
from safetensors_io import load_file_with_metadata  # noqa: E402

import numpy as np  # noqa: E402

failed = False


def fail(message):
    global failed
    failed = True
    print("MISMATCH: " + message)


def losses(prefix):
    with open(prefix + ".jsonl") as f:
        return [json.loads(line)["loss"] for line in f if line.strip()]


a, b = losses(ref), losses(run)
if len(a) != len(b) or any(x is None for x in a + b):
    fail("losses %s vs %s" % (a, b))
else:
    worst = max(abs(x - y) / abs(x) for x, y in zip(a, b))
    if worst > rtol:
        fail("losses differ by %g: %s vs %s" % (worst, a, b))
    print("losses: %d steps match" % len(a))


def tensors(kind, suffix):
    want, _ = load_file_with_metadata(ref + suffix)
    got, meta = load_file_with_metadata(run + suffix)
    if sorted(want) != sorted(got):
        fail("%s: names %s vs %s" % (kind, sorted(want), sorted(got)))
        return meta
    for name in got:
        scale = max(float(np.abs(want[name]).max()), 1e-30)
        diff = float(np.abs(got[name] - want[name]).max()) / scale
        if want[name].shape != got[name].shape or diff > rtol:
            fail("%s: '%s' differs by %g" % (kind, name, diff))
    print("%s: %s match" % (kind, " ".join(got)))
    return meta


tensors("params", ".safetensors")
meta = tensors("grads", "-grads.safetensors")
_, ref_meta = load_file_with_metadata(ref + "-grads.safetensors")
if abs(float(meta["loss"]) - float(ref_meta["loss"])) > rtol * abs(float(ref_meta["loss"])):
    fail("gradient loss %s vs %s" % (meta["loss"], ref_meta["loss"]))
else:
    print("grads loss: %s" % meta["loss"])
sys.exit(1 if failed else 0)
