"""softmax-heuristics_autotune-aoti_nonstrict: a reproducer written by triton-torch-matrix.

The harness recorded: error at trace: RuntimeError: Cannot access data pointer of Tensor (e.g. FakeTensor, FunctionalTensor). If you're using torch.compile/export/fx, it is likely that we are erroneously tracing into a custom kernel. To fix this, please wrap the custom kernel into an opaque custom op. Please see the following for details: https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0.
The same failure in 89 more cell(s): add-raw_jit-export_nonstrict, add-raw_jit-aoti_nonstrict, add-raw_jit-export_dynamic_nonstrict, add-autotune-export_nonstrict, add-autotune-aoti_nonstrict, add-heuristics_autotune-export_nonstrict, add-heuristics_autotune-aoti_nonstrict, add-autotune_heuristics-export_nonstrict, add-autotune_heuristics-aoti_nonstrict, sin-raw_jit-export_nonstrict, sin-raw_jit-aoti_nonstrict, sin-raw_jit-export_dynamic_nonstrict, sin-autotune-export_nonstrict, sin-autotune-aoti_nonstrict, sin-heuristics_autotune-export_nonstrict, sin-heuristics_autotune-aoti_nonstrict, sin-autotune_heuristics-export_nonstrict, sin-autotune_heuristics-aoti_nonstrict, silu-raw_jit-export_nonstrict, silu-raw_jit-aoti_nonstrict, silu-raw_jit-export_dynamic_nonstrict, silu-autotune-export_nonstrict, silu-autotune-aoti_nonstrict, silu-heuristics_autotune-export_nonstrict, silu-heuristics_autotune-aoti_nonstrict, silu-autotune_heuristics-export_nonstrict, silu-autotune_heuristics-aoti_nonstrict, softmax-raw_jit-export_nonstrict, softmax-raw_jit-aoti_nonstrict, softmax-raw_jit-export_dynamic_nonstrict, softmax-autotune-export_nonstrict, softmax-autotune-aoti_nonstrict, softmax-autotune-export_dynamic_nonstrict, softmax-heuristics_autotune-export_nonstrict, softmax-heuristics_autotune-export_dynamic_nonstrict, softmax-autotune_heuristics-export_nonstrict, softmax-autotune_heuristics-aoti_nonstrict, softmax-autotune_heuristics-export_dynamic_nonstrict, matmul-raw_jit-export_nonstrict, matmul-raw_jit-aoti_nonstrict, matmul-raw_jit-export_dynamic_nonstrict, matmul-autotune-export_nonstrict, matmul-autotune-aoti_nonstrict, matmul-heuristics_autotune-export_nonstrict, matmul-heuristics_autotune-aoti_nonstrict, matmul-autotune_heuristics-export_nonstrict, matmul-autotune_heuristics-aoti_nonstrict, add_inplace-raw_jit-export_nonstrict, add_inplace-raw_jit-aoti_nonstrict, add_inplace-raw_jit-export_dynamic_nonstrict, add_inplace-autotune-export_nonstrict, add_inplace-autotune-aoti_nonstrict, add_inplace-heuristics_autotune-export_nonstrict, add_inplace-heuristics_autotune-aoti_nonstrict, add_inplace-autotune_heuristics-export_nonstrict, add_inplace-autotune_heuristics-aoti_nonstrict, rmsnorm-raw_jit-export_nonstrict, rmsnorm-raw_jit-aoti_nonstrict, rmsnorm-raw_jit-export_dynamic_nonstrict, rmsnorm-autotune-export_nonstrict, rmsnorm-autotune-aoti_nonstrict, rmsnorm-autotune-export_dynamic_nonstrict, rmsnorm-heuristics_autotune-export_nonstrict, rmsnorm-heuristics_autotune-aoti_nonstrict, rmsnorm-heuristics_autotune-export_dynamic_nonstrict, rmsnorm-autotune_heuristics-export_nonstrict, rmsnorm-autotune_heuristics-aoti_nonstrict, rmsnorm-autotune_heuristics-export_dynamic_nonstrict, layernorm-raw_jit-export_nonstrict, layernorm-raw_jit-aoti_nonstrict, layernorm-raw_jit-export_dynamic_nonstrict, layernorm-autotune-export_nonstrict, layernorm-autotune-aoti_nonstrict, layernorm-autotune-export_dynamic_nonstrict, layernorm-heuristics_autotune-export_nonstrict, layernorm-heuristics_autotune-aoti_nonstrict, layernorm-heuristics_autotune-export_dynamic_nonstrict, layernorm-autotune_heuristics-export_nonstrict, layernorm-autotune_heuristics-aoti_nonstrict, layernorm-autotune_heuristics-export_dynamic_nonstrict, sin_triton_backward-raw_jit-export_nonstrict, sin_triton_backward-raw_jit-aoti_nonstrict, sin_triton_backward-raw_jit-export_dynamic_nonstrict, sin_triton_backward-autotune-export_nonstrict, sin_triton_backward-autotune-aoti_nonstrict, sin_triton_backward-heuristics_autotune-export_nonstrict, sin_triton_backward-heuristics_autotune-aoti_nonstrict, sin_triton_backward-autotune_heuristics-export_nonstrict, sin_triton_backward-autotune_heuristics-aoti_nonstrict.

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


# ---- the style: heuristics_autotune (@triton.heuristics over @triton.autotune kernel in a launcher) ----

kernel = triton.heuristics(CASE.heuristics)(triton.autotune(configs=CASE.configs, key=['n_cols'])(CASE.kernel))
META = {}


def softmax_heuristics_autotune(x):
    return CASE.launch(kernel, x, **META)


class Model(torch.nn.Module):
    def forward(self, x):
        return softmax_heuristics_autotune(x)


class Reference(torch.nn.Module):
    def forward(self, x):
        return CASE.reference(x)


# ---- the path: aoti_nonstrict ----

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
    inputs = inputs_of()
    program = torch.export.export(build(Model).eval(), copy(inputs), strict=False)
    package = torch._inductor.aoti_compile_and_package(program, package_path=tempfile.mktemp(".pt2"))
    infer('output', torch._inductor.aoti_load_package(package), inputs)


if __name__ == "__main__":
    check()
    print("no failure: softmax-heuristics_autotune-aoti_nonstrict passes here")
