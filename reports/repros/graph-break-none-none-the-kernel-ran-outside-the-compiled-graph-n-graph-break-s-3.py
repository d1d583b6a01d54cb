"""layernorm-autotune_heuristics-dynamic: a reproducer written by triton-torch-matrix.

The harness recorded: graph_break: : 
Measured on NVIDIA H100 80GB HBM3, torch 2.11.0+cu130, triton 3.6.0.
The same failure in 1 more cell(s): matmul-autotune_heuristics-dynamic.

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
from functorch.compile import make_boxed_func
from torch._dynamo.backends.common import aot_autograd

# ---- the case: cases.layernorm (its kernel, launch and PyTorch reference) ----

import types

Case = types.SimpleNamespace  # the harness's case container: here just the case's own fields

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
    arg_names=("x", "weight", "bias", "eps"),
    arg_types={"bias": torch.Tensor | None, "eps": float},
    outputs=3,
    sizes=(67, 13, 129),
    meta={"BLOCK_SIZE": 256, "EVEN": False},
    configs=[triton.Config({"BLOCK_SIZE": 256}, num_warps=4), triton.Config({"BLOCK_SIZE": 1024}, num_warps=8)],
    key=["N"],
    heuristics={"EVEN": lambda args: args["N"] % MAX_BLOCK == 0},  # no tail, whatever the config
    config_heuristics={"EVEN": lambda args: args["N"] % args["BLOCK_SIZE"] == 0},  # the picked config
    dynamic_dims=((0,), (), (), ()),  # the size is the rows of x; weight is (768,), bias None, eps a float
)


# ---- the style: autotune_heuristics (@triton.autotune over @triton.heuristics kernel in a launcher) ----

kernel = triton.autotune(configs=CASE.configs, key=['N'])(triton.heuristics({**CASE.heuristics, **CASE.config_heuristics})(CASE.kernel))
META = {}


def layernorm_autotune_heuristics(x, weight, bias, eps):
    return CASE.launch(kernel, x, weight, bias, eps, **META)


class Model(torch.nn.Module):
    def forward(self, x, weight, bias, eps):
        return layernorm_autotune_heuristics(x, weight, bias, eps)


class Reference(torch.nn.Module):
    def forward(self, x, weight, bias, eps):
        return CASE.reference(x, weight, bias, eps)


# ---- the path: dynamic ----

DEVICE, SIZE, SEED = 'cuda', 67, 0  # the input the cell failed on
ATOL, RTOL = 1e-05, 1e-05  # the tolerance for float32
TAKES_GRAD = (True, True, False, False)  # which arguments are differentiated
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


GRAPHS = {"dynamo": [], "forward": [], "backward": []}


def keep(kind):  # a backend that keeps each graph Dynamo (or AOTAutograd) hands it, then runs it as it is
    def compiler(gm, example_inputs):
        GRAPHS[kind].append(gm)
        return gm.forward if kind == "dynamo" else make_boxed_func(gm.forward)
    return compiler


def nodes(kinds):  # the calls of the kept graphs of these kinds, their subgraphs' (a Function's bodies) included
    return [node for kind in kinds for gm in GRAPHS[kind] for sub in gm.modules()
            if isinstance(sub, torch.fx.GraphModule) for node in sub.graph.nodes if node.op == "call_function"]


def holds_kernel(*kinds):  # a Triton kernel (or the style's op) among the calls of the kept graphs
    names = [str(node.target) for node in nodes(kinds)]
    return any("triton_kernel_wrapper" in n or "auto_functionalized" in n or n.startswith(('mylib.',)) for n in names)


def kernels_held(*kinds):  # the names of the Triton kernels the kept graphs launch
    from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table

    held = set()
    for node in nodes(kinds):
        if "triton_kernel_wrapper" in str(node.target) and "kernel_idx" in node.kwargs:
            kernel = kernel_side_table.get_kernel(node.kwargs["kernel_idx"])
            while not hasattr(kernel, "__code__") and (getattr(kernel, "fn", None) or getattr(kernel, "kernel", None)):
                kernel = getattr(kernel, "fn", None) or getattr(kernel, "kernel")
            held.add(getattr(kernel, "__name__", type(kernel).__name__))
    return held


def check():
    compiled = torch.compile(build(Model), dynamic=True, backend=keep('dynamo'))
    for size in SIZES:
        infer(f'output at size {size}', compiled, inputs_of(size))
    reasons = [r.reason for r in torch._dynamo.explain(build(Model))(*inputs_of()).break_reasons]
    if not holds_kernel('dynamo'):
        raise AssertionError(f'graph break: the kernel ran outside the compiled graph ({len(reasons)} graph break(s): {reasons[:3]})')


if __name__ == "__main__":
    try:
        check()
    finally:  # a GPU fault left behind surfaces here, as at the end of a cell
        synchronize()
    print("no failure: layernorm-autotune_heuristics-dynamic passes here")
