"""Dropout with its keep mask, as the Triton tutorial's seeded dropout would ship it, made checkable: the uniform
noise is an input (``noise``, which takes no gradient: ``no_grad``), so PyTorch can give the same mask. Shows the
Case API's optional fields:

- a non-float output (the ``bool`` keep mask), compared exactly and never differentiated;
- an input declared as taking no gradient (``no_grad``), whose gradient no backward has to give;
- no ``backward``: the styles' backward is autograd of the reference;
- no ``flops``: dropout has no meaningful flop count, so the ``flop_counter`` cells are skips saying so.
"""

import torch
import triton
import triton.language as tl

from harness.case import Case


@triton.jit
def dropout_kernel(x_ptr, noise_ptr, out_ptr, keep_ptr, n_elements, p, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    keep = tl.load(noise_ptr + offsets, mask=mask) > p
    tl.store(out_ptr + offsets, tl.where(keep, x / (1 - p), 0.0), mask=mask)
    tl.store(keep_ptr + offsets, keep, mask=mask)


def launch(kernel, x, noise, p, **meta):
    out, keep = torch.empty_like(x), torch.empty(x.shape, dtype=torch.bool, device=x.device)
    n_elements = x.numel()
    kernel[lambda m: (triton.cdiv(n_elements, m["BLOCK_SIZE"]),)](x, noise, out, keep, n_elements, p, **meta)
    return out, keep


def dropout(x, noise, p):
    keep = noise > p
    return torch.where(keep, x / (1 - p), 0.0), keep


def make_inputs(size, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(size, generator=gen).to(device), torch.rand(size, generator=gen).to(device), 0.25


CASE = Case(
    id="dropout_mask",
    kernel=dropout_kernel,
    launch=launch,
    reference=dropout,
    make_inputs=make_inputs,
    arg_names=("x", "noise", "p"),
    arg_types={"p": float},
    no_grad=("noise",),
    outputs=2,
    sizes=(3001, 1000, 5003),
    meta={"BLOCK_SIZE": 256},
    configs=[triton.Config({"BLOCK_SIZE": 256}, num_warps=4), triton.Config({"BLOCK_SIZE": 1024}, num_warps=8)],
    key=["n_elements"],
)
