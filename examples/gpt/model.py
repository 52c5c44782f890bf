#!/usr/bin/python3
"""Tessera's example GPT: a small pre-LN decoder-only transformer in PyTorch.

The model is written so that ``torch.onnx.export`` (torch 1.13, opset 17, training
mode, no constant folding) produces a graph that

* keeps every parameter under its ``state_dict`` name (the output head is tied to
  the token embedding by calling ``F.linear(x, wte.weight)``, so the tied weight is
  ONE tensor, ``transformer.wte.weight``);
* has static shapes everywhere (sizes are read as Python ints, never as traced
  tensors, so no Shape/Gather/Concat chains appear);
* uses only a small set of ONNX ops (see README.md): the causal mask is a constant
  computed once in ``__init__`` (no Trilu), GELU is written with ``erf`` or ``tanh``
  (opset 17 has no Gelu op), and the loss is ``F.cross_entropy`` (exported as
  SoftmaxCrossEntropyLoss).

Parameter names follow nanoGPT::

    transformer.wte.weight                  [vocab, width]   token embedding (tied head)
    transformer.wpe.weight                  [context, width] position embedding
    transformer.h.{i}.ln_1.{weight,bias}    [width]
    transformer.h.{i}.attn.c_attn.weight    [3*width, width] (+ .bias [3*width])
    transformer.h.{i}.attn.c_proj.weight    [width, width]   (+ .bias [width])
    transformer.h.{i}.ln_2.{weight,bias}    [width]
    transformer.h.{i}.mlp.c_fc.weight       [4*width, width] (+ .bias [4*width])
    transformer.h.{i}.mlp.c_proj.weight     [width, 4*width] (+ .bias [width])
    transformer.ln_f.{weight,bias}          [width]

Linear weights are stored as PyTorch stores them: ``[out_features, in_features]``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class GPTConfig:
    """Hyper-parameters of the model (and the batch size the export is traced with)."""

    layers: int = 2          # number of transformer blocks
    heads: int = 2           # attention heads per block
    width: int = 32          # embedding width (n_embd); must be divisible by heads
    context: int = 32        # maximum sequence length (block size) = T of the export
    vocab: int = 84          # vocabulary size
    batch: int = 4           # B of the exported graph (not used by the model itself)
    dropout: float = 0.0     # dropout probability; 0.0 removes every Dropout op
    bias: bool = True        # biases in Linear layers (LayerNorm always has them)
    gelu: str = "erf"        # "erf" (exact GELU) or "tanh" (tanh approximation)
    ln_eps: float = 1e-5     # LayerNorm epsilon
    ignore_index: int = -1   # target id ignored by the loss

    def __post_init__(self) -> None:
        if self.width % self.heads != 0:
            raise ValueError(f"width {self.width} is not divisible by heads {self.heads}")
        if self.gelu not in ("erf", "tanh"):
            raise ValueError(f"gelu must be 'erf' or 'tanh', not {self.gelu!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), not {self.dropout}")

    def to_dict(self) -> dict:
        return asdict(self)


def _dropout(p: float) -> nn.Module:
    """A Dropout module, or Identity (nothing in the graph) when p == 0."""
    return nn.Dropout(p) if p > 0.0 else nn.Identity()


def gelu(x: torch.Tensor, approximate: str) -> torch.Tensor:
    """GELU written out with elementary ops, identical to ``F.gelu``.

    ``erf``:  0.5 * x * (1 + erf(x / sqrt(2)))
    ``tanh``: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))

    ``F.gelu`` itself exports to the same ops at opset 17; writing it out keeps the
    exported form independent of the exporter's version.
    """
    if approximate == "tanh":
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention with one fused q/k/v projection."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.heads = cfg.heads
        self.head_dim = cfg.width // cfg.heads
        self.c_attn = nn.Linear(cfg.width, 3 * cfg.width, bias=cfg.bias)
        self.c_proj = nn.Linear(cfg.width, cfg.width, bias=cfg.bias)
        self.attn_dropout = _dropout(cfg.dropout)
        self.resid_dropout = _dropout(cfg.dropout)
        # True above the diagonal: position t may not attend to positions > t.
        # A plain attribute (neither parameter nor buffer): it is not part of the
        # state_dict and is exported as one Constant node.
        self._future = torch.triu(torch.ones(cfg.context, cfg.context, dtype=torch.bool), diagonal=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = (int(s) for s in x.shape)
        H, D = self.heads, self.head_dim
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.reshape(B, T, H, D).transpose(1, 2)          # (B, H, T, D)
        k = k.reshape(B, T, H, D).transpose(1, 2)
        v = v.reshape(B, T, H, D).transpose(1, 2)
        att = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(D))  # (B, H, T, T)
        future = self._future if T == self._future.shape[0] else self._future[:T, :T]
        att = att.masked_fill(future, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = torch.matmul(att, v)                            # (B, H, T, D)
        y = y.transpose(1, 2).reshape(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    """Position-wise feed-forward block: width -> 4*width -> GELU -> width."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.c_fc = nn.Linear(cfg.width, 4 * cfg.width, bias=cfg.bias)
        self.c_proj = nn.Linear(4 * cfg.width, cfg.width, bias=cfg.bias)
        self.dropout = _dropout(cfg.dropout)
        self.approximate = cfg.gelu

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(gelu(self.c_fc(x), self.approximate)))


class Block(nn.Module):
    """Pre-LN transformer block: x + attn(ln_1(x)), then x + mlp(ln_2(x))."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.width, eps=cfg.ln_eps)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.width, eps=cfg.ln_eps)
        self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT(nn.Module):
    """Decoder-only transformer with a tied output head.

    ``forward(idx, targets)`` takes int64 token ids ``idx`` and ``targets`` of shape
    ``(B, T)`` with ``T <= context`` and returns ``(logits, loss)``: logits of shape
    ``(B, T, vocab)`` and the mean cross-entropy over all targets that are not
    ``ignore_index``.
    """

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(cfg.vocab, cfg.width),
            wpe=nn.Embedding(cfg.context, cfg.width),
            drop=_dropout(cfg.dropout),
            h=nn.ModuleList([Block(cfg) for _ in range(cfg.layers)]),
            ln_f=nn.LayerNorm(cfg.width, eps=cfg.ln_eps),
        ))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """GPT-2 initialisation: N(0, 0.02) weights, zero biases, unit LayerNorm
        scales, and residual output projections scaled by 1/sqrt(2 * layers).
        Uses the global torch RNG, in module order (seed it first)."""
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
            elif isinstance(module, nn.LayerNorm):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * self.cfg.layers))

    def forward(self, idx: torch.Tensor, targets: torch.Tensor):
        B, T = (int(s) for s in idx.shape)
        if T > self.cfg.context:
            raise ValueError(f"sequence length {T} exceeds the context {self.cfg.context}")
        tr = self.transformer
        # Position embedding: the whole table when T == context, so no Slice is needed.
        pos = tr.wpe.weight if T == self.cfg.context else tr.wpe.weight[:T]
        x = tr.drop(tr.wte(idx) + pos)                      # (B, T, C)
        for block in tr.h:
            x = block(x)
        x = tr.ln_f(x)
        logits = F.linear(x, tr.wte.weight)                 # tied head: (B, T, V)
        loss = F.cross_entropy(logits.reshape(B * T, self.cfg.vocab), targets.reshape(B * T),
                               ignore_index=self.cfg.ignore_index, reduction="mean")
        return logits, loss

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())
