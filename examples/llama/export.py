#!/usr/bin/python3
"""Export the example Llama to ONNX with its PyTorch reference for Tessera's tests.

The same files, options and batching rule as examples/gpt/export.py (whose
code this reuses), for the Llama of model.py; its own options are
--kv-heads (grouped-query attention) and --hidden (SwiGLU width). The GPT's
--dropout, --gelu and --no-bias do not apply (the Llama has no dropout and
no biases). Run with Debian's Python, e.g.:

    /usr/bin/python3 examples/llama/export.py --layers 2 --heads 4 --kv-heads 2 \\
        --width 32 --hidden 64 --context 32 --batch 4 --out /tmp/llama
"""

import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "gpt"))
import export as gpt_export  # noqa: E402


def _load_model_module():
    # Loaded under its own name: examples/gpt's model.py is `model`.
    spec = importlib.util.spec_from_file_location("llama_model", os.path.join(HERE, "model.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules["llama_model"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


llama = _load_model_module()


def add_llama_args(ap):
    ap.add_argument("--kv-heads", type=int, default=None,
                    help="key/value heads (default: --heads, i.e. no grouping)")
    ap.add_argument("--hidden", type=int, default=None,
                    help="SwiGLU hidden size (default: 2 * --width)")
    ap.add_argument("--init-std", type=float, default=0.02,
                    help="std of the weight matrices' normal init (tests use a larger one so that "
                    "attention is not uniform at the first step)")


def make_llama(args, vocab):
    if args.dropout or args.no_bias or args.gelu != "erf":
        raise SystemExit("--dropout, --no-bias and --gelu are GPT options; the Llama has "
                         "no dropout, no biases and SiLU")
    cfg = llama.LlamaConfig(layers=args.layers, heads=args.heads,
                            kv_heads=args.kv_heads or args.heads, width=args.width,
                            hidden=args.hidden or 2 * args.width, context=args.context,
                            vocab=vocab, batch=args.batch, init_std=args.init_std)
    return cfg, (lambda: llama.Llama(cfg))


if __name__ == "__main__":
    sys.exit(gpt_export.main(make_model=make_llama, description=__doc__,
                             add_model_args=add_llama_args))
