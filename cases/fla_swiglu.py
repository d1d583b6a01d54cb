"""flash-linear-attention's ``fla.modules.activations.swiglu(gate, up)`` (``SwiGLUFunction.apply``, what fla's
``GatedMLP`` calls on its two projections), against ``silu(gate) * up``, in bfloat16."""

import torch
from fla.modules.activations import swiglu

from harness.case import Case

INTERMEDIATE = 688  # the activated width: a Llama-style 8/3 * 256 rounded, not a block multiple


def randn(*shape, generator, device, dtype=torch.float32, scale=1.0):
    """Seeded normal values, drawn in float32 on CPU, then moved (the same numbers on every device)."""
    return (scale * torch.randn(*shape, generator=generator)).to(device=device, dtype=dtype)


def silu_mul(gate, up):
    return torch.nn.functional.silu(gate) * up


def make_inputs(batch, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return tuple(randn(batch, 17, INTERMEDIATE, generator=gen, device=device, dtype=torch.bfloat16) for _ in range(2))


CASE = Case(
    id="fla_swiglu",
    shipped=swiglu,
    reference=silu_mul,
    make_inputs=make_inputs,
    arg_names=("gate", "up"),
    sizes=(3, 1, 8),
    dtype=torch.bfloat16,
)
