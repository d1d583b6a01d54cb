"""The simplest form of a user kernel: a fused RMSNorm with its eps fixed in the module, one output, the weight
applied in the kernel, the backward written with PyTorch ops. Run it through every style and path with a matrix
file that lists ``examples.rmsnorm`` under ``cases`` (or ``--cases examples.rmsnorm``). The built-in
``cases/rmsnorm.py`` is the full form: eps a float argument, rstd a second output, a Triton backward kernel."""

import math

import torch
import triton
import triton.language as tl

from harness.case import Case

EPS = 1e-6


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, out_ptr, n_cols, stride, eps, BLOCK_SIZE: tl.constexpr, EVEN: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    if EVEN:
        x = tl.load(x_ptr + row * stride + cols).to(tl.float32)
        w = tl.load(w_ptr + cols).to(tl.float32)
    else:
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    out = x * rstd * w
    if EVEN:
        tl.store(out_ptr + row * stride + cols, out)
    else:
        tl.store(out_ptr + row * stride + cols, out, mask=cols < n_cols)


def launch(kernel, x, weight, **meta):
    out = torch.empty_like(x)
    n_rows, n_cols = x.shape
    kernel[(n_rows,)](x, weight, out, n_cols, x.stride(0), EPS, BLOCK_SIZE=triton.next_power_of_2(n_cols), **meta)
    return out


def reference(x, weight):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + EPS) * weight


def backward(inputs, out, grad):
    x, weight = inputs
    rstd = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + EPS)
    normed = x * rstd
    grad_normed = grad * weight
    grad_x = rstd * (grad_normed - normed * (grad_normed * normed).mean(dim=-1, keepdim=True))
    return grad_x, (grad * normed).sum(dim=0)


def make_inputs(rows, device, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, 1000, generator=gen)
    weight = 1 + 0.1 * torch.randn(1000, generator=gen)
    return x.to(device), weight.to(device)


CASE = Case(
    id="simple_rmsnorm",
    kernel=rmsnorm_kernel,
    launch=launch,
    reference=reference,
    make_inputs=make_inputs,
    backward=backward,
    flops=lambda x, weight: 4 * math.prod(x),
    arg_names=("x", "weight"),
    sizes=(67, 13, 129),
    meta={"EVEN": False},
    configs=[triton.Config({}, num_warps=4), triton.Config({}, num_warps=8)],
    key=["n_cols"],
    # BLOCK_SIZE is a launch argument and the configs set num_warps only: no heuristic reads a config value
    heuristics={"EVEN": lambda args: args["n_cols"] == args["BLOCK_SIZE"]},
    dynamic_dims=((0,), ()),  # the size is the rows of x; weight is (1000,), fixed
)
