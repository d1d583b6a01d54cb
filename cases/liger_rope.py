"""Liger's RoPE on q and k: ``LigerRopeFunction.apply(q, k, cos, sin)`` (what ``liger_rotary_pos_emb`` calls), two
outputs, against Hugging Face's ``apply_rotary_pos_emb`` (Llama's ``rotate_half``, ``unsqueeze_dim=1``), in float32.
The cos/sin caches take no gradient (``no_grad``); q has more heads than k (grouped-query attention)."""

import torch
from liger_kernel.ops import LigerRopeFunction

from harness.case import Case

Q_HEADS, KV_HEADS, SEQ, HEAD_DIM = 4, 2, 16, 64


def randn(*shape, generator, device, dtype=torch.float32, scale=1.0):
    """Seeded normal values, drawn in float32 on CPU, then moved (the same numbers on every device)."""
    return (scale * torch.randn(*shape, generator=generator)).to(device=device, dtype=dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    """transformers' apply_rotary_pos_emb with unsqueeze_dim=1."""
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def make_inputs(batch, device, seed):
    gen = torch.Generator().manual_seed(seed)
    q = randn(batch, Q_HEADS, SEQ, HEAD_DIM, generator=gen, device=device)
    k = randn(batch, KV_HEADS, SEQ, HEAD_DIM, generator=gen, device=device)
    inv_freq = 1.0 / (10000 ** (torch.arange(0, HEAD_DIM, 2, dtype=torch.float32) / HEAD_DIM))
    freqs = torch.outer(torch.arange(SEQ, dtype=torch.float32), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)[None]  # (1, seq, head_dim), as LlamaRotaryEmbedding gives it
    return q, k, emb.cos().to(device), emb.sin().to(device)


CASE = Case(
    id="liger_rope",
    shipped=LigerRopeFunction.apply,
    reference=apply_rotary_pos_emb,
    make_inputs=make_inputs,
    arg_names=("q", "k", "cos", "sin"),
    no_grad=("cos", "sin"),
    outputs=2,
    sizes=(2, 1, 5),
    dynamic_dims=((0,), (0,), (), ()),
)
