"""Liger's RMSNorm as Llama uses it: ``LigerRMSNormFunction.apply(x, weight, eps, offset=0.0, casting_mode="llama",
in_place=True)`` (the backward writes dX into dY), against Hugging Face's ``LlamaRMSNorm`` (the inverse RMS in float32,
the weight applied in the input's dtype), in bfloat16."""

import torch
from liger_kernel.ops import LigerRMSNormFunction

from harness.case import Case

HIDDEN = 256  # the normalized and activated width
EPS = 1e-6


def randn(*shape, generator, device, dtype=torch.float32, scale=1.0):
    """Seeded normal values, drawn in float32 on CPU, then moved (the same numbers on every device)."""
    return (scale * torch.randn(*shape, generator=generator)).to(device=device, dtype=dtype)


def llama_rms_norm(x, weight):
    """transformers' LlamaRMSNorm.forward."""
    dtype = x.dtype
    hidden = x.to(torch.float32)
    hidden = hidden * torch.rsqrt(hidden.pow(2).mean(-1, keepdim=True) + EPS)
    return weight * hidden.to(dtype)


def make_inputs(batch, device, seed):
    gen = torch.Generator().manual_seed(seed)
    x = randn(batch, 17, HIDDEN, generator=gen, device=device, dtype=torch.bfloat16)
    weight = 1 + randn(HIDDEN, generator=gen, device=device, dtype=torch.bfloat16, scale=0.1)
    return x, weight


CASE = Case(
    id="liger_rms_norm",
    shipped=LigerRMSNormFunction.apply,
    shipped_args=(EPS, 0.0, "llama", True),
    reference=llama_rms_norm,
    make_inputs=make_inputs,
    arg_names=("x", "weight"),
    sizes=(3, 1, 8),
    dtype=torch.bfloat16,
    dynamic_dims=((0,), ()),
)
