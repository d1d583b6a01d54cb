"""add-autotune-export_dynamic_nonstrict: a reproducer written by triton-torch-matrix.

The harness recorded: error at trace: TypeError: unhashable type: non-nested SymInt
Measured on NVIDIA H100 80GB HBM3, torch 2.11.0+cu130, triton 3.6.0.
The same failure in 17 more cell(s): add-heuristics_autotune-export_dynamic_nonstrict, add-autotune_heuristics-export_dynamic_nonstrict, sin-autotune-export_dynamic_nonstrict, sin-heuristics_autotune-export_dynamic_nonstrict, sin-autotune_heuristics-export_dynamic_nonstrict, silu-autotune-export_dynamic_nonstrict, silu-heuristics_autotune-export_dynamic_nonstrict, silu-autotune_heuristics-export_dynamic_nonstrict, matmul-autotune-export_dynamic_nonstrict, matmul-heuristics_autotune-export_dynamic_nonstrict, matmul-autotune_heuristics-export_dynamic_nonstrict, add_inplace-autotune-export_dynamic_nonstrict, add_inplace-heuristics_autotune-export_dynamic_nonstrict, add_inplace-autotune_heuristics-export_dynamic_nonstrict, sin_triton_backward-autotune-export_dynamic_nonstrict, sin_triton_backward-heuristics_autotune-export_dynamic_nonstrict, sin_triton_backward-autotune_heuristics-export_dynamic_nonstrict.

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

# ---- the case: cases.add (its kernel, launch and PyTorch reference) ----

import types

Case = types.SimpleNamespace  # the harness's case container: here just the case's own fields

"""The PyTorch recipe's vector add: two inputs, one output."""

import math

import torch
import triton
import triton.language as tl


MAX_BLOCK = 1024  # every block size below divides it, so n % MAX_BLOCK == 0 means no tail


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr, EVEN: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    if EVEN:
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets) + tl.load(y_ptr + offsets))
    else:
        mask = offsets < n_elements
        x = tl.load(x_ptr + offsets, mask=mask)
        y = tl.load(y_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, x + y, mask=mask)


def launch(kernel, x, y, **meta):
    out = torch.empty_like(x)
    n_elements = out.numel()
    kernel[lambda m: (triton.cdiv(n_elements, m["BLOCK_SIZE"]),)](x, y, out, n_elements, **meta)
    return out


def make_inputs(size, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(size, generator=gen).to(device) for _ in range(2))


CASE = Case(
    id="add",
    kernel=add_kernel,
    launch=launch,
    reference=torch.add,
    make_inputs=make_inputs,
    backward=lambda inputs, out, grad: (grad, grad),
    flops=lambda x, y: math.prod(x),
    bytes_moved=lambda x, y: 3 * x.numel() * x.element_size(),  # read x and y, write out
    arg_names=("x", "y"),
    sizes=(3001, 1000, 5003),
    meta={"BLOCK_SIZE": 256, "EVEN": False},
    configs=[triton.Config({"BLOCK_SIZE": 256}, num_warps=4), triton.Config({"BLOCK_SIZE": 1024}, num_warps=8)],
    key=["n_elements"],
    heuristics={"EVEN": lambda args: args["n_elements"] % MAX_BLOCK == 0},  # no tail, whatever the config
    config_heuristics={"EVEN": lambda args: args["n_elements"] % args["BLOCK_SIZE"] == 0},  # the picked config
)


# ---- the style: autotune (@triton.autotune kernel in a launcher) ----

kernel = triton.autotune(configs=CASE.configs, key=['n_elements'])(CASE.kernel)
META = {'EVEN': False}


def add_autotune(x, y):
    return CASE.launch(kernel, x, y, **META)


class Model(torch.nn.Module):
    def forward(self, x, y):
        return add_autotune(x, y)


class Reference(torch.nn.Module):
    def forward(self, x, y):
        return CASE.reference(x, y)


# ---- the path: export_dynamic_nonstrict ----

DEVICE, SIZE, SEED = 'cuda', 3001, 0  # the input the cell failed on
ATOL, RTOL = 1e-05, 1e-05  # the tolerance for float32
TAKES_GRAD = (True, True)  # which arguments are differentiated
SIZES, OTHER_SIZES = (3001, 1000, 5003), (1000, 5003)
size = torch.export.Dim("size", min=1, max=10006)
DYNAMIC = ({0: size}, {0: size},)


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
    program = torch.export.export(build(Model).eval(), copy(inputs), dynamic_shapes=DYNAMIC, strict=False)
    infer(f'output at traced size {SIZE}', program.module(), inputs)
    for size in OTHER_SIZES:
        infer(f'output at size {size}', program.module(), inputs_of(size))


if __name__ == "__main__":
    try:
        check()
    finally:  # a GPU fault left behind surfaces here, as at the end of a cell
        synchronize()
    print("no failure: add-autotune-export_dynamic_nonstrict passes here")
