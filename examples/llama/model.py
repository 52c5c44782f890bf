#!/usr/bin/python3
"""A small Llama-style decoder in PyTorch, written the way open Llama code is.

RMSNorm (``x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight``),
rotary position embeddings with Hugging Face's ``rotate_half`` (cos/sin tables
computed in ``forward`` from ``torch.outer`` of positions and inverse
frequencies), grouped-query attention (``repeat_kv``: fewer key/value heads
than query heads), a SwiGLU MLP with ``F.silu``, no biases, and an untied
output head. ``forward(idx, targets) -> (logits, loss)`` like examples/gpt.

Parameter names follow Meta's reference code::

    tok_embeddings.weight                 [vocab, width]
    layers.{i}.attention_norm.weight      [width]
    layers.{i}.attention.wq.weight        [heads*head_dim, width]
    layers.{i}.attention.wk.weight        [kv_heads*head_dim, width]
    layers.{i}.attention.wv.weight        [kv_heads*head_dim, width]
    layers.{i}.attention.wo.weight        [width, heads*head_dim]
    layers.{i}.ffn_norm.weight            [width]
    layers.{i}.feed_forward.w1.weight     [hidden, width]   gate
    layers.{i}.feed_forward.w3.weight     [hidden, width]   up
    layers.{i}.feed_forward.w2.weight     [width, hidden]   down
    norm.weight                           [width]
    output.weight                         [vocab, width]
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class LlamaConfig:
    layers: int = 2
    heads: int = 4           # query heads
    kv_heads: int = 2        # key/value heads (grouped-query attention)
    width: int = 32
    hidden: int = 64         # SwiGLU hidden size
    context: int = 32        # T of the export
    vocab: int = 84
    batch: int = 4           # B of the export
    norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    init_std: float = 0.02   # std of the matrices' normal init (output projections / sqrt(2 layers))
    ignore_index: int = -1
    arch: str = "llama"

    def __post_init__(self) -> None:
        if self.width % self.heads:
            raise ValueError(f"width {self.width} is not divisible by heads {self.heads}")
        if self.heads % self.kv_heads:
            raise ValueError(f"heads {self.heads} is not a multiple of kv_heads {self.kv_heads}")
        if (self.width // self.heads) % 2:
            raise ValueError("the head dimension must be even (rotary embedding)")

    def to_dict(self) -> dict:
        return asdict(self)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    x1 = x[..., :half]
    x2 = x[..., half:]
    return torch.cat((-x2, x1), dim=-1)


def rope_tables(T: int, head_dim: int, theta: float):
    """cos, sin of shape [T, head_dim] (the two halves repeat the frequencies)."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2).float() / head_dim))
    t = torch.arange(T).float()
    freqs = torch.outer(t, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    b, h, s, d = (int(v) for v in x.shape)
    if n_rep == 1:
        return x
    return x[:, :, None, :, :].expand(b, h, n_rep, s, d).reshape(b, h * n_rep, s, d)


class Attention(nn.Module):
    def __init__(self, cfg: LlamaConfig) -> None:
        super().__init__()
        self.heads, self.kv_heads = cfg.heads, cfg.kv_heads
        self.head_dim = cfg.width // cfg.heads
        self.theta = cfg.rope_theta
        self.wq = nn.Linear(cfg.width, cfg.heads * self.head_dim, bias=False)
        self.wk = nn.Linear(cfg.width, cfg.kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(cfg.width, cfg.kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(cfg.heads * self.head_dim, cfg.width, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = (int(s) for s in x.shape)
        H, KV, D = self.heads, self.kv_heads, self.head_dim
        q = self.wq(x).view(B, T, H, D).transpose(1, 2)
        k = self.wk(x).view(B, T, KV, D).transpose(1, 2)
        v = self.wv(x).view(B, T, KV, D).transpose(1, 2)
        cos, sin = rope_tables(T, D, self.theta)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = repeat_kv(k, H // KV)
        v = repeat_kv(v, H // KV)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(D)
        mask = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
        scores = F.softmax(scores + mask, dim=-1)
        y = torch.matmul(scores, v).transpose(1, 2).reshape(B, T, H * D)
        return self.wo(y)


class FeedForward(nn.Module):
    def __init__(self, cfg: LlamaConfig) -> None:
        super().__init__()
        self.w1 = nn.Linear(cfg.width, cfg.hidden, bias=False)
        self.w2 = nn.Linear(cfg.hidden, cfg.width, bias=False)
        self.w3 = nn.Linear(cfg.width, cfg.hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, cfg: LlamaConfig) -> None:
        super().__init__()
        self.attention_norm = RMSNorm(cfg.width, cfg.norm_eps)
        self.attention = Attention(cfg)
        self.ffn_norm = RMSNorm(cfg.width, cfg.norm_eps)
        self.feed_forward = FeedForward(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x + self.attention(self.attention_norm(x))
        return h + self.feed_forward(self.ffn_norm(h))


class Llama(nn.Module):
    def __init__(self, cfg: LlamaConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.tok_embeddings = nn.Embedding(cfg.vocab, cfg.width)
        self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
        self.norm = RMSNorm(cfg.width, cfg.norm_eps)
        self.output = nn.Linear(cfg.width, cfg.vocab, bias=False)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                std = cfg.init_std
                if name.endswith(("wo.weight", "w2.weight")):
                    std /= math.sqrt(2 * cfg.layers)
                nn.init.normal_(p, mean=0.0, std=std)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        h = self.tok_embeddings(idx)
        for layer in self.layers:
            h = layer(h)
        logits = self.output(self.norm(h))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                                   ignore_index=self.cfg.ignore_index)
        return logits, loss
