"""The PyTorch recipe's sin whose backward is itself a Triton kernel (the recipe's ``mysin`` calling ``mycos`` in its
backward): ``grad * cos(x)`` in a plain ``@triton.jit`` kernel, which every style runs in its backward (the launcher
directly, ``triton_op`` and ``custom_op`` as a second op, ``harness::sin_triton_backward_<style>_backward``)."""

import math

import torch
import triton
import triton.language as tl

from harness.case import Case

MAX_BLOCK = 1024


@triton.jit
def sin_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr, EVEN: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    if EVEN:
        tl.store(out_ptr + offsets, tl.sin(tl.load(x_ptr + offsets)))
    else:
        mask = offsets < n_elements
        tl.store(out_ptr + offsets, tl.sin(tl.load(x_ptr + offsets, mask=mask)), mask=mask)


@triton.jit
def cos_backward_kernel(x_ptr, grad_ptr, grad_x_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    grad = tl.load(grad_ptr + offsets, mask=mask)
    tl.store(grad_x_ptr + offsets, grad * tl.cos(x), mask=mask)


def launch(kernel, x, **meta):
    out = torch.empty_like(x)
    n_elements = out.numel()
    kernel[lambda m: (triton.cdiv(n_elements, m["BLOCK_SIZE"]),)](x, out, n_elements, **meta)
    return out


def launch_backward(kernel, inputs, out, grad):
    (x,) = inputs
    grad_x = torch.empty_like(x)
    n_elements = x.numel()
    kernel[(triton.cdiv(n_elements, 256),)](x, grad.contiguous(), grad_x, n_elements, BLOCK_SIZE=256)
    return (grad_x,)


def make_inputs(size, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(size, generator=gen).to(device),)


CASE = Case(
    id="sin_triton_backward",
    kernel=sin_kernel,
    launch=launch,
    reference=torch.sin,
    make_inputs=make_inputs,
    backward=lambda inputs, out, grad: (grad * inputs[0].cos(),),
    backward_kernel=cos_backward_kernel,
    launch_backward=launch_backward,
    flops=lambda x: math.prod(x),
    arg_names=("x",),
    bytes_moved=lambda x: 2 * x.numel() * x.element_size(),  # read x, write out
    sizes=(3001, 1000, 5003),
    bandwidth_size=1 << 24,  # 16M floats: 128 MiB moved per call
    meta={"BLOCK_SIZE": 256, "EVEN": False},
    configs=[triton.Config({"BLOCK_SIZE": 256}, num_warps=4), triton.Config({"BLOCK_SIZE": 512}, num_warps=4)],
    key=["n_elements"],
    heuristics={"EVEN": lambda args: args["n_elements"] % MAX_BLOCK == 0},  # no tail, whatever the config
    config_heuristics={"EVEN": lambda args: args["n_elements"] % args["BLOCK_SIZE"] == 0},  # the picked config
)
