"""Row-wise softmax of a 2-D tensor: one program per row, the row in one block."""

import math

import torch
import triton
import triton.language as tl

from harness.case import Case


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK_SIZE: tl.constexpr, EVEN: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    if EVEN:
        x = tl.load(x_ptr + row * stride + cols).to(tl.float32)
    else:
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    out = num / tl.sum(num, axis=0)
    if EVEN:
        tl.store(out_ptr + row * stride + cols, out)
    else:
        tl.store(out_ptr + row * stride + cols, out, mask=cols < n_cols)


def launch(kernel, x, **meta):
    out = torch.empty_like(x)
    n_rows, n_cols = x.shape
    kernel[(n_rows,)](x, out, n_cols, x.stride(0), BLOCK_SIZE=triton.next_power_of_2(n_cols), **meta)
    return out


def backward(inputs, out, grad):
    return (out * (grad - (grad * out).sum(dim=-1, keepdim=True)),)


def make_inputs(rows, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(rows, 781, generator=gen).to(device),)


CASE = Case(
    id="softmax",
    kernel=softmax_kernel,
    launch=launch,
    reference=lambda x: torch.softmax(x, dim=-1),
    make_inputs=make_inputs,
    backward=backward,
    flops=lambda x: 5 * math.prod(x),
    bytes_moved=lambda x: 2 * x.numel() * x.element_size(),  # read x, write out
    arg_names=("x",),
    sizes=(67, 13, 129),
    bandwidth_size=32768,  # rows of 781 floats: 195 MiB moved per call
    meta={"EVEN": False},
    configs=[triton.Config({}, num_warps=4), triton.Config({}, num_warps=8)],
    key=["n_cols"],
    # BLOCK_SIZE is a launch argument and the configs set num_warps only: no heuristic reads a config value
    heuristics={"EVEN": lambda args: args["n_cols"] == args["BLOCK_SIZE"]},
)
