"""A non-linear in-place op: ``scale_clamp_`` writes ``clamp(x * scale, lo, hi)`` back into ``x``. Its gradient
needs ``x`` as it was before the call (where ``x * scale`` fell inside ``(lo, hi)``), which the kernel overwrote:
``save_mutated=True`` hands the backward that copy, as an ``autograd.Function`` author saves it. Only the launcher
styles train it: ``torch.library`` registers no autograd for an op that writes into its inputs."""

import torch
import triton
import triton.language as tl

from harness.case import Case


@triton.jit
def scale_clamp_kernel(x_ptr, n_elements, scale, lo, hi, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(x_ptr + offsets, tl.minimum(tl.maximum(x * scale, lo), hi), mask=mask)


def launch(kernel, x, scale, lo, hi, **meta):
    n_elements = x.numel()
    kernel[lambda m: (triton.cdiv(n_elements, m["BLOCK_SIZE"]),)](x, n_elements, scale, lo, hi, **meta)


def scale_clamp_(x, scale, lo, hi):
    x.mul_(scale).clamp_(lo, hi)


def backward(inputs, output, grad):
    """``inputs``: ``x`` as it was before the call (``save_mutated``), the scalars; ``output``: ``x`` as the call
    left it; ``grad``: its gradient."""
    x, scale, lo, hi = inputs
    scaled = x * scale
    inside = (scaled > lo) & (scaled < hi)
    return grad * scale * inside, None, None, None


def make_inputs(size, device, seed):
    x = torch.randn(size, generator=torch.Generator().manual_seed(seed)).to(device)
    return x, 2.0, -1.0, 1.0


CASE = Case(
    id="scale_clamp",
    kernel=scale_clamp_kernel,
    launch=launch,
    reference=scale_clamp_,
    backward=backward,
    mutates=("x",),
    save_mutated=True,
    make_inputs=make_inputs,
    arg_names=("x", "scale", "lo", "hi"),
    arg_types={"scale": float, "lo": float, "hi": float},
    dynamic_dims=((0,), (), (), ()),
    sizes=(3001, 1000),
    meta={"BLOCK_SIZE": 256},
    configs=[triton.Config({"BLOCK_SIZE": 256}), triton.Config({"BLOCK_SIZE": 1024})],
    key=["n_elements"],
    autotune_options={"restore_value": ["x_ptr"]},  # autotuning runs the kernel repeatedly
)
