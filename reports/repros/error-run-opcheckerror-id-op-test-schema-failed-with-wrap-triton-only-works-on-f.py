"""rmsnorm-triton_op_heuristics_autotune-opcheck: a reproducer written by triton-torch-matrix.

The harness recorded: error at run: OpCheckError: opcheck(op, ...): test_schema failed with wrap_triton only works on functions annotated with triton.jit or triton.autotune (scroll up for stack trace)
Measured on NVIDIA H100 80GB HBM3, torch 2.11.0+cu130, triton 3.6.0.
The same failure in 8 more cell(s): add-triton_op_heuristics_autotune-opcheck, sin-triton_op_heuristics_autotune-opcheck, silu-triton_op_heuristics_autotune-opcheck, softmax-triton_op_heuristics_autotune-opcheck, matmul-triton_op_heuristics_autotune-opcheck, add_inplace-triton_op_heuristics_autotune-opcheck, layernorm-triton_op_heuristics_autotune-opcheck, sin_triton_backward-triton_op_heuristics_autotune-opcheck.

Run it with python: it raises while the failure is there (exit 1) and prints "no failure" once it is fixed.
It needs torch, triton and the case's own imports; no code of the harness is in it.
"""

import os

import subprocess
import sys
import tempfile
import time

import torch
import torch.utils.flop_counter
import triton

# ---- the case: cases.rmsnorm (its kernel, launch and PyTorch reference) ----

import types

Case = types.SimpleNamespace  # the harness's case container: here just the case's own fields

"""RMSNorm as Liger-Kernel writes it: a float ``eps`` argument, two outputs (the normalized rows, and ``rstd``, the
reciprocal RMS of each row, which the backward reuses), and a backward that is a Triton kernel too. The forward
runs one program per row; the backward one program per block of rows, each writing its partial ``dweight`` row,
summed after it. Rows x 1000 columns (not a power of two: the row's block is masked); the size is the rows.

Both outputs are differentiable: the backward kernel takes the grad of ``rstd`` as well as the grad of ``y``."""

import math

import torch
import triton
import triton.language as tl


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
    arg_names=("x", "weight", "eps"),
    arg_types={"eps": float},
    outputs=2,
    sizes=(67, 13, 129),
    meta={"EVEN": False},
    configs=[triton.Config({}, num_warps=4), triton.Config({}, num_warps=8)],
    key=["n_cols"],
    # BLOCK_SIZE is a launch argument and the configs set num_warps only: no heuristic reads a config value
    heuristics={"EVEN": lambda args: args["n_cols"] == args["BLOCK_SIZE"]},
    dynamic_dims=((0,), (), ()),  # the size is the rows of x; weight is (1000,), eps a float
)


# ---- the style: triton_op_heuristics_autotune (@triton.heuristics over @triton.autotune kernel in a triton_op) ----

kernel = triton.heuristics(CASE.heuristics)(triton.autotune(configs=CASE.configs, key=['n_cols'])(CASE.kernel))
META = {}


@torch.library.triton_op('mylib::rmsnorm_triton_op_heuristics_autotune', mutates_args=())
def rmsnorm_triton_op_heuristics_autotune(x: torch.Tensor, weight: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    return CASE.launch(torch.library.wrap_triton(kernel), x, weight, eps, **META)


rmsnorm_triton_op_heuristics_autotune.register_kernel('cpu')(CASE.reference)


torch.utils.flop_counter.register_flop_formula(torch.ops.mylib.rmsnorm_triton_op_heuristics_autotune)(
    lambda *shapes, out_shape=None, **kwargs: CASE.flops(*shapes)
)


class Model(torch.nn.Module):
    def forward(self, x, weight, eps):
        return torch.ops.mylib.rmsnorm_triton_op_heuristics_autotune(x, weight, eps)


class Reference(torch.nn.Module):
    def forward(self, x, weight, eps):
        return CASE.reference(x, weight, eps)


# ---- the path: opcheck ----

DEVICE, SIZE, SEED = 'cuda', 67, 0  # the input the cell failed on
ATOL, RTOL = 1e-05, 1e-05  # the tolerance for float32
TAKES_GRAD = (True, True, False)  # which arguments are differentiated
SIZES, OTHER_SIZES = (67, 13, 129), (13, 129)


def copy_tensor(t):  # a copy with the same strides: a strided view stays strided
    t = t.detach()
    if 0 in t.stride() or t.is_contiguous():
        return t.clone()
    return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device).copy_(t)


def copy(inputs):
    return tuple(copy_tensor(v) if isinstance(v, torch.Tensor) else v for v in inputs)


def build(make):  # seeded: the model and its reference get the same parameters
    torch.manual_seed(0)
    return make().to(DEVICE)


def inputs_of(size=SIZE, seed=SEED):
    return CASE.make_inputs(size, DEVICE, seed)


def expected(inputs):
    with torch.no_grad():
        return build(Reference)(*copy(inputs))


def compare(what, actual, expected):
    try:
        torch.testing.assert_close(actual, expected, atol=ATOL, rtol=RTOL)
    except AssertionError as error:
        raise AssertionError(f"wrong numbers: {what}: {error}") from None


def synchronize():  # a GPU fault of the kernel surfaces here, right after the call that caused it
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def infer(what, run, inputs):  # every call compared: the same inputs twice
    for call in (1, 2):
        with torch.no_grad():
            out = run(*copy(inputs))
        synchronize()
        compare(f"{what}, call {call}", out, expected(inputs))


def check():
    inputs = tuple(v.detach().requires_grad_(TAKES_GRAD[i] and True) if isinstance(v, torch.Tensor)
                   else v for i, v in enumerate(inputs_of()))
    torch.library.opcheck(torch.ops.mylib.rmsnorm_triton_op_heuristics_autotune, tuple(inputs))


if __name__ == "__main__":
    try:
        check()
    finally:  # a GPU fault left behind surfaces here, as at the end of a cell
        synchronize()
    print("no failure: rmsnorm-triton_op_heuristics_autotune-opcheck passes here")
