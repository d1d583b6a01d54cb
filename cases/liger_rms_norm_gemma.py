"""Liger's RMSNorm as Gemma uses it: ``casting_mode="gemma"`` (everything in float32, cast back at the end),
``offset=1.0`` (the weight is ``1 + w``) and ``in_place=False`` (Liger's choice where the residual still needs dY),
against Hugging Face's ``GemmaRMSNorm``, in bfloat16."""

import torch
from liger_kernel.ops import LigerRMSNormFunction

from harness.case import Case

HIDDEN = 256  # the normalized and activated width
EPS = 1e-6


def randn(*shape, generator, device, dtype=torch.float32, scale=1.0):
    """Seeded normal values, drawn in float32 on CPU, then moved (the same numbers on every device)."""
    return (scale * torch.randn(*shape, generator=generator)).to(device=device, dtype=dtype)


def gemma_rms_norm(x, weight):
    """transformers' GemmaRMSNorm.forward."""
    hidden = x.float()
    output = hidden * torch.rsqrt(hidden.pow(2).mean(-1, keepdim=True) + EPS)
    return (output * (1.0 + weight.float())).type_as(x)


def make_inputs(batch, device, seed):
    gen = torch.Generator().manual_seed(seed)
    x = randn(batch, 17, HIDDEN, generator=gen, device=device, dtype=torch.bfloat16)
    weight = randn(HIDDEN, generator=gen, device=device, dtype=torch.bfloat16, scale=0.1)
    return x, weight


CASE = Case(
    id="liger_rms_norm_gemma",
    shipped=LigerRMSNormFunction.apply,
    shipped_args=(EPS, 1.0, "gemma", False),
    reference=gemma_rms_norm,
    make_inputs=make_inputs,
    arg_names=("x", "weight"),
    sizes=(3, 1, 8),
    dtype=torch.bfloat16,
    dynamic_dims=((0,), ()),
)
