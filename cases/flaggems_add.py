"""FlagGems' ``flag_gems.ops.add(x, y)`` (a pointwise kernel FlagGems generates at the first call; a forward function:
no autograd of its own), against ``torch.add``, in float32. ``import flag_gems`` needs a GPU, so the op imports it
at its first call."""

import torch

from harness.case import Case

WIDTH = 1000  # not a block multiple


def randn(*shape, generator, device, dtype=torch.float32, scale=1.0):
    """Seeded normal values, drawn in float32 on CPU, then moved (the same numbers on every device)."""
    return (scale * torch.randn(*shape, generator=generator)).to(device=device, dtype=dtype)


def gems_add(x, y):
    """``flag_gems.ops.add(x, y)``."""
    from flag_gems.ops import add

    return add(x, y)


def add(x, y):
    return torch.add(x, y)


def make_inputs(batch, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return tuple(randn(batch, 17, WIDTH, generator=gen, device=device) for _ in range(2))


CASE = Case(
    id="flaggems_add",
    shipped=gems_add,
    shipped_as="function flag_gems.ops.add",
    reference=add,
    make_inputs=make_inputs,
    arg_names=("x", "y"),
    sizes=(3, 1, 8),
)
