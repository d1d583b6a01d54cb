"""FlagGems' ``flag_gems.ops.rms_norm(x, [hidden], weight, 1e-6)`` (the ``RmsNorm`` autograd.Function, forward and
backward kernels), against ``torch.nn.functional.rms_norm``, in bfloat16. ``import flag_gems`` needs a GPU, so the
op imports it at its first call."""

import torch

from harness.case import Case

HIDDEN = 1000  # the normalized width, not a block multiple
EPS = 1e-6


def randn(*shape, generator, device, dtype=torch.float32, scale=1.0):
    """Seeded normal values, drawn in float32 on CPU, then moved (the same numbers on every device)."""
    return (scale * torch.randn(*shape, generator=generator)).to(device=device, dtype=dtype)


def gems_rms_norm(x, weight):
    """``flag_gems.ops.rms_norm(x, [hidden], weight, eps)``."""
    from flag_gems.ops import rms_norm

    return rms_norm(x, [HIDDEN], weight, EPS)


def rms_norm(x, weight):
    return torch.nn.functional.rms_norm(x, (HIDDEN,), weight, EPS)


def make_inputs(batch, device, seed):
    gen = torch.Generator().manual_seed(seed)
    x = randn(batch, 17, HIDDEN, generator=gen, device=device, dtype=torch.bfloat16)
    weight = 1 + randn(HIDDEN, generator=gen, device=device, dtype=torch.bfloat16, scale=0.1)
    return x, weight


CASE = Case(
    id="flaggems_rms_norm",
    shipped=gems_rms_norm,
    shipped_as="function flag_gems.ops.rms_norm (autograd.Function RmsNorm)",
    reference=rms_norm,
    make_inputs=make_inputs,
    arg_names=("x", "weight"),
    sizes=(3, 1, 8),
    dtype=torch.bfloat16,
    dynamic_dims=((0,), ()),
)
