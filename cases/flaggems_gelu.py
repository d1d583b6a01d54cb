"""FlagGems' ``flag_gems.ops.gelu(x)`` (exact, erf; a forward function: no autograd of its own), against
``torch.nn.functional.gelu``, in bfloat16. ``import flag_gems`` needs a GPU, so the op imports it at its first
call."""

import torch

from harness.case import Case

WIDTH = 1000  # not a block multiple


def randn(*shape, generator, device, dtype=torch.float32, scale=1.0):
    """Seeded normal values, drawn in float32 on CPU, then moved (the same numbers on every device)."""
    return (scale * torch.randn(*shape, generator=generator)).to(device=device, dtype=dtype)


def gems_gelu(x):
    """``flag_gems.ops.gelu(x)``."""
    from flag_gems.ops import gelu

    return gelu(x)


def gelu(x):
    return torch.nn.functional.gelu(x)


def make_inputs(batch, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return (randn(batch, 17, WIDTH, generator=gen, device=device, dtype=torch.bfloat16),)


CASE = Case(
    id="flaggems_gelu",
    shipped=gems_gelu,
    shipped_as="function flag_gems.ops.gelu",
    reference=gelu,
    make_inputs=make_inputs,
    arg_names=("x",),
    sizes=(3, 1, 8),
    dtype=torch.bfloat16,
)
