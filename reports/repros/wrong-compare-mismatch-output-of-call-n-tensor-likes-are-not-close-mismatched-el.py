"""add_inplace-autotune_heuristics-cudagraphs: a reproducer written by triton-torch-matrix.

The harness recorded: wrong 5/5 at compare: Mismatch: output of call 1: Tensor-likes are not close!; Mismatched elements: 3001 / 3001 (100.0%); Greatest absolute difference: 749.345458984375 at index (10,) (up to 1e-05 allowed); Greatest relative difference: 1020036.125 at index (153,) (up to 1e-05 allowed)
Measured on NVIDIA H100 80GB HBM3, torch 2.11.0+cu130, triton 3.6.0.
The same failure in 1 more cell(s): add_inplace-triton_op_autotune_heuristics-cudagraphs.

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

# ---- the case: cases.add_inplace (its kernel, launch and PyTorch reference) ----

import types

Case = types.SimpleNamespace  # the harness's case container: here just the case's own fields

"""In-place add: the kernel writes x + y into x (declared through ``mutates``)."""

import math

import torch
import triton
import triton.language as tl


MAX_BLOCK = 1024


@triton.jit
def add_inplace_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr, EVEN: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    if EVEN:
        tl.store(x_ptr + offsets, tl.load(x_ptr + offsets) + tl.load(y_ptr + offsets))
    else:
        mask = offsets < n_elements
        x = tl.load(x_ptr + offsets, mask=mask)
        tl.store(x_ptr + offsets, x + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def launch(kernel, x, y, **meta):
    n_elements = x.numel()
    kernel[lambda m: (triton.cdiv(n_elements, m["BLOCK_SIZE"]),)](x, y, n_elements, **meta)


def reference(x, y):
    x.add_(y)


def make_inputs(size, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(size, generator=gen).to(device) for _ in range(2))


CASE = Case(
    id="add_inplace",
    kernel=add_inplace_kernel,
    launch=launch,
    reference=reference,
    make_inputs=make_inputs,
    backward=lambda inputs, out, grad: (grad, grad),
    flops=lambda x, y: math.prod(x),
    arg_names=("x", "y"),
    sizes=(3001, 1000, 5003),
    meta={"BLOCK_SIZE": 256, "EVEN": False},
    configs=[triton.Config({"BLOCK_SIZE": 256}, num_warps=4), triton.Config({"BLOCK_SIZE": 1024}, num_warps=8)],
    key=["n_elements"],
    heuristics={"EVEN": lambda args: args["n_elements"] % MAX_BLOCK == 0},  # no tail, whatever the config
    config_heuristics={"EVEN": lambda args: args["n_elements"] % args["BLOCK_SIZE"] == 0},  # the picked config
    mutates=("x",),
    autotune_options={"restore_value": ["x_ptr"]},  # autotuning runs the kernel repeatedly
)


# ---- the style: autotune_heuristics (@triton.autotune over @triton.heuristics kernel in a launcher) ----

kernel = triton.autotune(configs=CASE.configs, key=['n_elements'], **CASE.autotune_options)(triton.heuristics({**CASE.heuristics, **CASE.config_heuristics})(CASE.kernel))
META = {}


def add_inplace_autotune_heuristics(x, y):
    return CASE.launch(kernel, x, y, **META)


class Model(torch.nn.Module):
    def forward(self, x, y):
        x = x.clone()
        add_inplace_autotune_heuristics(x, y)
        return x


class Reference(torch.nn.Module):
    def forward(self, x, y):
        x = x.clone()
        CASE.reference(x, y)
        return x


# ---- the path: cudagraphs ----

DEVICE, SIZE, SEED = 'cuda', 3001, 0  # the input the cell failed on
ATOL, RTOL = 1e-05, 1e-05  # the tolerance for float32
TAKES_GRAD = (True, True)  # which arguments are differentiated
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
    compiled = torch.compile(build(Model), mode="reduce-overhead")
    for seed in range(3):
        inputs = inputs_of(seed=seed)
        with torch.no_grad():
            out = compiled(*copy(inputs))
            out = tuple(o.clone() for o in out) if isinstance(out, tuple | list) else out.clone()
        compare(f'output of call {seed + 1}', out, expected(inputs))


if __name__ == "__main__":
    try:
        check()
    finally:  # a GPU fault left behind surfaces here, as at the end of a cell
        synchronize()
    print("no failure: add_inplace-autotune_heuristics-cudagraphs passes here")
