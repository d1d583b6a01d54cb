"""flash-linear-attention's ``fla.modules.RMSNorm`` as a model holds it (an ``nn.Module`` with a bfloat16 weight,
``eps=1e-6``; its forward is the ``LayerNormFunction`` of fla's Triton kernels), against the RMSNorm it replaces in
PyTorch ops (the inverse RMS and the weight in float32, cast back), in bfloat16."""

import functools

import torch
from fla.modules import RMSNorm

from harness.case import Case

HIDDEN = 256  # the normalized width
EPS = 1e-6


def randn(*shape, generator, device, dtype=torch.float32, scale=1.0):
    """Seeded normal values, drawn in float32 on CPU, then moved (the same numbers on every device)."""
    return (scale * torch.randn(*shape, generator=generator)).to(device=device, dtype=dtype)


def rms_norm(x, weight):
    """RMSNorm in PyTorch ops; ``weight`` is the module's parameter."""
    hidden = x.to(torch.float32)
    hidden = hidden * torch.rsqrt(hidden.pow(2).mean(-1, keepdim=True) + EPS)
    return (hidden * weight.to(torch.float32)).to(x.dtype)


def make_inputs(batch, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return (randn(batch, 17, HIDDEN, generator=gen, device=device, dtype=torch.bfloat16),)


CASE = Case(
    id="fla_rms_norm",
    shipped_module=functools.partial(RMSNorm, HIDDEN, eps=EPS, dtype=torch.bfloat16),
    reference=rms_norm,
    make_inputs=make_inputs,
    arg_names=("x",),
    sizes=(3, 1, 8),
    dtype=torch.bfloat16,
)
