#!/usr/bin/python3
"""Export examples/gpt's GPT with a squared-ReLU MLP, for the act extension.

The GPT of examples/gpt/model.py whose MLP computes
``c_proj(torch.relu(c_fc(x)).square())`` (Primer's squared ReLU) instead of
GELU; the same options, files and reference as examples/gpt/export.py (whose
code this reuses). torch.onnx.export writes the square as Mul(r, r), which
the act extension raises into act.relu2. Run with Debian's Python, e.g.:

    /usr/bin/python3 examples/extension/export.py --layers 2 --heads 2 \\
        --width 32 --context 32 --batch 4 --out /tmp/relu2
"""

import os
import sys
import types

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "gpt"))
import export as gpt_export  # noqa: E402
import model as gpt_model  # noqa: E402


def relu2_mlp_forward(self, x: torch.Tensor) -> torch.Tensor:
    return self.dropout(self.c_proj(torch.relu(self.c_fc(x)).square()))


def make_relu2_gpt(args, vocab):
    if args.gelu != "erf":
        raise SystemExit("--gelu does not apply: the MLP uses the squared ReLU")
    cfg, construct = gpt_export.make_gpt(args, vocab)

    def build():
        gpt = construct()
        for module in gpt.modules():
            if isinstance(module, gpt_model.MLP):
                module.forward = types.MethodType(relu2_mlp_forward, module)
        return gpt

    return cfg, build


if __name__ == "__main__":
    sys.exit(gpt_export.main(make_model=make_relu2_gpt, description=__doc__))
