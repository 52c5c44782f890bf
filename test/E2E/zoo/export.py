#!/usr/bin/python3
"""Models of the E2E zoo, exported with examples/gpt/export.py's code (same
files, options and PyTorch reference):

  --model gpt-mask-buffer     examples/gpt's GPT masking attention as nanoGPT
                              does: a persistent float buffer ``attn.bias``
                              (tril of ones, [1, 1, T, T]) and
                              masked_fill(bias[:, :, :T, :T] == 0, -inf)
  --model gpt-nanogpt         gpt-mask-buffer with nanoGPT's tied head: a
                              bias-free Linear ``lm_head`` whose weight IS
                              ``transformer.wte.weight`` (two state_dict
                              names, one ONNX initializer)
  --model encoder-post-norm   torch.nn.TransformerEncoder as a causal language
  --model encoder-pre-norm    model (post-norm, the default layer, or
                              norm_first=True), its mask from
                              nn.Transformer.generate_square_subsequent_mask
                              built in forward; token and position
                              embeddings, an untied head
  --model llama-rope-buffers  examples/llama's Llama with its cos/sin tables
                              as persistent buffers (``attention.cos_cached``,
                              ``attention.sin_cached``, [context, head_dim])
                              built in __init__ and sliced [:T] in forward

Buffers are in the state_dict and are ONNX initializers like the
parameters; the exporter lists the parameters in the model's metadata
("tessera.parameters"). --no-parameter-list removes that list, as in a model
exported by other code.
"""

import math
import os
import sys
import types

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "..", "..", "examples")
sys.path.insert(0, os.path.join(EXAMPLES, "llama"))
sys.path.insert(0, os.path.join(EXAMPLES, "gpt"))
import export as gpt_export  # noqa: E402  (examples/gpt/export.py)
import model as gpt_model  # noqa: E402
sys.path.insert(0, os.path.join(EXAMPLES, "llama"))
import importlib.util  # noqa: E402

_spec = importlib.util.spec_from_file_location("llama_export", os.path.join(EXAMPLES, "llama", "export.py"))
llama_export = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(llama_export)
llama_model = llama_export.llama


def gpt_buffer_attention(self, x):
    B, T, C = (int(s) for s in x.shape)
    H, D = self.heads, self.head_dim
    q, k, v = self.c_attn(x).split(C, dim=2)
    q = q.reshape(B, T, H, D).transpose(1, 2)
    k = k.reshape(B, T, H, D).transpose(1, 2)
    v = v.reshape(B, T, H, D).transpose(1, 2)
    att = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(D))
    att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
    att = self.attn_dropout(F.softmax(att, dim=-1))
    y = torch.matmul(att, v).transpose(1, 2).reshape(B, T, C)
    return self.resid_dropout(self.c_proj(y))


