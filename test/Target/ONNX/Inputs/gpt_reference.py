#!/usr/bin/python3
"""The tiny GPT's first batch against PyTorch's reference loss.

    gpt_reference.py inputs GPT_DIR OUT.safetensors
        init.safetensors + the first batch (idx, targets) -> one input file
    gpt_reference.py check GPT_DIR RESULTS.safetensors
        compares the "loss" result with reference.json's init_loss (rel 1e-5)
"""
import json
import os
import sys

import numpy as np

REPO = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "examples", "gpt"))
import safetensors_io  # noqa: E402

mode, gpt_dir, path = sys.argv[1:4]
ref = json.load(open(os.path.join(gpt_dir, "reference.json")))
if mode == "inputs":
    feed = dict(safetensors_io.load_file(os.path.join(gpt_dir, "init.safetensors")))
    feed["idx"] = np.array(ref["first_batch"]["idx"], np.int64)
    feed["targets"] = np.array(ref["first_batch"]["targets"], np.int64)
    safetensors_io.save_file(feed, path)
else:
    loss = float(safetensors_io.load_file(path)["loss"])
    want = ref["init_loss"]
    rel = abs(loss - want) / abs(want)
    print(f"loss {loss!r} reference {want!r} relative difference {rel:.3g}")
    print("loss matches the PyTorch reference" if rel < 1e-5 else "LOSS DIFFERS")
    sys.exit(0 if rel < 1e-5 else 1)
