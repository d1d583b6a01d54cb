"""FlagGems' ``flag_gems.ops.softmax(x, -1)`` (a forward function: no autograd of its own), against
``torch.softmax(x, -1)``, in float32. ``import flag_gems`` needs a GPU, so the op imports it at its first call."""

import torch

from harness.case import Case

WIDTH = 1000  # the softmax width, not a block multiple


def randn(*shape, generator, device, dtype=torch.float32, scale=1.0):
    """Seeded normal values, drawn in float32 on CPU, then moved (the same numbers on every device)."""
    return (scale * torch.randn(*shape, generator=generator)).to(device=device, dtype=dtype)


def gems_softmax(x):
    """``flag_gems.ops.softmax(x, -1)``."""
    from flag_gems.ops import softmax

    return softmax(x, -1)


def softmax(x):
    return torch.softmax(x, -1)


def make_inputs(batch, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return (randn(batch, 17, WIDTH, generator=gen, device=device, scale=3.0),)


CASE = Case(
    id="flaggems_softmax",
    shipped=gems_softmax,
    shipped_as="function flag_gems.ops.softmax",
    reference=softmax,
    make_inputs=make_inputs,
    arg_names=("x",),
    sizes=(3, 1, 8),
)