def llama_buffer_attention(self, x):
    B, T, _ = (int(s) for s in x.shape)
    H, KV, D = self.heads, self.kv_heads, self.head_dim
    q = self.wq(x).view(B, T, H, D).transpose(1, 2)
    k = self.wk(x).view(B, T, KV, D).transpose(1, 2)
    v = self.wv(x).view(B, T, KV, D).transpose(1, 2)
    cos, sin = self.cos_cached[:T], self.sin_cached[:T]
    q = q * cos + llama_model.rotate_half(q) * sin
    k = k * cos + llama_model.rotate_half(k) * sin
    k = llama_model.repeat_kv(k, H // KV)
    v = llama_model.repeat_kv(v, H // KV)
    scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(D)
    mask = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
    scores = F.softmax(scores + mask, dim=-1)
    y = torch.matmul(scores, v).transpose(1, 2).reshape(B, T, H * D)
    return self.wo(y)


def gpt_tied_head_forward(self, idx, targets):
    """examples/gpt's GPT.forward with the head as nanoGPT writes it."""
    B, T = (int(s) for s in idx.shape)
    tr = self.transformer
    pos = tr.wpe.weight if T == self.cfg.context else tr.wpe.weight[:T]
    x = tr.drop(tr.wte(idx) + pos)
    for block in tr.h:
        x = block(x)
    logits = self.lm_head(tr.ln_f(x))
    loss = F.cross_entropy(logits.reshape(B * T, self.cfg.vocab), targets.reshape(B * T),
                           ignore_index=self.cfg.ignore_index, reduction="mean")
    return logits, loss


class EncoderLM(torch.nn.Module):
    """nn.TransformerEncoder under a causal mask, as a language model."""

    def __init__(self, cfg, norm_first):
        super().__init__()
        self.cfg = cfg
        self.wte = torch.nn.Embedding(cfg.vocab, cfg.width)
        self.wpe = torch.nn.Embedding(cfg.context, cfg.width)
        layer = torch.nn.TransformerEncoderLayer(
            cfg.width, cfg.heads, dim_feedforward=4 * cfg.width, dropout=0.0,
            batch_first=True, norm_first=norm_first)
        self.encoder = torch.nn.TransformerEncoder(layer, cfg.layers, enable_nested_tensor=False)
        self.head = torch.nn.Linear(cfg.width, cfg.vocab)

    def forward(self, idx, targets):
        B, T = (int(s) for s in idx.shape)
        mask = torch.nn.Transformer.generate_square_subsequent_mask(T)
        x = self.wte(idx) + self.wpe.weight[:T]
        logits = self.head(self.encoder(x, mask=mask))
        loss = F.cross_entropy(logits.reshape(B * T, self.cfg.vocab), targets.reshape(B * T))
        return logits, loss

    def num_parameters(self):
        return sum(p.numel() for p in self.parameters())


def add_args(ap):
    ap.add_argument("--model", required=True,
                    choices=("gpt-mask-buffer", "gpt-nanogpt", "encoder-post-norm",
                             "encoder-pre-norm", "llama-rope-buffers"))
    ap.add_argument("--no-parameter-list", action="store_true",
                    help="remove the metadata 'tessera.parameters' from the exported model")
    llama_export.add_llama_args(ap)


def make_model(args, vocab):
    if args.model in ("gpt-mask-buffer", "gpt-nanogpt"):
        cfg, construct = gpt_export.make_gpt(args, vocab)

        def build():
            gpt = construct()
            T = cfg.context
            for m in gpt.modules():
                if isinstance(m, gpt_model.CausalSelfAttention):
                    m.register_buffer("bias", torch.tril(torch.ones(T, T)).view(1, 1, T, T))
                    m.forward = types.MethodType(gpt_buffer_attention, m)
            if args.model == "gpt-nanogpt":
                gpt.lm_head = torch.nn.Linear(cfg.width, cfg.vocab, bias=False)
                gpt.lm_head.weight = gpt.transformer.wte.weight  # tied
                gpt.forward = types.MethodType(gpt_tied_head_forward, gpt)
            return gpt
        return cfg, build

    if args.model.startswith("encoder-"):
        cfg, _ = gpt_export.make_gpt(args, vocab)
        return cfg, lambda: EncoderLM(cfg, args.model == "encoder-pre-norm")

    cfg, construct = llama_export.make_llama(args, vocab)

    def build():
        llama = construct()
        for m in llama.modules():
            if isinstance(m, llama_model.Attention):
                cos, sin = llama_model.rope_tables(cfg.context, m.head_dim, m.theta)
                m.register_buffer("cos_cached", cos)
                m.register_buffer("sin_cached", sin)
                m.forward = types.MethodType(llama_buffer_attention, m)
        return llama
    return cfg, build


def main():
    args = gpt_export.parse_args(None, __doc__, add_args)
    rc = gpt_export.main(make_model=make_model, description=__doc__, add_model_args=add_args)
    if rc == 0 and args.no_parameter_list:
        import onnx
        path = os.path.join(args.out, "model.onnx")
        m = onnx.load(path)
        del m.metadata_props[:]
        onnx.save(m, path)
    return rc


if __name__ == "__main__":
    sys.exit(main())
