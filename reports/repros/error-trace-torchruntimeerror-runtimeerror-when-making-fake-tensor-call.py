"""sin_triton_backward-triton_op_heuristics_autotune-cpu_compile: a reproducer written by triton-torch-matrix.

The harness recorded: error at trace: TorchRuntimeError: RuntimeError when making fake tensor call
Measured on NVIDIA H100 80GB HBM3, torch 2.11.0+cu130, triton 3.6.0.
The same failure in 115 more cell(s): add-triton_op_heuristics_autotune-compile, add-triton_op_heuristics_autotune-fullgraph, add-triton_op_heuristics_autotune-dynamic, add-triton_op_heuristics_autotune-cudagraphs, add-triton_op_heuristics_autotune-export_strict, add-triton_op_heuristics_autotune-aoti_strict, add-triton_op_heuristics_autotune-aoti_standalone, add-triton_op_heuristics_autotune-export_dynamic_strict, add-triton_op_heuristics_autotune-aoti_dynamic, add-triton_op_heuristics_autotune-export_saveload, add-triton_op_heuristics_autotune-train_compile, add-triton_op_heuristics_autotune-cpu_compile, add-triton_op_heuristics_autotune-subclass_compile, sin-triton_op_heuristics_autotune-compile, sin-triton_op_heuristics_autotune-fullgraph, sin-triton_op_heuristics_autotune-dynamic, sin-triton_op_heuristics_autotune-cudagraphs, sin-triton_op_heuristics_autotune-export_strict, sin-triton_op_heuristics_autotune-aoti_strict, sin-triton_op_heuristics_autotune-aoti_standalone, sin-triton_op_heuristics_autotune-export_dynamic_strict, sin-triton_op_heuristics_autotune-aoti_dynamic, sin-triton_op_heuristics_autotune-export_saveload, sin-triton_op_heuristics_autotune-train_compile, sin-triton_op_heuristics_autotune-cpu_compile, sin-triton_op_heuristics_autotune-subclass_compile, silu-triton_op_heuristics_autotune-compile, silu-triton_op_heuristics_autotune-fullgraph, silu-triton_op_heuristics_autotune-dynamic, silu-triton_op_heuristics_autotune-cudagraphs, silu-triton_op_heuristics_autotune-export_strict, silu-triton_op_heuristics_autotune-aoti_strict, silu-triton_op_heuristics_autotune-aoti_standalone, silu-triton_op_heuristics_autotune-export_dynamic_strict, silu-triton_op_heuristics_autotune-aoti_dynamic, silu-triton_op_heuristics_autotune-export_saveload, silu-triton_op_heuristics_autotune-train_compile, silu-triton_op_heuristics_autotune-cpu_compile, silu-triton_op_heuristics_autotune-subclass_compile, softmax-triton_op_heuristics_autotune-compile, softmax-triton_op_heuristics_autotune-fullgraph, softmax-triton_op_heuristics_autotune-dynamic, softmax-triton_op_heuristics_autotune-cudagraphs, softmax-triton_op_heuristics_autotune-export_strict, softmax-triton_op_heuristics_autotune-aoti_strict, softmax-triton_op_heuristics_autotune-aoti_standalone, softmax-triton_op_heuristics_autotune-export_dynamic_strict, softmax-triton_op_heuristics_autotune-aoti_dynamic, softmax-triton_op_heuristics_autotune-export_saveload, softmax-triton_op_heuristics_autotune-train_compile, softmax-triton_op_heuristics_autotune-cpu_compile, softmax-triton_op_heuristics_autotune-subclass_compile, matmul-triton_op_heuristics_autotune-compile, matmul-triton_op_heuristics_autotune-fullgraph, matmul-triton_op_heuristics_autotune-dynamic, matmul-triton_op_heuristics_autotune-cudagraphs, matmul-triton_op_heuristics_autotune-export_strict, matmul-triton_op_heuristics_autotune-aoti_strict, matmul-triton_op_heuristics_autotune-aoti_standalone, matmul-triton_op_heuristics_autotune-export_dynamic_strict, matmul-triton_op_heuristics_autotune-aoti_dynamic, matmul-triton_op_heuristics_autotune-export_saveload, matmul-triton_op_heuristics_autotune-train_compile, matmul-triton_op_heuristics_autotune-cpu_compile, matmul-triton_op_heuristics_autotune-subclass_compile, add_inplace-triton_op_heuristics_autotune-compile, add_inplace-triton_op_heuristics_autotune-fullgraph, add_inplace-triton_op_heuristics_autotune-dynamic, add_inplace-triton_op_heuristics_autotune-cudagraphs, add_inplace-triton_op_heuristics_autotune-export_strict, add_inplace-triton_op_heuristics_autotune-aoti_strict, add_inplace-triton_op_heuristics_autotune-aoti_standalone, add_inplace-triton_op_heuristics_autotune-export_dynamic_strict, add_inplace-triton_op_heuristics_autotune-aoti_dynamic, add_inplace-triton_op_heuristics_autotune-export_saveload, add_inplace-triton_op_heuristics_autotune-cpu_compile, add_inplace-triton_op_heuristics_autotune-subclass_compile, rmsnorm-triton_op_heuristics_autotune-compile, rmsnorm-triton_op_heuristics_autotune-fullgraph, rmsnorm-triton_op_heuristics_autotune-dynamic, rmsnorm-triton_op_heuristics_autotune-cudagraphs, rmsnorm-triton_op_heuristics_autotune-export_strict, rmsnorm-triton_op_heuristics_autotune-aoti_strict, rmsnorm-triton_op_heuristics_autotune-aoti_standalone, rmsnorm-triton_op_heuristics_autotune-export_dynamic_strict, rmsnorm-triton_op_heuristics_autotune-aoti_dynamic, rmsnorm-triton_op_heuristics_autotune-export_saveload, rmsnorm-triton_op_heuristics_autotune-train_compile, rmsnorm-triton_op_heuristics_autotune-cpu_compile, rmsnorm-triton_op_heuristics_autotune-subclass_compile, layernorm-triton_op_heuristics_autotune-compile, layernorm-triton_op_heuristics_autotune-fullgraph, layernorm-triton_op_heuristics_autotune-dynamic, layernorm-triton_op_heuristics_autotune-cudagraphs, layernorm-triton_op_heuristics_autotune-export_strict, layernorm-triton_op_heuristics_autotune-aoti_strict, layernorm-triton_op_heuristics_autotune-aoti_standalone, layernorm-triton_op_heuristics_autotune-export_dynamic_strict, layernorm-triton_op_heuristics_autotune-aoti_dynamic, layernorm-triton_op_heuristics_autotune-export_saveload, layernorm-triton_op_heuristics_autotune-train_compile, layernorm-triton_op_heuristics_autotune-cpu_compile, layernorm-triton_op_heuristics_autotune-subclass_compile, sin_triton_backward-triton_op_heuristics_autotune-compile, sin_triton_backward-triton_op_heuristics_autotune-fullgraph, sin_triton_backward-triton_op_heuristics_autotune-dynamic, sin_triton_backward-triton_op_heuristics_autotune-cudagraphs, sin_triton_backward-triton_op_heuristics_autotune-export_strict, sin_triton_backward-triton_op_heuristics_autotune-aoti_strict, sin_triton_backward-triton_op_heuristics_autotune-aoti_standalone, sin_triton_backward-triton_op_heuristics_autotune-export_dynamic_strict, sin_triton_backward-triton_op_heuristics_autotune-aoti_dynamic, sin_triton_backward-triton_op_heuristics_autotune-export_saveload, sin_triton_backward-triton_op_heuristics_autotune-train_compile, sin_triton_backward-triton_op_heuristics_autotune-subclass_compile.

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

# ---- the case: cases.sin_triton_backward (its kernel, launch and PyTorch reference) ----

import types

Case = types.SimpleNamespace  # the harness's case container: here just the case's own fields

"""The PyTorch recipe's sin whose backward is itself a Triton kernel (the recipe's ``mysin`` calling ``mycos`` in its
backward): ``grad * cos(x)`` in a plain ``@triton.jit`` kernel, which every style runs in its backward (the launcher
directly, ``triton_op`` and ``custom_op`` as a second op, ``harness::sin_triton_backward_<style>_backward``)."""

import math

import torch
import triton
import triton.language as tl


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
    sizes=(3001, 1000, 5003),
    meta={"BLOCK_SIZE": 256, "EVEN": False},
    configs=[triton.Config({"BLOCK_SIZE": 256}, num_warps=4), triton.Config({"BLOCK_SIZE": 512}, num_warps=4)],
    key=["n_elements"],
    heuristics={"EVEN": lambda args: args["n_elements"] % MAX_BLOCK == 0},  # no tail, whatever the config
    config_heuristics={"EVEN": lambda args: args["n_elements"] % args["BLOCK_SIZE"] == 0},  # the picked config
)


# ---- the style: triton_op_heuristics_autotune (@triton.heuristics over @triton.autotune kernel in a triton_op) ----

kernel = triton.heuristics(CASE.heuristics)(triton.autotune(configs=CASE.configs, key=['n_elements'])(CASE.kernel))
META = {}


@torch.library.triton_op('mylib::sin_triton_backward_triton_op_heuristics_autotune', mutates_args=())
def sin_triton_backward_triton_op_heuristics_autotune(x: torch.Tensor) -> torch.Tensor:
    return CASE.launch(torch.library.wrap_triton(kernel), x, **META)


sin_triton_backward_triton_op_heuristics_autotune.register_kernel('cpu')(CASE.reference)


torch.utils.flop_counter.register_flop_formula(torch.ops.mylib.sin_triton_backward_triton_op_heuristics_autotune)(
    lambda *shapes, out_shape=None, **kwargs: CASE.flops(*shapes)
)


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.ops.mylib.sin_triton_backward_triton_op_heuristics_autotune(x)


class Reference(torch.nn.Module):
    def forward(self, x):
        return CASE.reference(x)


# ---- the path: cpu_compile ----

DEVICE, SIZE, SEED = 'cpu', 3001, 0  # the input the cell failed on
ATOL, RTOL = 1e-05, 1e-05  # the tolerance for float32
TAKES_GRAD = (True,)  # which arguments are differentiated
SIZES, OTHER_SIZES = (3001, 1000, 5003), (1000, 5003)


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
    infer('output', torch.compile(build(Model)), inputs_of())


if __name__ == "__main__":
    try:
        check()
    finally:  # a GPU fault left behind surfaces here, as at the end of a cell
        synchronize()
    print("no failure: sin_triton_backward-triton_op_heuristics_autotune-cpu_compile passes here")
