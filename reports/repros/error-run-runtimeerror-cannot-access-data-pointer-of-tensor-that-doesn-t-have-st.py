"""softmax-raw_jit-vmap: a reproducer written by triton-torch-matrix.

The harness recorded: error at run: RuntimeError: Cannot access data pointer of Tensor that doesn't have storage
Measured on NVIDIA H100 80GB HBM3, torch 2.11.0+cu130, triton 3.6.0.
The same failure in 35 more cell(s): add-raw_jit-vmap, add-autotune-vmap, add-heuristics_autotune-vmap, add-autotune_heuristics-vmap, sin-raw_jit-vmap, sin-autotune-vmap, sin-heuristics_autotune-vmap, sin-autotune_heuristics-vmap, silu-raw_jit-vmap, silu-autotune-vmap, silu-heuristics_autotune-vmap, silu-autotune_heuristics-vmap, softmax-autotune-vmap, softmax-heuristics_autotune-vmap, softmax-autotune_heuristics-vmap, matmul-raw_jit-vmap, matmul-autotune-vmap, matmul-heuristics_autotune-vmap, matmul-autotune_heuristics-vmap, add_inplace-raw_jit-vmap, add_inplace-autotune-vmap, add_inplace-heuristics_autotune-vmap, add_inplace-autotune_heuristics-vmap, rmsnorm-raw_jit-vmap, rmsnorm-autotune-vmap, rmsnorm-heuristics_autotune-vmap, rmsnorm-autotune_heuristics-vmap, layernorm-raw_jit-vmap, layernorm-autotune-vmap, layernorm-heuristics_autotune-vmap, layernorm-autotune_heuristics-vmap, sin_triton_backward-raw_jit-vmap, sin_triton_backward-autotune-vmap, sin_triton_backward-heuristics_autotune-vmap, sin_triton_backward-autotune_heuristics-vmap.

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

# ---- the case: cases.softmax (its kernel, launch and PyTorch reference) ----

import types

Case = types.SimpleNamespace  # the harness's case container: here just the case's own fields

"""Row-wise softmax of a 2-D tensor: one program per row, the row in one block."""

import math

import torch
import triton
import triton.language as tl


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
    arg_names=("x",),
    sizes=(67, 13, 129),
    meta={"EVEN": False},
    configs=[triton.Config({}, num_warps=4), triton.Config({}, num_warps=8)],
    key=["n_cols"],
    # BLOCK_SIZE is a launch argument and the configs set num_warps only: no heuristic reads a config value
    heuristics={"EVEN": lambda args: args["n_cols"] == args["BLOCK_SIZE"]},
)


# ---- the style: raw_jit (@triton.jit kernel in a launcher) ----

kernel = CASE.kernel
META = {'EVEN': False}


def softmax_raw_jit(x):
    return CASE.launch(kernel, x, **META)


class Model(torch.nn.Module):
    def forward(self, x):
        return softmax_raw_jit(x)


class Reference(torch.nn.Module):
    def forward(self, x):
        return CASE.reference(x)


# ---- the path: vmap ----

DEVICE, SIZE, SEED = 'cuda', 67, 0  # the input the cell failed on
ATOL, RTOL = 1e-05, 1e-05  # the tolerance for float32
TAKES_GRAD = (True,)  # which arguments are differentiated
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
    items = [inputs_of(seed=SEED + k) for k in range(3)]
    items = [tuple(b if isinstance(b, torch.Tensor) else a for a, b in zip(items[0], item))
             for item in items]
    batched = tuple(torch.stack(v) if isinstance(v[0], torch.Tensor) else v[0] for v in zip(*items))
    in_dims = tuple(0 if isinstance(v, torch.Tensor) else None for v in batched)
    with torch.no_grad():
        out = torch.vmap(build(Model), in_dims=in_dims)(*batched)
    synchronize()
    for k, inputs in enumerate(items):
        item = tuple(o[k] for o in out) if isinstance(out, tuple | list) else out[k]
        compare(f'output of item {k}', item, expected(inputs))


if __name__ == "__main__":
    try:
        check()
    finally:  # a GPU fault left behind surfaces here, as at the end of a cell
        synchronize()
    print("no failure: softmax-raw_jit-vmap passes here")
