#!/usr/bin/python3
"""Loads a checkpoint that a compiled program wrote with --save into the
PyTorch model it was exported from, with ``load_state_dict(strict=True)``,
and compares PyTorch's loss on the first batch with the program's.

  check_save.py --saved FILE --loss-log LOG.jsonl [export.py's options]

The export options (--model, sizes, --seed) rebuild the same model class
(test/E2E/zoo/export.py). LOG is the program's run from the saved weights
(``--init FILE --steps 1``): its first loss. Both are one float32
evaluation of the same function, so they agree within 2 b
(test/E2E/fp32_bound.py). Also checked: tied names hold equal tensors.
Exit 1 on any failure.
"""
import json
import os
import sys

import importlib.util

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from fp32_bound import one_program  # noqa: E402

# test/E2E/zoo/export.py, under another module name than examples/gpt's
# export.py, which it imports.
_spec = importlib.util.spec_from_file_location("zoo_export", os.path.join(HERE, "export.py"))
zoo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(zoo)

import numpy as np  # noqa: E402
import torch  # noqa: E402


def main():
    extra = argparse_split(sys.argv[1:])
    saved, log, rest = extra
    args = zoo.gpt_export.parse_args(rest, zoo.__doc__, zoo.add_args)
    torch.set_num_threads(1)
    tokens = zoo.gpt_export.load_tokens(args.data)
    with open(os.path.join(os.path.dirname(os.path.abspath(args.data)), "vocab.json")) as f:
        vocab = args.vocab or int(json.load(f)["vocab_size"])
    cfg, construct = zoo.make_model(args, vocab)
    model = construct()
    state = zoo.gpt_export.safetensors_io.load_file(saved)
    missing = model.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()},
                                    strict=True)
    print(f"ok   load_state_dict(strict=True): {len(state)} tensors, {missing}")
    failures = []
    for alias, first in zoo.gpt_export.tied_aliases(model).items():
        same = np.array_equal(state[alias], state[first])
        print(f"{'ok  ' if same else 'FAIL'} tied {alias} == {first}")
        if not same:
            failures.append(alias)
    model.eval()
    idx, targets, _ = zoo.gpt_export.get_batch(tokens, 0, cfg.batch, cfg.context)
    with torch.no_grad():
        _, loss = model(idx, targets)
    with open(log) as f:
        ours = float(json.loads(f.readline())["loss"])
    b = one_program(cfg.to_dict())
    err = abs(ours - float(loss)) / abs(float(loss))
    ok = err <= 2 * b
    print(f"{'ok  ' if ok else 'FAIL'} loss from the saved weights: {ours:.7f} vs PyTorch "
          f"{float(loss):.7f}: {err:.3e} (tolerance 2b = {2 * b:.3e})")
    if not ok:
        failures.append("loss")
    return 1 if failures else 0


def argparse_split(argv):
    """--saved FILE --loss-log LOG out of argv; the rest are export.py's."""
    saved = log = None
    rest = []
    it = iter(argv)
    for a in it:
        if a == "--saved":
            saved = next(it)
        elif a == "--loss-log":
            log = next(it)
        else:
            rest.append(a)
    if not saved or not log:
        raise SystemExit("usage: check_save.py --saved FILE --loss-log LOG [export options]")
    return saved, log, rest + ["--out", os.devnull]


if __name__ == "__main__":
    sys.exit(main())
