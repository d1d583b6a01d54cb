"""sin-triton_op_autotune_heuristics-aoti_dynamic: a reproducer written by triton-torch-matrix.

The harness recorded: error at compile: InductorError: RuntimeError: Failed to run autotuning code block: An exception occurred in a subprocess:
Measured on NVIDIA H100 80GB HBM3, torch 2.11.0+cu130, triton 3.6.0.
The same failure in 3 more cell(s): add-triton_op_autotune_heuristics-aoti_dynamic, silu-triton_op_autotune_heuristics-aoti_dynamic, sin_triton_backward-triton_op_autotune_heuristics-aoti_dynamic.

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


# ---- the style: triton_op_autotune_heuristics (@triton.autotune over @triton.heuristics kernel in a triton_op) ----

kernel = triton.autotune(configs=CASE.configs, key=['n_elements'])(triton.heuristics({**CASE.heuristics, **CASE.config_heuristics})(CASE.kernel))
META = {}


@torch.library.triton_op('mylib::sin_triton_op_autotune_heuristics', mutates_args=())
def sin_triton_op_autotune_heuristics(x: torch.Tensor) -> torch.Tensor:
    return CASE.launch(torch.library.wrap_triton(kernel), x, **META)


sin_triton_op_autotune_heuristics.register_kernel('cpu')(CASE.reference)


torch.utils.flop_counter.register_flop_formula(torch.ops.mylib.sin_triton_op_autotune_heuristics)(
    lambda *shapes, out_shape=None, **kwargs: CASE.flops(*shapes)
)


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.ops.mylib.sin_triton_op_autotune_heuristics(x)


class Reference(torch.nn.Module):
    def forward(self, x):
        return CASE.reference(x)


# ---- the path: aoti_dynamic ----

DEVICE, SIZE, SEED = 'cuda', 3001, 0  # the input the cell failed on
ATOL, RTOL = 1e-05, 1e-05  # the tolerance for float32
TAKES_GRAD = (True,)  # which arguments are differentiated
SIZES, OTHER_SIZES = (3001, 1000, 5003), (1000, 5003)
size = torch.export.Dim("size", min=1, max=10006)
DYNAMIC = ({0: size},)


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
    program = torch.export.export(build(Model).eval(), copy(inputs), dynamic_shapes=DYNAMIC, strict=True)
    package = torch._inductor.aoti_compile_and_package(program, package_path=tempfile.mktemp(".pt2"))
    runner = torch._inductor.aoti_load_package(package)
    infer(f'output at traced size {SIZE}', runner, inputs)
    for size in OTHER_SIZES:
        infer(f'output at size {size}', runner, inputs_of(size))


if __name__ == "__main__":
    try:
        check()
    finally:  # a GPU fault left behind surfaces here, as at the end of a cell
        synchronize()
    print("no failure: sin-triton_op_autotune_heuristics-aoti_dynamic passes here")
