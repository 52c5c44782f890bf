#!/usr/bin/python3
"""Export the example GPT to ONNX and write the PyTorch reference for Tessera's tests.

Run with Debian's Python (torch 1.13, onnx 1.12), e.g. the bundled tiny model:

    /usr/bin/python3 examples/gpt/export.py --layers 2 --heads 2 --width 32 \\
        --context 32 --batch 4 --seed 1337 --out examples/gpt/tiny

Writes into --out:

    model.onnx               forward(idx, targets) -> (logits, loss); opset 17,
                             training mode, no constant folding, static shapes
    init.safetensors         the initial weights, F32, state_dict names and order
    grads.safetensors        d loss / d parameter on the first batch at the initial weights
    final_sgd.safetensors    the weights after the SGD run
    final_adamw.safetensors  the weights after the AdamW run
    reference.json           config, data, batching rule, losses, norms (README.md)

Batches (the rule the emitted training programs use): step i, row j starts at
offset o = ((i*B + j) * T) mod (len - T - 1) of the uint16 token file; the inputs
are tokens[o, o+T), the targets tokens[o+1, o+T+1).
"""

from __future__ import annotations

import argparse
import collections
import copy
import hashlib
import json
import math
import os
import re
import sys
import time
import warnings

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from model import GPT, GPTConfig  # noqa: E402
import safetensors_io  # noqa: E402

OPSET = 17
REFERENCE_FORMAT = "tessera-gpt-reference/1"
BATCH_RULE = ("step i, row j: o = ((i*B + j) * T) mod (len - T - 1); "
              "idx = tokens[o, o+T), targets = tokens[o+1, o+T+1)")

# The ONNX ops Tessera's importer is meant to handle; anything else is reported.
ALLOWED_OPS = {
    "MatMul", "Gemm", "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Erf", "Tanh",
    "LayerNormalization", "Softmax", "Reshape", "Transpose", "Split", "Slice", "Concat",
    "Unsqueeze", "Squeeze", "Gather", "Where", "Equal", "Cast", "Constant",
    "ConstantOfShape", "Expand", "Shape", "Dropout", "SoftmaxCrossEntropyLoss",
    "ReduceMean", "Identity", "Relu", "Gelu", "Neg", "Sigmoid", "Sin", "Cos", "Trilu",
    "Einsum",
}


# ---------------------------------------------------------------------------- data

def load_tokens(path: str) -> np.ndarray:
    """A nanoGPT .bin file: raw little-endian uint16 token ids, no header."""
    return np.fromfile(path, dtype="<u2")


def batch_offsets(step: int, B: int, T: int, n_tokens: int) -> list:
    m = n_tokens - T - 1
    return [((step * B + j) * T) % m for j in range(B)]


def get_batch(tokens: np.ndarray, step: int, B: int, T: int):
    """(idx, targets, offsets) of training step ``step`` under the batching rule."""
    offs = batch_offsets(step, B, T, len(tokens))
    x = np.stack([tokens[o:o + T] for o in offs]).astype(np.int64)
    y = np.stack([tokens[o + 1:o + T + 1] for o in offs]).astype(np.int64)
    return torch.from_numpy(x), torch.from_numpy(y), offs


def sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ---------------------------------------------------------------------- helpers

def state_arrays(model: torch.nn.Module) -> "collections.OrderedDict[str, np.ndarray]":
    return collections.OrderedDict((k, v.detach().cpu().numpy().copy()) for k, v in model.state_dict().items())


def write_safetensors(path: str, tensors, metadata) -> None:
    """Write and read back (round-trip self-check)."""
    safetensors_io.save_file(tensors, path, metadata=metadata)
    back = safetensors_io.load_file(path)
    assert list(back) == list(tensors), f"{path}: names/order changed on round trip"
    for k, v in tensors.items():
        assert back[k].dtype == v.dtype and np.array_equal(back[k], v), f"{path}: {k} changed on round trip"


