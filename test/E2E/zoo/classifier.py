#!/usr/bin/python3
"""Classifiers of the E2E zoo: float inputs, 1-D class labels, models whose
inputs are not token ids (``forward(x, y)``).

  classifier.py --out DIR [--model mlp|cnn] [--samples N] [--features F]
                [--hidden H] [--classes C] [--batch B] [--steps K] [--seed S]

--model mlp (default): Linear(F,H) ReLU Linear(H,H) ReLU Linear(H,C) on
x [B, F]. --model mlp-acts: the same with leaky_relu, softplus, clamp,
maximum, abs and repeat (Tile) before a Linear(2H,C). --model cnn: on images x [B, 3, 8, 8], Conv(3->8, 3x3, pad 1)
BatchNorm2d ReLU MaxPool(2), Conv(8->16, 3x3, stride 2, pad 1, groups 2)
ReLU, AvgPool(3x3, stride 1, pad 1, counting the padding, PyTorch's
default), GlobalAveragePool, Linear(16->C).

Writes, as examples/gpt/export.py does for the GPT (the same file names, so
that test/E2E/check_training.py and check_equivalence.py read them):

  model.onnx               Linear(F,H) ReLU Linear(H,H) ReLU Linear(H,C),
                           F.cross_entropy; inputs x [B,F] f32, y [B] i64
  data.safetensors         the samples: x [N,F] f32, y [N] i64 (the batch
                           format of docs/training.md)
  init.safetensors         the initial weights
  grads.safetensors, grads_f64.safetensors   first-step gradients
  reference.json           config (with the bound's N and D), losses of K
                           SGD and K AdamW steps

Batches follow the driver's rule for sample files: row j of step s is
sample (s*B + j) mod N.
"""
import argparse
import collections
import copy
import json
import os
import sys
import warnings

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples", "gpt"))
import export as gpt_export  # noqa: E402  (examples/gpt/export.py)


class Classifier(torch.nn.Module):
    def __init__(self, features, hidden, classes):
        super().__init__()
        self.fc1 = torch.nn.Linear(features, hidden)
        self.fc2 = torch.nn.Linear(hidden, hidden)
        self.head = torch.nn.Linear(hidden, classes)

    def forward(self, x, y):
        h = F.relu(self.fc1(x))
        h = F.relu(self.fc2(h))
        logits = self.head(h)
        return logits, F.cross_entropy(logits, y)


class ActsClassifier(torch.nn.Module):
    """The MLP with the piecewise activations users write: leaky_relu,
    softplus, clamp, maximum, abs, and repeat (Tile)."""

    def __init__(self, features, hidden, classes):
        super().__init__()
        self.fc1 = torch.nn.Linear(features, hidden)
        self.fc2 = torch.nn.Linear(hidden, hidden)
        self.head = torch.nn.Linear(2 * hidden, classes)

    def forward(self, x, y):
        h = F.leaky_relu(self.fc1(x), 0.1)
        h = torch.clamp(F.softplus(self.fc2(h)), 0.2, 1.5)
        h = torch.maximum(h, h.abs() * 0.5 - 0.1).repeat(1, 2)
        logits = self.head(h)
        return logits, F.cross_entropy(logits, y)


class CNN(torch.nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1, groups=2)
        self.head = torch.nn.Linear(16, classes)

    def forward(self, x, y):
        h = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        h = F.relu(self.conv2(h))
        h = F.avg_pool2d(h, 3, stride=1, padding=1)
        logits = self.head(F.adaptive_avg_pool2d(h, 1).flatten(1))
        return logits, F.cross_entropy(logits, y)


def batch(data, step, B):
    n = data["x"].shape[0]
    rows = [(step * B + j) % n for j in range(B)]
    return torch.from_numpy(data["x"][rows]), torch.from_numpy(data["y"][rows])


