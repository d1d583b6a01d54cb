"""The Triton tutorial's fused LayerNorm forward: an optional ``bias`` (``None`` here, so the ``Tensor? bias`` path
is the one measured), a float ``eps``, and three outputs (``y``, and each row's ``mean`` and ``rstd``), each
differentiable; the backward is PyTorch ops. One program per row, looping over it in ``BLOCK_SIZE`` chunks
(an autotune config value). ``x`` is a strided view (rows of 768 columns, 1024 apart): the kernel takes row
strides, and the harness keeps the view's strides. 768 is a multiple of the 256-column config, not of the
1024-column one, so the config heuristic picks the unmasked loop for one config and the masked one for the
other; the size (the rows) is never a block multiple."""

import math

import torch
import triton
import triton.language as tl

from harness.case import Case

N_COLS, ROW_STRIDE = 768, 1024
MAX_BLOCK = 1024  # every block size below divides it


@triton.jit
def layernorm_kernel(
    x_ptr,
    y_ptr,
    w_ptr,
    b_ptr,
    mean_ptr,
    rstd_ptr,
    x_row_stride,
    y_row_stride,
    N,
    eps,
    HAS_BIAS: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    EVEN: tl.constexpr,
):
    row = tl.program_id(axis=0)
    x_ptr += row * x_row_stride
    y_ptr += row * y_row_stride
    total = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for offset in range(0, N, BLOCK_SIZE):
        cols = offset + tl.arange(0, BLOCK_SIZE)
        if EVEN:
            total += tl.load(x_ptr + cols).to(tl.float32)
        else:
            total += tl.load(x_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
    mean = tl.sum(total, axis=0) / N
    squares = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for offset in range(0, N, BLOCK_SIZE):
        cols = offset + tl.arange(0, BLOCK_SIZE)
        if EVEN:
            centered = tl.load(x_ptr + cols).to(tl.float32) - mean
        else:
            x = tl.load(x_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
            centered = tl.where(cols < N, x - mean, 0.0)
        squares += centered * centered
    rstd = 1 / tl.sqrt(tl.sum(squares, axis=0) / N + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    for offset in range(0, N, BLOCK_SIZE):
        cols = offset + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(w_ptr + cols, mask=mask)
        x = tl.load(x_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w
        if HAS_BIAS:
            y += tl.load(b_ptr + cols, mask=mask)
        tl.store(y_ptr + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def launch(kernel, x, weight, bias, eps, **meta):
    n_rows, n_cols = x.shape
    y = torch.empty((n_rows, n_cols), device=x.device, dtype=x.dtype)
    mean = torch.empty(n_rows, device=x.device, dtype=torch.float32)
    rstd = torch.empty(n_rows, device=x.device, dtype=torch.float32)
    has_bias = bias is not None
    kernel[(n_rows,)](
        x,
        y,
        weight,
        bias if has_bias else weight,  # never read without a bias: HAS_BIAS is false
        mean,
        rstd,
        x.stride(0),
        y.stride(0),
        n_cols,
        eps,
        HAS_BIAS=has_bias,
        **meta,
    )
    return y, mean, rstd


def reference(x, weight, bias, eps):
    mean = x.mean(dim=-1)
    centered = x - mean[:, None]
    rstd = torch.rsqrt(centered.pow(2).mean(dim=-1) + eps)
    y = centered * rstd[:, None] * weight
    return (y if bias is None else y + bias), mean, rstd


def backward(inputs, outputs, grads):
    x, weight, bias, _ = inputs
    _, mean, rstd = outputs
    grad_y, grad_mean, grad_rstd = grads
    n = x.shape[-1]
    normed = (x - mean[:, None]) * rstd[:, None]
    grad_normed = grad_y * weight
    grad_x = rstd[:, None] * (
        grad_normed
        - grad_normed.mean(dim=-1, keepdim=True)
        - normed * (grad_normed * normed).mean(dim=-1, keepdim=True)
    )
    # through mean (d mean / dx = 1 / n) and rstd (d rstd / dx = -rstd^2 normed / n)
    grad_x = grad_x + grad_mean[:, None] / n - grad_rstd[:, None] * rstd[:, None] ** 2 * normed / n
    grad_bias = None if bias is None else grad_y.sum(dim=0)
    return grad_x, (grad_y * normed).sum(dim=0), grad_bias, None


def make_inputs(rows, device, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, ROW_STRIDE, generator=gen).to(device)[:, :N_COLS]  # a view: rows ROW_STRIDE apart
    weight = 1 + 0.1 * torch.randn(N_COLS, generator=gen)
    return x, weight.to(device), None, 1e-5


CASE = Case(
    id="layernorm",
    kernel=layernorm_kernel,
    launch=launch,
    reference=reference,
    make_inputs=make_inputs,
    backward=backward,
    flops=lambda x, weight, bias, eps: (6 if bias is None else 7) * math.prod(x),
    # read x (its 768 columns), weight and bias, write y and each row's mean and rstd (float32)
    bytes_moved=lambda x, weight, bias, eps: (
        (2 * x.numel() + weight.numel() + (0 if bias is None else bias.numel())) * x.element_size() + 8 * x.shape[0]
    ),
    arg_names=("x", "weight", "bias", "eps"),
    arg_types={"bias": torch.Tensor | None, "eps": float},
    outputs=3,
    sizes=(67, 13, 129),
    bandwidth_size=32768,  # rows of 768 floats: 192 MiB moved per call
    meta={"BLOCK_SIZE": 256, "EVEN": False},
    configs=[triton.Config({"BLOCK_SIZE": 256}, num_warps=4), triton.Config({"BLOCK_SIZE": 1024}, num_warps=8)],
    key=["N"],
    heuristics={"EVEN": lambda args: args["N"] % MAX_BLOCK == 0},  # no tail, whatever the config
    config_heuristics={"EVEN": lambda args: args["N"] % args["BLOCK_SIZE"] == 0},  # the picked config
    dynamic_dims=((0,), (), (), ()),  # the size is the rows of x; weight is (768,), bias None, eps a float
)
