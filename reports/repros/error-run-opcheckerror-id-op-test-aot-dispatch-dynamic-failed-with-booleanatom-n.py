"""silu-triton_op_autotune_heuristics-opcheck: a reproducer written by triton-torch-matrix.

The harness recorded: error at run: OpCheckError: opcheck(op, ...): test_aot_dispatch_dynamic failed with BooleanAtom not allowed in this context. (scroll up for stack trace)
Measured on NVIDIA H100 80GB HBM3, torch 2.11.0+cu130, triton 3.6.0.
The same failure in 7 more cell(s): add-triton_op_autotune_heuristics-opcheck, sin-triton_op_autotune_heuristics-opcheck, softmax-triton_op_autotune_heuristics-opcheck, matmul-triton_op_autotune_heuristics-opcheck, rmsnorm-triton_op_autotune_heuristics-opcheck, layernorm-triton_op_autotune_heuristics-opcheck, sin_triton_backward-triton_op_autotune_heuristics-opcheck.

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

# ---- the case: cases.silu (its kernel, launch and PyTorch reference) ----

import types

Case = types.SimpleNamespace  # the harness's case container: here just the case's own fields

"""The blog's bf16 SiLU kernel, inside the blog's small Linear -> SiLU -> Linear module."""

import math

import torch
import triton
import triton.language as tl


IN_FEATURES, HIDDEN = 128, 64
MAX_BLOCK = 1024


@triton.jit
def silu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr, EVEN: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    if EVEN:
        x = tl.load(x_ptr + offsets)
    else:
        x = tl.load(x_ptr + offsets, mask=mask)
    x_f32 = x.to(tl.float32)  # the math in float32, then back to the input's dtype, as in the blog
    out = (x_f32 * (1.0 / (1.0 + tl.exp(-x_f32)))).to(x.dtype)
    if EVEN:
        tl.store(out_ptr + offsets, out)
    else:
        tl.store(out_ptr + offsets, out, mask=mask)


def launch(kernel, x, **meta):
    out = torch.empty_like(x)
    n_elements = out.numel()
    kernel[lambda m: (triton.cdiv(n_elements, m["BLOCK_SIZE"]),)](x, out, n_elements, **meta)
    return out


def backward(inputs, out, grad):
    x = inputs[0].float()
    sig = torch.sigmoid(x)
    return ((grad.float() * sig * (1 + x * (1 - sig))).to(grad.dtype),)


class SiluMLP(torch.nn.Module):
    """Linear -> SiLU (the op under test) -> Linear, in bf16."""

    def __init__(self, op):
        super().__init__()
        self.linear1 = torch.nn.Linear(IN_FEATURES, HIDDEN, dtype=torch.bfloat16)
        self.linear2 = torch.nn.Linear(HIDDEN, IN_FEATURES, dtype=torch.bfloat16)
        self.op = op

    def forward(self, x):
        return self.linear2(self.op(self.linear1(x).contiguous()))


def make_inputs(batch, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(batch, IN_FEATURES, generator=gen).to(device=device, dtype=torch.bfloat16),)


def module(op):
    return SiluMLP(op)


CASE = Case(
    id="silu",
    kernel=silu_kernel,
    launch=launch,
    reference=torch.nn.functional.silu,
    make_inputs=make_inputs,
    backward=backward,
    flops=lambda x: 4 * math.prod(x),
    arg_names=("x",),
    sizes=(37, 8, 61),
    meta={"BLOCK_SIZE": 256, "EVEN": False},
    configs=[triton.Config({"BLOCK_SIZE": 256}, num_warps=4), triton.Config({"BLOCK_SIZE": 1024}, num_warps=4)],
    key=["n_elements"],
    heuristics={"EVEN": lambda args: args["n_elements"] % MAX_BLOCK == 0},  # no tail, whatever the config
    config_heuristics={"EVEN": lambda args: args["n_elements"] % args["BLOCK_SIZE"] == 0},  # the picked config
    dtype=torch.bfloat16,
    module=module,
)


# ---- the style: triton_op_autotune_heuristics (@triton.autotune over @triton.heuristics kernel in a triton_op) ----

kernel = triton.autotune(configs=CASE.configs, key=['n_elements'])(triton.heuristics({**CASE.heuristics, **CASE.config_heuristics})(CASE.kernel))
META = {}


@torch.library.triton_op('mylib::silu_triton_op_autotune_heuristics', mutates_args=())
def silu_triton_op_autotune_heuristics(x: torch.Tensor) -> torch.Tensor:
    return CASE.launch(torch.library.wrap_triton(kernel), x, **META)


silu_triton_op_autotune_heuristics.register_kernel('cpu')(CASE.reference)


torch.utils.flop_counter.register_flop_formula(torch.ops.mylib.silu_triton_op_autotune_heuristics)(
    lambda *shapes, out_shape=None, **kwargs: CASE.flops(*shapes)
)


def op(x):
    return torch.ops.mylib.silu_triton_op_autotune_heuristics(x)


def Model():
    return CASE.module(op)


def Reference():
    return CASE.module(CASE.reference)


# ---- the path: opcheck ----

DEVICE, SIZE, SEED = 'cuda', 37, 0  # the input the cell failed on
ATOL, RTOL = 0.01, 0.016  # the tolerance for bfloat16
TAKES_GRAD = (True,)  # which arguments are differentiated
SIZES, OTHER_SIZES = (37, 8, 61), (8, 61)


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
    torch.library.opcheck(torch.ops.mylib.silu_triton_op_autotune_heuristics, tuple(inputs))


if __name__ == "__main__":
    try:
        check()
    finally:  # a GPU fault left behind surfaces here, as at the end of a cell
        synchronize()
    print("no failure: silu-triton_op_autotune_heuristics-opcheck passes here")
