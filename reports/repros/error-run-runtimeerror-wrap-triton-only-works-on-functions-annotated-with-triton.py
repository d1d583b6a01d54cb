"""add-triton_op_heuristics_autotune-flop_counter: a reproducer written by triton-torch-matrix.

The harness recorded: error at run: RuntimeError: wrap_triton only works on functions annotated with triton.jit or triton.autotune
Measured on NVIDIA H100 80GB HBM3, torch 2.11.0+cu130, triton 3.6.0.
The same failure in 42 more cell(s): add-triton_op_heuristics_autotune-eager, add-triton_op_heuristics_autotune-train_eager, add-triton_op_heuristics_autotune-subclass_eager, add-triton_op_heuristics_autotune-vmap, sin-triton_op_heuristics_autotune-eager, sin-triton_op_heuristics_autotune-train_eager, sin-triton_op_heuristics_autotune-flop_counter, sin-triton_op_heuristics_autotune-subclass_eager, sin-triton_op_heuristics_autotune-vmap, silu-triton_op_heuristics_autotune-eager, silu-triton_op_heuristics_autotune-train_eager, silu-triton_op_heuristics_autotune-flop_counter, silu-triton_op_heuristics_autotune-subclass_eager, silu-triton_op_heuristics_autotune-vmap, softmax-triton_op_heuristics_autotune-eager, softmax-triton_op_heuristics_autotune-train_eager, softmax-triton_op_heuristics_autotune-flop_counter, softmax-triton_op_heuristics_autotune-subclass_eager, softmax-triton_op_heuristics_autotune-vmap, matmul-triton_op_heuristics_autotune-eager, matmul-triton_op_heuristics_autotune-train_eager, matmul-triton_op_heuristics_autotune-flop_counter, matmul-triton_op_heuristics_autotune-subclass_eager, matmul-triton_op_heuristics_autotune-vmap, add_inplace-triton_op_heuristics_autotune-eager, add_inplace-triton_op_heuristics_autotune-flop_counter, add_inplace-triton_op_heuristics_autotune-subclass_eager, rmsnorm-triton_op_heuristics_autotune-eager, rmsnorm-triton_op_heuristics_autotune-train_eager, rmsnorm-triton_op_heuristics_autotune-flop_counter, rmsnorm-triton_op_heuristics_autotune-subclass_eager, rmsnorm-triton_op_heuristics_autotune-vmap, layernorm-triton_op_heuristics_autotune-eager, layernorm-triton_op_heuristics_autotune-train_eager, layernorm-triton_op_heuristics_autotune-flop_counter, layernorm-triton_op_heuristics_autotune-subclass_eager, layernorm-triton_op_heuristics_autotune-vmap, sin_triton_backward-triton_op_heuristics_autotune-eager, sin_triton_backward-triton_op_heuristics_autotune-train_eager, sin_triton_backward-triton_op_heuristics_autotune-flop_counter, sin_triton_backward-triton_op_heuristics_autotune-subclass_eager, sin_triton_backward-triton_op_heuristics_autotune-vmap.

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
from torch.utils.flop_counter import FlopCounterMode

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


# ---- the style: triton_op_heuristics_autotune (@triton.heuristics over @triton.autotune kernel in a triton_op) ----

kernel = triton.heuristics(CASE.heuristics)(triton.autotune(configs=CASE.configs, key=['n_elements'])(CASE.kernel))
META = {}


@torch.library.triton_op('mylib::add_triton_op_heuristics_autotune', mutates_args=())
def add_triton_op_heuristics_autotune(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return CASE.launch(torch.library.wrap_triton(kernel), x, y, **META)


add_triton_op_heuristics_autotune.register_kernel('cpu')(CASE.reference)


torch.utils.flop_counter.register_flop_formula(torch.ops.mylib.add_triton_op_heuristics_autotune)(
    lambda *shapes, out_shape=None, **kwargs: CASE.flops(*shapes)
)


class Model(torch.nn.Module):
    def forward(self, x, y):
        return torch.ops.mylib.add_triton_op_heuristics_autotune(x, y)


class Reference(torch.nn.Module):
    def forward(self, x, y):
        return CASE.reference(x, y)


# ---- the path: flop_counter ----

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


DECLARED = []


def spy(*args):  # the case's flop formula over the shapes the op is called with
    DECLARED.append(CASE.flops(*(tuple(a.shape) if isinstance(a, torch.Tensor) else a for a in args)))
    return CASE.reference(*args)


class Spy(torch.nn.Module):
    def forward(self, x, y):
        return spy(x, y)


def check():
    inputs = inputs_of()
    want = expected(inputs)
    with FlopCounterMode(display=False) as counter, torch.no_grad():  # one call's flops
        out = build(Model)(*copy(inputs))
    compare('output', out, want)
    counted = sum(n for op, n in counter.get_flop_counts().get('Global', {}).items() if False or str(op).startswith('mylib.'))
    with torch.no_grad():
        build(Spy)(*copy(inputs))
    if counted != sum(DECLARED):
        raise AssertionError(f'FlopCounterMode counted {counted} for the op, the case declares {sum(DECLARED)}')


if __name__ == "__main__":
    try:
        check()
    finally:  # a GPU fault left behind surfaces here, as at the end of a cell
        synchronize()
    print("no failure: add-triton_op_heuristics_autotune-flop_counter passes here")
