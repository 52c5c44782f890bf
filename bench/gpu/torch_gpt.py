#!/usr/bin/env python3
"""PyTorch on the GPU beside the CUDA programs of tessera-compile.

Runs on the GPU machine with that machine's python3 and PyTorch (2.x); uses
examples/gpt/model.py, the model every Tessera GPT export comes from.

  torch_gpt.py reference MODEL_DIR DATA OUT_DIR
      The exported model (examples/gpt/export.py --out MODEL_DIR) in float32
      on the GPU, TF32 off: OUT_DIR/grads.safetensors (the gradients of the
      first batch, from init.safetensors) and OUT_DIR/adamw.json (the losses
      of 5 AdamW steps, lr 1e-3, betas 0.9/0.999, eps 1e-8, weight decay
      0.01: the settings of test/E2E/run_plan.sh). compare_gpu.py compares
      the CUDA program with these.

  torch_gpt.py init MODEL_CONFIG.json OUT.safetensors [--seed S]
      GPT-2-style initial weights for a config (export.py's reference.json
      "config"), in state_dict order: what a CUDA program of that model loads
      when its 500 MB init.safetensors cannot travel to the GPU machine.

  torch_gpt.py bench MODEL_CONFIG.json DATA --steps K [--compile]
                [--attention {math,sdpa}] [--precision {bf16,fp32,tf32}]
      Training steps (AdamW, fused) of the same model: tokens/s and MFU
      (989e12 FLOP/s, bf16 dense, H100 SXM) over the steps after the first
      three; one JSON line on stdout. --attention sdpa replaces the model's
      masked softmax by F.scaled_dot_product_attention(is_causal=True)
      (flash attention): what a user of PyTorch would run.
"""
import argparse
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "gpt"))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import safetensors_io  # noqa: E402
from model import GPT, GPTConfig, CausalSelfAttention  # noqa: E402

H100_BF16_PEAK = 989e12
# TESSERA_TORCH_DEVICE=cpu tries the script where there is no GPU.
DEVICE = os.environ.get("TESSERA_TORCH_DEVICE", "cuda")


def device_name():
    return torch.cuda.get_device_name() if DEVICE == "cuda" else DEVICE


def sync():
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def load_tokens(path):
    return np.fromfile(path, dtype="<u2")


def get_batch(tokens, step, B, T, device):
    """examples/gpt/export.py's batching rule."""
    m = len(tokens) - T - 1
    offs = [((step * B + j) * T) % m for j in range(B)]
    x = np.stack([tokens[o:o + T] for o in offs]).astype(np.int64)
    y = np.stack([tokens[o + 1:o + T + 1] for o in offs]).astype(np.int64)
    return torch.from_numpy(x).to(device), torch.from_numpy(y).to(device)


def make_model(cfg_dict):
    keys = GPTConfig.__dataclass_fields__.keys()
    cfg = GPTConfig(**{k: v for k, v in cfg_dict.items() if k in keys})
    return cfg, GPT(cfg)


def to_device(model, device):
    """model.to(device), and the attention masks (plain attributes) too."""
    model = model.to(device)
    for m in model.modules():
        if isinstance(m, CausalSelfAttention):
            m._future = m._future.to(device)
    return model


def load_weights(model, path, device):
    state = safetensors_io.load_file(path)
    own = model.state_dict()
    missing = [k for k in own if k not in state]
    if missing:
        raise SystemExit(f"{path} lacks {missing[:3]}...")
    model.load_state_dict({k: torch.from_numpy(np.array(state[k])) for k in own})
    return to_device(model, device)


def reference(args):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    ref = json.load(open(os.path.join(args.model_dir, "reference.json")))
    cfg, model = make_model(ref["config"])
    dev = torch.device(DEVICE)
    init = os.path.join(args.model_dir, "init.safetensors")
    model = load_weights(model, init, dev)
    tokens = load_tokens(args.data)
    B, T = cfg.batch, cfg.context
    os.makedirs(args.out_dir, exist_ok=True)

    x, y = get_batch(tokens, 0, B, T, dev)
    _, loss = model(x, y)
    loss.backward()
    grads = {n: p.grad.detach().cpu().numpy().astype(np.float32)
             for n, p in model.named_parameters()}
    safetensors_io.save_file(grads, os.path.join(args.out_dir, "grads.safetensors"))

    model = load_weights(make_model(ref["config"])[1], init, dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.999),
                            eps=1e-8, weight_decay=0.01)
    losses = []
    for step in range(5):
        x, y = get_batch(tokens, step, B, T, dev)
        opt.zero_grad(set_to_none=True)
        _, loss = model(x, y)
        loss.backward()
        opt.step()
        losses.append(float(loss.item()))
    json.dump({"torch": torch.__version__, "device": device_name(),
               "first_loss": losses[0], "adamw_losses": losses},
              open(os.path.join(args.out_dir, "adamw.json"), "w"), indent=1)
    print(f"torch reference: {torch.__version__} on {device_name()}, "
          f"losses {' '.join(f'{l:.6f}' for l in losses)}")


