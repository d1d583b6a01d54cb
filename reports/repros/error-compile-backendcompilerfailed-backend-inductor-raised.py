"""sin-raw_jit-subclass_compile: a reproducer written by triton-torch-matrix.

The harness recorded: error at compile: BackendCompilerFailed: backend='inductor' raised:
Measured on NVIDIA H100 80GB HBM3, torch 2.11.0+cu130, triton 3.6.0.
The same failure in 35 more cell(s): add-raw_jit-subclass_compile, add-autotune-subclass_compile, add-heuristics_autotune-subclass_compile, add-autotune_heuristics-subclass_compile, sin-autotune-subclass_compile, sin-heuristics_autotune-subclass_compile, sin-autotune_heuristics-subclass_compile, silu-raw_jit-subclass_compile, silu-autotune-subclass_compile, silu-heuristics_autotune-subclass_compile, silu-autotune_heuristics-subclass_compile, softmax-raw_jit-subclass_compile, softmax-autotune-subclass_compile, softmax-heuristics_autotune-subclass_compile, softmax-autotune_heuristics-subclass_compile, matmul-raw_jit-subclass_compile, matmul-autotune-subclass_compile, matmul-heuristics_autotune-subclass_compile, matmul-autotune_heuristics-subclass_compile, add_inplace-raw_jit-subclass_compile, add_inplace-autotune-subclass_compile, add_inplace-heuristics_autotune-subclass_compile, add_inplace-autotune_heuristics-subclass_compile, rmsnorm-raw_jit-subclass_compile, rmsnorm-autotune-subclass_compile, rmsnorm-heuristics_autotune-subclass_compile, rmsnorm-autotune_heuristics-subclass_compile, layernorm-raw_jit-subclass_compile, layernorm-autotune-subclass_compile, layernorm-heuristics_autotune-subclass_compile, layernorm-autotune_heuristics-subclass_compile, sin_triton_backward-raw_jit-subclass_compile, sin_triton_backward-autotune-subclass_compile, sin_triton_backward-heuristics_autotune-subclass_compile, sin_triton_backward-autotune_heuristics-subclass_compile.

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
from torch.testing._internal.two_tensor import TwoTensor

# ---- the case: cases.sin (its kernel, launch and PyTorch reference) ----

import types

Case = types.SimpleNamespace  # the harness's case container: here just the case's own fields

"""The PyTorch recipe's sin kernel, with its cos backward."""

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


def launch(kernel, x, **meta):
    out = torch.empty_like(x)
    n_elements = out.numel()
    kernel[lambda m: (triton.cdiv(n_elements, m["BLOCK_SIZE"]),)](x, out, n_elements, **meta)
    return out


def make_inputs(size, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(size, generator=gen).to(device),)


CASE = Case(
    id="sin",
    kernel=sin_kernel,
    launch=launch,
    reference=torch.sin,
    make_inputs=make_inputs,
    backward=lambda inputs, out, grad: (grad * inputs[0].cos(),),
    flops=lambda x: math.prod(x),
    bytes_moved=lambda x: 2 * x.numel() * x.element_size(),  # read x, write out
    arg_names=("x",),
    sizes=(3001, 1000, 5003),
    meta={"BLOCK_SIZE": 256, "EVEN": False},
    configs=[triton.Config({"BLOCK_SIZE": 256}, num_warps=4), triton.Config({"BLOCK_SIZE": 512}, num_warps=4)],
    key=["n_elements"],
    heuristics={"EVEN": lambda args: args["n_elements"] % MAX_BLOCK == 0},  # no tail, whatever the config
    config_heuristics={"EVEN": lambda args: args["n_elements"] % args["BLOCK_SIZE"] == 0},  # the picked config
)


# ---- the style: raw_jit (@triton.jit kernel in a launcher) ----

kernel = CASE.kernel
META = {'BLOCK_SIZE': 256, 'EVEN': False}


def sin_raw_jit(x):
    return CASE.launch(kernel, x, **META)


class Model(torch.nn.Module):
    def forward(self, x):
        return sin_raw_jit(x)


class Reference(torch.nn.Module):
    def forward(self, x):
        return CASE.reference(x)


# ---- the path: subclass_compile ----

DEVICE, SIZE, SEED = 'cuda', 3001, 0  # the input the cell failed on
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
    first, second = inputs_of(), inputs_of(seed=SEED + 1)
    second = tuple(b if isinstance(b, torch.Tensor) else a for a, b in zip(first, second))
    both = tuple(TwoTensor(copy_tensor(a), copy_tensor(b)) if isinstance(a, torch.Tensor) else a for a, b in zip(first, second))
    out = torch.compile(build(Model))(*both)
    synchronize()
    outs = tuple(out) if isinstance(out, tuple | list) else (out,)
    for index, one in enumerate(outs):
        if not isinstance(one, TwoTensor):
            raise AssertionError(f'wrong numbers: output {index} is a {type(one).__name__}, not a TwoTensor')
    single = lambda values: values[0] if len(values) == 1 else values
    compare('output .a', single(tuple(o.a for o in outs)), expected(first))
    compare('output .b', single(tuple(o.b for o in outs)), expected(second))


if __name__ == "__main__":
    try:
        check()
    finally:  # a GPU fault left behind surfaces here, as at the end of a cell
        synchronize()
    print("no failure: sin-raw_jit-subclass_compile passes here")
