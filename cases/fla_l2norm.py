"""flash-linear-attention's ``fla.modules.l2norm.l2norm(x)`` as Gated DeltaNet calls it on its queries and keys
(``L2NormFunction``: ``x / sqrt(sum(x**2) + 1e-6)`` over the head dim, here 96: a masked block of 128), against the
same in PyTorch ops, in float32."""

import torch
from fla.modules.l2norm import l2norm

from harness.case import Case

HEADS = 4
HEAD_DIM = 96  # the normalized width, not a power of two
EPS = 1e-6  # l2norm's default


def randn(*shape, generator, device, dtype=torch.float32, scale=1.0):
    """Seeded normal values, drawn in float32 on CPU, then moved (the same numbers on every device)."""
    return (scale * torch.randn(*shape, generator=generator)).to(device=device, dtype=dtype)


def l2_normalize(x):
    return x * torch.rsqrt(x.pow(2).sum(-1, keepdim=True) + EPS)


def make_inputs(batch, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return (randn(batch, 17, HEADS, HEAD_DIM, generator=gen, device=device),)


CASE = Case(
    id="fla_l2norm",
    shipped=l2norm,
    reference=l2_normalize,
    make_inputs=make_inputs,
    arg_names=("x",),
    sizes=(3, 1, 8),
)