def init(args):
    cfg_dict = json.load(open(args.config))
    cfg_dict = cfg_dict.get("config", cfg_dict)
    torch.manual_seed(args.seed)
    _, model = make_model(cfg_dict)
    state = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    safetensors_io.save_file(state, args.out)
    print(f"init: {len(state)} tensors, "
          f"{sum(v.size for v in state.values())} values -> {args.out}")


def sdpa_forward(self, x):
    B, T, C = x.shape
    H, D = self.heads, self.head_dim
    q, k, v = self.c_attn(x).split(C, dim=2)
    q = q.view(B, T, H, D).transpose(1, 2)
    k = k.view(B, T, H, D).transpose(1, 2)
    v = v.view(B, T, H, D).transpose(1, 2)
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return self.resid_dropout(self.c_proj(y.transpose(1, 2).reshape(B, T, C)))


def flops_per_token(cfg, n_params):
    """6N + 12 L H Q T (the issue's rule; N without the position table)."""
    n = n_params - cfg.context * cfg.width
    q = cfg.width // cfg.heads
    return 6 * n + 12 * cfg.layers * cfg.heads * q * cfg.context


def bench(args):
    cfg_dict = json.load(open(args.config))
    cfg_dict = cfg_dict.get("config", cfg_dict)
    if args.batch:
        cfg_dict["batch"] = args.batch
    if args.attention == "sdpa":
        CausalSelfAttention.forward = sdpa_forward
    torch.backends.cuda.matmul.allow_tf32 = args.precision == "tf32"
    torch.backends.cudnn.allow_tf32 = args.precision == "tf32"
    dev = torch.device(DEVICE)
    torch.manual_seed(1)
    cfg, model = make_model(cfg_dict)
    model = to_device(model, dev)
    n_params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4,
                            **({"fused": True} if DEVICE == "cuda" else {}))
    step_fn = model
    if args.compile:
        step_fn = torch.compile(model)
    tokens = load_tokens(args.data)
    B, T = cfg.batch, cfg.context
    amp = args.precision == "bf16"
    times, losses = [], []
    t_start = time.time()
    for step in range(args.steps):
        x, y = get_batch(tokens, step, B, T, dev)
        sync()
        t0 = time.perf_counter()
        with torch.autocast(DEVICE, dtype=torch.bfloat16, enabled=amp):
            _, loss = step_fn(x, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        sync()
        times.append(time.perf_counter() - t0)
        losses.append(float(loss.item()))
    steady = sorted(times[3:]) or times
    med = steady[len(steady) // 2]
    tps = B * T / med
    fpt = flops_per_token(cfg, n_params)
    out = {"what": "pytorch", "torch": torch.__version__,
           "device": device_name(), "compile": args.compile,
           "attention": args.attention, "precision": args.precision,
           "batch": B, "context": T, "params": n_params, "steps": args.steps,
           "median_step_s": med, "tokens_per_s": tps,
           "mfu": tps * fpt / H100_BF16_PEAK, "flops_per_token": fpt,
           "first_step_s": times[0], "wall_s": time.time() - t_start,
           "peak_bytes": torch.cuda.max_memory_allocated() if DEVICE == "cuda" else 0,
           "losses": losses}
    print(json.dumps(out), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("reference")
    r.add_argument("model_dir")
    r.add_argument("data")
    r.add_argument("out_dir")
    i = sub.add_parser("init")
    i.add_argument("config")
    i.add_argument("out")
    i.add_argument("--seed", type=int, default=1)
    b = sub.add_parser("bench")
    b.add_argument("config")
    b.add_argument("data")
    b.add_argument("--steps", type=int, default=20)
    b.add_argument("--batch", type=int)
    b.add_argument("--compile", action="store_true")
    b.add_argument("--attention", choices=("math", "sdpa"), default="math")
    b.add_argument("--precision", choices=("bf16", "fp32", "tf32"), default="bf16")
    args = ap.parse_args()
    {"reference": reference, "init": init, "bench": bench}[args.cmd](args)


if __name__ == "__main__":
    main()