def dumps_compact(obj) -> str:
    """JSON with indentation, but every list of plain numbers on one line."""
    text = json.dumps(obj, indent=1)
    return re.sub(r"\[\s*([-+0-9.eE,\s]+?)\s*\]",
                  lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", text)


def norm(a) -> float:
    return float(np.linalg.norm(np.asarray(a, dtype=np.float64).ravel()))


def run_optimizer(init_model: torch.nn.Module, make_opt, tokens: np.ndarray, B: int, T: int, steps: int,
                  clip_norm: float = 0.0, norms: list = None):
    """Train a copy of ``init_model`` for ``steps`` steps; losses[i] is the loss of
    step i's forward (weights after i updates, batch i), taken before its update.
    With ``clip_norm`` > 0 the gradients are clipped by torch.nn.utils.clip_grad_norm_
    before each update; ``norms``, if given, receives each step's global gradient
    norm (before clipping)."""
    model = copy.deepcopy(init_model)
    model.train()
    opt = make_opt(model.parameters())
    losses = []
    for i in range(steps):
        idx, targets, _ = get_batch(tokens, i, B, T)
        opt.zero_grad(set_to_none=True)
        _, loss = model(idx, targets)
        loss.backward()
        total = torch.nn.utils.clip_grad_norm_(model.parameters(),
                                               clip_norm if clip_norm > 0 else float("inf"))
        if norms is not None:
            norms.append(float(total))
        opt.step()
        losses.append(float(loss.item()))
    return losses, state_arrays(model)


# ------------------------------------------------------------------------- ONNX

def export_onnx(model: torch.nn.Module, idx: torch.Tensor, targets: torch.Tensor, path: str) -> None:
    with warnings.catch_warnings():
        # Sizes are read as Python ints on purpose (static shapes): silence the tracer.
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
        torch.onnx.export(
            model, (idx, targets), path,
            opset_version=OPSET,
            training=torch.onnx.TrainingMode.TRAINING,
            do_constant_folding=False,
            input_names=["idx", "targets"],
            output_names=["logits", "loss"],
        )


def tied_aliases(model: torch.nn.Module) -> dict:
    """{name: first name} for the state_dict entries that are the same tensor
    as an earlier entry (a head tied to the embedding: nanoGPT's
    ``lm_head.weight = transformer.wte.weight``). ONNX keeps one initializer
    for each such group, under the first name."""
    first, aliases = {}, {}
    for name, t in model.state_dict(keep_vars=True).items():
        key = (t.data_ptr(), tuple(t.shape), t.dtype)
        if key in first:
            aliases[name] = first[key]
        else:
            first[key] = name
    return aliases


def record_parameters(path: str, parameters, state_dict=None) -> None:
    """Writes the parameters' names into the model's metadata
    ("tessera.parameters", a JSON list): Tessera trains those initializers and
    keeps the others (buffers) constant. ``state_dict``, a list of (name,
    initializer) pairs in state_dict order, becomes "tessera.state_dict": the
    names a saved checkpoint needs for ``load_state_dict(strict=True)``,
    tied weights under every name they have."""
    import onnx
    model = onnx.load(path)
    entry = model.metadata_props.add()
    entry.key, entry.value = "tessera.parameters", json.dumps(list(parameters))
    if state_dict is not None:
        entry = model.metadata_props.add()
        entry.key, entry.value = "tessera.state_dict", json.dumps([list(p) for p in state_dict])
    onnx.save(model, path)


def _dims(value_info):
    t = value_info.type.tensor_type
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in t.shape.dim]


