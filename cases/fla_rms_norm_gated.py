"""flash-linear-attention's ``fla.modules.FusedRMSNormGated`` as Gated DeltaNet's output norm holds it (per head,
``eps=1e-6``, swish gate: ``rms_norm(o) * weight * silu(g)`` in one kernel, ``LayerNormGatedFunction``), against
the same in PyTorch ops, in float32."""

import functools

import torch
from fla.modules import FusedRMSNormGated

from harness.case import Case

HEADS = 4
HEAD_DIM = 128  # the normalized width
EPS = 1e-6


def randn(*shape, generator, device, dtype=torch.float32, scale=1.0):
    """Seeded normal values, drawn in float32 on CPU, then moved (the same numbers on every device)."""
    return (scale * torch.randn(*shape, generator=generator)).to(device=device, dtype=dtype)


def rms_norm_gated(o, g, weight):
    """The gated RMSNorm in PyTorch ops; ``weight`` is the module's parameter."""
    normed = o * torch.rsqrt(o.pow(2).mean(-1, keepdim=True) + EPS)
    return normed * weight * torch.nn.functional.silu(g)


def make_inputs(batch, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return tuple(randn(batch, 17, HEADS, HEAD_DIM, generator=gen, device=device) for _ in range(2))


CASE = Case(
    id="fla_rms_norm_gated",
    shipped_module=functools.partial(FusedRMSNormGated, HEAD_DIM, eps=EPS),
    reference=rms_norm_gated,
    make_inputs=make_inputs,
    arg_names=("o", "g"),
    sizes=(3, 1, 8),
)
