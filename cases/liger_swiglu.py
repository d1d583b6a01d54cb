"""Liger's SwiGLU: ``LigerSiLUMulFunction.apply(gate, up)`` (what ``LigerSwiGLUMLP`` calls on the two projections),
against Hugging Face's ``LlamaMLP`` activation ``silu(gate) * up``, in bfloat16."""

import torch
from liger_kernel.ops import LigerSiLUMulFunction

from harness.case import Case

HIDDEN = 256  # the normalized and activated width


def randn(*shape, generator, device, dtype=torch.float32, scale=1.0):
    """Seeded normal values, drawn in float32 on CPU, then moved (the same numbers on every device)."""
    return (scale * torch.randn(*shape, generator=generator)).to(device=device, dtype=dtype)


def silu_mul(gate, up):
    return torch.nn.functional.silu(gate) * up


def make_inputs(batch, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return tuple(randn(batch, 17, 4 * HIDDEN, generator=gen, device=device, dtype=torch.bfloat16) for _ in range(2))


CASE = Case(
    id="liger_swiglu",
    shipped=LigerSiLUMulFunction.apply,
    reference=silu_mul,
    make_inputs=make_inputs,
    arg_names=("gate", "up"),
    sizes=(3, 1, 8),
    dtype=torch.bfloat16,
)
