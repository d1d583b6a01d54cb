"""RMSNorm as Liger-Kernel writes it: a float ``eps`` argument, two outputs (the normalized rows, and ``rstd``, the
reciprocal RMS of each row, which the backward reuses), and a backward that is a Triton kernel too. The forward
runs one program per row; the backward one program per block of rows, each writing its partial ``dweight`` row,
summed after it. Rows x 1000 columns (not a power of two: the row's block is masked); the size is the rows.

Both outputs are differentiable: the backward kernel takes the grad of ``rstd`` as well as the grad of ``y``."""

import math

import torch
import triton
import triton.language as tl

from harness.case import Case

N_COLS = 1000
MAX_PROGRAMS = 32  # backward programs: Liger uses the SM count; each one sums the dweight of its rows


@triton.jit
def rmsnorm_kernel(
    x_ptr, x_row_stride, w_ptr, y_ptr, y_row_stride, rstd_ptr, n_cols, eps, BLOCK_SIZE: tl.constexpr, EVEN: tl.constexpr
):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    if EVEN:
        x = tl.load(x_ptr + row * x_row_stride + cols).to(tl.float32)
        w = tl.load(w_ptr + cols).to(tl.float32)
    else:
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(rstd_ptr + row, rstd)
    y = (x * rstd * w).to(y_ptr.dtype.element_ty)
    if EVEN:
        tl.store(y_ptr + row * y_row_stride + cols, y)
    else:
        tl.store(y_ptr + row * y_row_stride + cols, y, mask=cols < n_cols)


@triton.jit
def rmsnorm_backward_kernel(
    grad_y_ptr,
    grad_y_row_stride,
    x_ptr,
    x_row_stride,
    w_ptr,
    rstd_ptr,
    grad_rstd_ptr,
    grad_x_ptr,
    grad_x_row_stride,
    grad_w_partial_ptr,
    n_rows,
    n_cols,
    rows_per_program,
    BLOCK_SIZE: tl.constexpr,
):
    program = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    grad_w = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    first = program * rows_per_program
    for row in range(first, tl.minimum(first + rows_per_program, n_rows)):
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
        grad_y = tl.load(grad_y_ptr + row * grad_y_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
        rstd = tl.load(rstd_ptr + row)
        grad_rstd = tl.load(grad_rstd_ptr + row)
        normed = x * rstd
        grad_normed = grad_y * w
        grad_x = rstd * (grad_normed - normed * (tl.sum(grad_normed * normed, axis=0) / n_cols))
        grad_x -= grad_rstd * rstd * rstd * rstd * x / n_cols  # through rstd: d rstd / dx = -rstd^3 x / n
        tl.store(grad_x_ptr + row * grad_x_row_stride + cols, grad_x.to(grad_x_ptr.dtype.element_ty), mask=mask)
        grad_w += grad_y * normed
    tl.store(grad_w_partial_ptr + program * n_cols + cols, grad_w, mask=mask)


def launch(kernel, x, weight, eps, **meta):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    rstd = torch.empty(n_rows, device=x.device, dtype=torch.float32)
    block = triton.next_power_of_2(n_cols)
    kernel[(n_rows,)](x, x.stride(0), weight, y, y.stride(0), rstd, n_cols, eps, BLOCK_SIZE=block, **meta)
    return y, rstd


def launch_backward(kernel, inputs, outputs, grads):
    x, weight, _ = inputs
    _, rstd = outputs
    grad_y, grad_rstd = (grad.contiguous() for grad in grads)
    n_rows, n_cols = x.shape
    programs = min(n_rows, MAX_PROGRAMS)
    grad_x = torch.empty_like(x)
    grad_w_partial = torch.empty((programs, n_cols), device=x.device, dtype=torch.float32)
    kernel[(programs,)](
        grad_y,
        grad_y.stride(0),
        x,
        x.stride(0),
        weight,
        rstd,
        grad_rstd,
        grad_x,
        grad_x.stride(0),
        grad_w_partial,
        n_rows,
        n_cols,
        triton.cdiv(n_rows, programs),
        BLOCK_SIZE=triton.next_power_of_2(n_cols),
    )
    return grad_x, grad_w_partial.sum(dim=0).to(weight.dtype), None


def reference(x, weight, eps):
    rstd = torch.rsqrt(x.pow(2).mean(dim=-1) + eps)
    return x * rstd[:, None] * weight, rstd


def backward(inputs, outputs, grads):
    x, weight, _ = inputs
    _, rstd = outputs
    grad_y, grad_rstd = grads
    rstd = rstd[:, None]
    normed = x * rstd
    grad_normed = grad_y * weight
    grad_x = rstd * (grad_normed - normed * (grad_normed * normed).mean(dim=-1, keepdim=True))
    grad_x = grad_x - grad_rstd[:, None] * rstd**3 * x / x.shape[-1]
    return grad_x, (grad_y * normed).sum(dim=0), None


def make_inputs(rows, device, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, N_COLS, generator=gen)
    weight = 1 + 0.1 * torch.randn(N_COLS, generator=gen)
    return x.to(device), weight.to(device), 1e-6


CASE = Case(
    id="rmsnorm",
    kernel=rmsnorm_kernel,
    launch=launch,
    reference=reference,
    make_inputs=make_inputs,
    backward=backward,
    backward_kernel=rmsnorm_backward_kernel,
    launch_backward=launch_backward,
    flops=lambda x, weight, eps: 4 * math.prod(x),
    # read x and weight, write y and each row's rstd (float32)
    bytes_moved=lambda x, weight, eps: (2 * x.numel() + weight.numel()) * x.element_size() + 4 * x.shape[0],
    arg_names=("x", "weight", "eps"),
    arg_types={"eps": float},
    outputs=2,
    sizes=(67, 13, 129),
    bandwidth_size=16384,  # rows of 1000 floats: 125 MiB moved per call
    meta={"EVEN": False},
    configs=[triton.Config({}, num_warps=4), triton.Config({}, num_warps=8)],
    key=["n_cols"],
    # BLOCK_SIZE is a launch argument and the configs set num_warps only: no heuristic reads a config value
    heuristics={"EVEN": lambda args: args["n_cols"] == args["BLOCK_SIZE"]},
    dynamic_dims=((0,), (), ()),  # the size is the rows of x; weight is (1000,), eps a float
)
