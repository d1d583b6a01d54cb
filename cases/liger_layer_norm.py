"""Liger's LayerNorm: ``LigerLayerNormFunction.apply(x, weight, bias, eps)`` (``LigerLayerNorm``), against
``torch.nn.functional.layer_norm``, in float32."""

import torch
from liger_kernel.ops import LigerLayerNormFunction

from harness.case import Case

HIDDEN = 256  # the normalized and activated width
EPS = 1e-6


def randn(*shape, generator, device, dtype=torch.float32, scale=1.0):
    """Seeded normal values, drawn in float32 on CPU, then moved (the same numbers on every device)."""
    return (scale * torch.randn(*shape, generator=generator)).to(device=device, dtype=dtype)


def layer_norm(x, weight, bias):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, EPS)


def make_inputs(batch, device, seed):
    gen = torch.Generator().manual_seed(seed)
    x = randn(batch, 17, HIDDEN, generator=gen, device=device)
    weight = 1 + randn(HIDDEN, generator=gen, device=device, scale=0.1)
    return x, weight, randn(HIDDEN, generator=gen, device=device, scale=0.1)


CASE = Case(
    id="liger_layer_norm",
    shipped=LigerLayerNormFunction.apply,
    shipped_args=(EPS,),
    reference=layer_norm,
    make_inputs=make_inputs,
    arg_names=("x", "weight", "bias"),
    sizes=(3, 1, 8),
    dynamic_dims=((0,), (), ()),
)