def verify_onnx(path: str, init: "collections.OrderedDict[str, np.ndarray]", cfg) -> dict:
    """Check the exported model; returns a summary for reference.json."""
    import onnx
    from onnx import numpy_helper, shape_inference

    model = onnx.load(path)
    onnx.checker.check_model(model)
    inferred = shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    g = inferred.graph

    # Initializers: exactly the state_dict, same names, shapes and values.
    inits = collections.OrderedDict((t.name, numpy_helper.to_array(t)) for t in g.initializer)
    if list(inits) != list(init):
        extra = [n for n in inits if n not in init]
        missing = [n for n in init if n not in inits]
        renamed = {a: b for a, b in zip(sorted(missing), sorted(extra))}
        raise SystemExit(f"ONNX initializer names differ from the state_dict: missing {missing}, "
                         f"extra {extra}, possible renaming {renamed}")
    for name, arr in init.items():
        if inits[name].shape != arr.shape or not np.array_equal(inits[name], arr):
            raise SystemExit(f"ONNX initializer {name} differs from the state_dict tensor")

    ops = collections.Counter(n.op_type for n in g.node)
    outside = sorted(set(ops) - ALLOWED_OPS)
    if outside:
        print(f"WARNING: ops outside the importer's list: {outside}", file=sys.stderr)

    # Static shapes: every graph input/output and every inferred intermediate.
    dynamic = []
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        if not vi.type.HasField("tensor_type") or not vi.type.tensor_type.HasField("shape"):
            dynamic.append(vi.name)
        elif any(not isinstance(d, int) for d in _dims(vi)):
            dynamic.append(vi.name)
    B, T, V = cfg.batch, cfg.context, cfg.vocab
    io = {vi.name: _dims(vi) for vi in list(g.input) + list(g.output)}
    expected = {"idx": [B, T], "targets": [B, T], "logits": [B, T, V], "loss": []}
    for name, dims in expected.items():
        if io.get(name) != dims:
            raise SystemExit(f"ONNX {name} has shape {io.get(name)}, expected {dims}")

    attrs = collections.defaultdict(set)
    for n in g.node:
        for a in n.attribute:
            if a.type != onnx.AttributeProto.TENSOR:
                v = onnx.helper.get_attribute_value(a)
                v = v.decode() if isinstance(v, bytes) else (tuple(v) if isinstance(v, list) else v)
                attrs[n.op_type].add((a.name, v))
    return {
        "opset": OPSET,
        "ir_version": model.ir_version,
        "op_types": dict(sorted(ops.items())),
        "ops_outside_list": outside,
        "attributes": {op: sorted(f"{k}={v!r}" for k, v in s) for op, s in sorted(attrs.items())},
        "nodes": len(g.node),
        "dynamic_values": dynamic,
        "inputs": {vi.name: {"shape": _dims(vi), "dtype": onnx.TensorProto.DataType.Name(vi.type.tensor_type.elem_type)}
                   for vi in g.input},
        "outputs": {vi.name: {"shape": _dims(vi), "dtype": onnx.TensorProto.DataType.Name(vi.type.tensor_type.elem_type)}
                    for vi in g.output},
    }


# ------------------------------------------------------------------------- main

def parse_args(argv=None, description=__doc__, add_model_args=None):
    """The common options; ``add_model_args(ap)`` adds a model's own (examples/llama)."""
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--width", type=int, default=32)
    ap.add_argument("--context", type=int, default=32, help="T of the export (sequence length)")
    ap.add_argument("--vocab", type=int, default=None,
                    help="vocabulary size (default: vocab_size of vocab.json beside --data)")
    ap.add_argument("--batch", type=int, default=4, help="B of the export")
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--data", default=os.path.join(HERE, "data", "train.bin"),
                    help="uint16 token file (default: the bundled demo data)")
    ap.add_argument("--sgd-lr", "--lr", dest="sgd_lr", type=float, default=0.2, help="SGD learning rate")
    ap.add_argument("--adamw-lr", type=float, default=3e-3, help="AdamW learning rate")
    ap.add_argument("--adamw-weight-decay", type=float, default=0.01)
    ap.add_argument("--steps", type=int, default=10, help="steps of each optimizer run")
    ap.add_argument("--clip-norm", type=float, default=0.0,
                    help="clip the optimizer runs' gradients to this global norm "
                         "(torch.nn.utils.clip_grad_norm_; 0: off)")
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--gelu", choices=("erf", "tanh"), default="erf")
    ap.add_argument("--no-bias", action="store_true", help="Linear layers without biases")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch CPU threads (1 makes the reference reproducible bit for bit)")
    ap.add_argument("--no-final", action="store_true", help="do not write final_*.safetensors")
    ap.add_argument("--quiet", action="store_true")
    if add_model_args:
        add_model_args(ap)
    return ap.parse_args(argv)


def make_gpt(args, vocab: int):
    """(config, model) of examples/gpt for the parsed options."""
    cfg = GPTConfig(layers=args.layers, heads=args.heads, width=args.width, context=args.context,
                    vocab=vocab, batch=args.batch, dropout=args.dropout, bias=not args.no_bias,
                    gelu=args.gelu)
    return cfg, (lambda: GPT(cfg))