def train(init_model, make_opt, data, B, steps):
    model = copy.deepcopy(init_model)
    opt = make_opt(model.parameters())
    losses = []
    for i in range(steps):
        x, y = batch(data, i, B)
        opt.zero_grad(set_to_none=True)
        _, loss = model(x, y)
        loss.backward()
        opt.step()
        losses.append(float(loss.item()))
    return losses


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", choices=("mlp", "mlp-acts", "cnn"), default="mlp")
    ap.add_argument("--samples", type=int, default=64)
    ap.add_argument("--features", type=int, default=16)
    ap.add_argument("--hidden", type=int, default=32)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--sgd-lr", type=float, default=0.1)
    ap.add_argument("--adamw-lr", type=float, default=3e-3)
    ap.add_argument("--adamw-weight-decay", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(args.seed)
    N, Fe, H, C, B = args.samples, args.features, args.hidden, args.classes, args.batch

    # Samples labelled by a random linear teacher, so that the loss falls.
    gen = np.random.default_rng(args.seed)
    shape = (N, 3, 8, 8) if args.model == "cnn" else (N, Fe)
    x = gen.standard_normal(shape).astype(np.float32)
    flat = x.reshape(N, -1).astype(np.float64)
    teacher = gen.standard_normal((flat.shape[1], C))
    y = np.argmax(flat @ teacher, axis=1).astype(np.int64)
    data = collections.OrderedDict(x=x, y=y)
    os.makedirs(args.out, exist_ok=True)
    gpt_export.write_safetensors(os.path.join(args.out, "data.safetensors"), data,
                                 {"format": "samples", "rule": "row j of step s: sample (s*B+j) mod N"})

    model = {"mlp": lambda: Classifier(Fe, H, C), "mlp-acts": lambda: ActsClassifier(Fe, H, C),
             "cnn": lambda: CNN(C)}[args.model]()
    model.train()
    init = collections.OrderedDict((k, v.detach().numpy().copy())
                                   for k, v in model.state_dict().items()
                                   if v.dtype.is_floating_point)
    gpt_export.write_safetensors(os.path.join(args.out, "init.safetensors"), init, {"format": "pt"})

    x0, y0 = batch(data, 0, B)
    path = os.path.join(args.out, "model.onnx")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
        torch.onnx.export(model, (x0, y0), path, opset_version=gpt_export.OPSET,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                          input_names=["x", "y"], output_names=["logits", "loss"])
    gpt_export.record_parameters(path, [n for n, _ in model.named_parameters()])

    model.zero_grad(set_to_none=True)
    _, loss = model(x0, y0)
    loss.backward()
    grads = collections.OrderedDict((n, p.grad.numpy().copy()) for n, p in model.named_parameters())
    gpt_export.write_safetensors(os.path.join(args.out, "grads.safetensors"), grads, {"format": "pt"})
    m64 = copy.deepcopy(model).double()
    m64.zero_grad(set_to_none=True)
    _, loss64 = m64(x0.double(), y0)
    loss64.backward()
    grads64 = collections.OrderedDict((n, p.grad.numpy().copy()) for n, p in m64.named_parameters())
    gpt_export.write_safetensors(os.path.join(args.out, "grads_f64.safetensors"), grads64,
                                 {"format": "pt"})

    model.zero_grad(set_to_none=True)
    sgd_cfg = dict(lr=args.sgd_lr, momentum=0.0, weight_decay=0.0)
    adamw_cfg = dict(lr=args.adamw_lr, betas=(0.9, 0.999), eps=1e-8,
                     weight_decay=args.adamw_weight_decay)
    sgd = train(model, lambda ps: torch.optim.SGD(ps, **sgd_cfg), data, B, args.steps)
    adamw = train(model, lambda ps: torch.optim.AdamW(ps, **adamw_cfg), data, B, args.steps)

    # The float32 bound (test/E2E/fp32_bound.py). MLP: reductions of at most
    # N = max(B, F, H, C) terms; D = 2 L + 6 in sequence for L = 3 Linear
    # layers (one reduction each forward and one backward; the softmax's
    # max and sum, the mean over the batch, and their backward). CNN: N =
    # B H W = 512 (a weight gradient sums over the batch's pixels, batch
    # norm's statistics too); D = 2 (3 + 2 + 2 + 3) = 20: the two convs
    # and the head, batch norm's mean and variance, the two average pools,
    # the loss's three, forward and backward.
    if args.model != "cnn":  # the activations add no reduction
        reductions = {"N": max(B, Fe, H, C), "D": 2 * 3 + 6}
    else:
        reductions = {"N": max(B * 8 * 8, 8 * 9, C), "D": 2 * (3 + 2 + 2 + 3)}
    config = {"model": args.model, "samples": N, "features": Fe, "hidden": H, "classes": C,
              "batch": B, "reductions": reductions}
    ref = collections.OrderedDict()
    ref["config"] = config
    ref["init_loss"] = float(loss.item())
    ref["init_loss_f64"] = float(loss64.item())
    ref["sgd"] = {**sgd_cfg, "steps": args.steps, "losses": sgd}
    ref["adamw"] = {**{k: (list(v) if isinstance(v, tuple) else v) for k, v in adamw_cfg.items()},
                    "steps": args.steps, "losses": adamw}
    with open(os.path.join(args.out, "reference.json"), "w") as f:
        f.write(gpt_export.dumps_compact(ref) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
