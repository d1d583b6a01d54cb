"""FlagGems' ``flag_gems.silu_and_mul(gate, up)`` (the fused SwiGLU activation, ``SiluAndMul`` autograd.Function),
against ``silu(gate) * up``, in bfloat16. ``import flag_gems`` needs a GPU, so the op imports it at its first
call."""

import torch

from harness.case import Case

INTERMEDIATE = 688  # the activated width, not a block multiple


def randn(*shape, generator, device, dtype=torch.float32, scale=1.0):
    """Seeded normal values, drawn in float32 on CPU, then moved (the same numbers on every device)."""
    return (scale * torch.randn(*shape, generator=generator)).to(device=device, dtype=dtype)


def gems_silu_and_mul(gate, up):
    """``flag_gems.silu_and_mul(gate, up)``."""
    from flag_gems import silu_and_mul

    return silu_and_mul(gate, up)


def silu_mul(gate, up):
    return torch.nn.functional.silu(gate) * up


def make_inputs(batch, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return tuple(randn(batch, 17, INTERMEDIATE, generator=gen, device=device, dtype=torch.bfloat16) for _ in range(2))


CASE = Case(
    id="flaggems_silu_and_mul",
    shipped=gems_silu_and_mul,
    shipped_as="function flag_gems.silu_and_mul (autograd.Function SiluAndMul)",
    reference=silu_mul,
    make_inputs=make_inputs,
    arg_names=("gate", "up"),
    sizes=(3, 1, 8),
    dtype=torch.bfloat16,
)