def main(argv=None, make_model=make_gpt, description=__doc__, add_model_args=None) -> int:
    """Exports the model that ``make_model(args, vocab) -> (config, constructor)``
    describes (examples/gpt's by default; examples/llama/export.py passes its own)."""
    args = parse_args(argv, description, add_model_args)
    t0 = time.time()
    log = (lambda *a: None) if args.quiet else (lambda *a: print(*a, flush=True))

    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)
    torch.set_default_dtype(torch.float32)

    tokens = load_tokens(args.data)
    vocab = args.vocab
    if vocab is None:
        vj = os.path.join(os.path.dirname(os.path.abspath(args.data)), "vocab.json")
        if not os.path.exists(vj):
            raise SystemExit(f"--vocab not given and no {vj}")
        with open(vj) as f:
            vocab = int(json.load(f)["vocab_size"])
    if int(tokens.max()) >= vocab:
        raise SystemExit(f"{args.data} has token id {int(tokens.max())} >= vocab {vocab}")
    cfg, construct = make_model(args, vocab)
    B, T = cfg.batch, cfg.context
    if len(tokens) < T + 2:
        raise SystemExit(f"{args.data} has {len(tokens)} tokens; need at least T+2 = {T + 2}")

    torch.manual_seed(args.seed)
    model = construct()
    model.train()
    init = state_arrays(model)
    names = list(init)
    # The state_dict holds the parameters and the persistent buffers (a mask,
    # rotary tables); the ONNX model lists which are parameters.
    parameters = [n for n, _ in model.named_parameters()]
    assert set(parameters) <= set(names), "a parameter is missing from the state_dict"
    os.makedirs(args.out, exist_ok=True)
    meta = {"format": "pt", "config": json.dumps(cfg.to_dict(), sort_keys=True)}
    write_safetensors(os.path.join(args.out, "init.safetensors"), init, meta)
    log(f"model: {model.num_parameters()} parameters in {len(names)} tensors")

    # ONNX export, traced on the first batch.
    idx, targets, offs = get_batch(tokens, 0, B, T)
    onnx_path = os.path.join(args.out, "model.onnx")
    t_export = time.time()
    export_onnx(model, idx, targets, onnx_path)
    aliases = tied_aliases(model)
    record_parameters(onnx_path, parameters, [(n, aliases.get(n, n)) for n in names])
    summary = verify_onnx(onnx_path, collections.OrderedDict(
        (n, a) for n, a in init.items() if n not in aliases), cfg)
    t_export = time.time() - t_export
    for n, p in model.state_dict().items():  # the export must not have changed the weights
        assert np.array_equal(p.numpy(), init[n]), n
    log(f"onnx: {summary['nodes']} nodes, ops {summary['op_types']}")
    if summary["dynamic_values"]:
        log(f"onnx: values without a static shape: {summary['dynamic_values']}")

    # Loss and gradients at the initial weights on the first batch.
    t_ref = time.time()
    model.zero_grad(set_to_none=True)
    torch.manual_seed(args.seed)  # dropout masks, if any
    logits, loss = model(idx, targets)
    loss.backward()
    init_loss = float(loss.item())
    grads = collections.OrderedDict((n, p.grad.detach().numpy().copy()) for n, p in model.named_parameters())
    write_safetensors(os.path.join(args.out, "grads.safetensors"), grads,
                      {"format": "pt", "what": "d loss / d parameter, first batch, initial weights"})
    log(f"init loss {init_loss:.7f} (ln V = {math.log(cfg.vocab):.7f})")
    # The same in float64: the reference that the tests' float32 error bounds
    # are measured against (test/E2E/fp32_bound.py).
    model64 = copy.deepcopy(model).double()
    model64.zero_grad(set_to_none=True)
    torch.manual_seed(args.seed)
    _, loss64 = model64(idx, targets)
    loss64.backward()
    init_loss_f64 = float(loss64.item())
    grads64 = collections.OrderedDict((n, p.grad.detach().numpy().copy())
                                      for n, p in model64.named_parameters())
    write_safetensors(os.path.join(args.out, "grads_f64.safetensors"), grads64,
                      {"format": "pt", "what": "d loss / d parameter in float64, first batch, "
                       "initial weights"})
    del model64

    sgd_cfg = dict(lr=args.sgd_lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False)
    adamw_cfg = dict(lr=args.adamw_lr, betas=(0.9, 0.999), eps=1e-8,
                     weight_decay=args.adamw_weight_decay, amsgrad=False)
    init_model = copy.deepcopy(model)
    init_model.zero_grad(set_to_none=True)
    runs = {}
    for name, make in (("sgd", lambda ps: torch.optim.SGD(ps, **sgd_cfg)),
                       ("adamw", lambda ps: torch.optim.AdamW(ps, **adamw_cfg))):
        torch.manual_seed(args.seed)  # dropout masks, if any
        norms = []
        losses, final = run_optimizer(init_model, make, tokens, B, T, args.steps,
                                      args.clip_norm, norms)
        runs[name] = (losses, final, norms)
        if not args.no_final:
            write_safetensors(os.path.join(args.out, f"final_{name}.safetensors"), final,
                              {"format": "pt", "what": f"weights after {args.steps} {name} steps"})
        log(f"{name}: " + " ".join(f"{x:.5f}" for x in losses))
    t_ref = time.time() - t_ref
    if getattr(cfg, "dropout", 0.0) > 0:
        print(f"WARNING: dropout {cfg.dropout} > 0: the reference draws random masks and only "
              "PyTorch can reproduce it (with the same seed)", file=sys.stderr)
    elif runs["sgd"][0][0] != init_loss or runs["adamw"][0][0] != init_loss:
        raise SystemExit("step 0 loss of an optimizer run differs from the initial loss")

    ref = collections.OrderedDict()
    ref["format"] = REFERENCE_FORMAT
    ref["config"] = cfg.to_dict()
    ref["seed"] = args.seed
    ref["versions"] = {"torch": torch.__version__, "onnx": __import__("onnx").__version__,
                       "numpy": np.__version__}
    ref["dtype"] = "float32"
    ref["num_parameters"] = model.num_parameters()
    ref["files"] = {"model": "model.onnx", "init": "init.safetensors", "grads": "grads.safetensors",
                    "grads_f64": "grads_f64.safetensors"}
    if not args.no_final:
        ref["files"].update(final_sgd="final_sgd.safetensors", final_adamw="final_adamw.safetensors")
    ref["data"] = {"file": os.path.basename(args.data), "tokens": int(len(tokens)),
                   "dtype": "uint16-le", "sha256": sha256(args.data)}
    ref["batching"] = {"rule": BATCH_RULE, "B": B, "T": T, "modulus": int(len(tokens) - T - 1)}
    ref["first_batch"] = {"offsets": offs, "idx": idx.tolist(), "targets": targets.tolist()}
    ref["loss_definition"] = ("losses[i] is the loss of step i: forward on batch i with the weights "
                              "after i updates, before step i's update; losses[0] == init_loss")
    ref["init_loss"] = init_loss
    ref["init_loss_f64"] = init_loss_f64
    ref["sgd"] = {"optimizer": "torch.optim.SGD", **sgd_cfg, "steps": args.steps,
                  "clip_norm": args.clip_norm, "grad_norms": runs["sgd"][2],
                  "losses": runs["sgd"][0],
                  "final_param_norms": {n: norm(a) for n, a in runs["sgd"][1].items()}}
    ref["adamw"] = {"optimizer": "torch.optim.AdamW", **{k: (list(v) if isinstance(v, tuple) else v)
                                                          for k, v in adamw_cfg.items()},
                    "applied_to": "every parameter (one param group)", "steps": args.steps,
                    "clip_norm": args.clip_norm, "grad_norms": runs["adamw"][2],
                    "losses": runs["adamw"][0],
                    "final_param_norms": {n: norm(a) for n, a in runs["adamw"][1].items()}}
    ref["params"] = {n: {"shape": list(init[n].shape), "init_norm": norm(init[n]),
                         "grad_norm": norm(grads[n])} for n in parameters}
    ref["buffers"] = [n for n in init if n not in grads and n not in aliases]
    ref["tied"] = aliases
    ref["grad_norms"] = {n: norm(g) for n, g in grads.items()}
    ref["global_grad_norm"] = norm(np.concatenate([g.ravel() for g in grads.values()]))
    ref["onnx"] = summary
    with open(os.path.join(args.out, "reference.json"), "w") as f:
        f.write(dumps_compact(ref) + "\n")

    log(f"export+verify {t_export:.2f}s, reference {t_ref:.2f}s, total {time.time() - t0:.2f}s "
        f"-> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
