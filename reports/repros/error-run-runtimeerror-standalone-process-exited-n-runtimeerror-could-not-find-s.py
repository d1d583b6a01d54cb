"""softmax-custom_op_autotune-aoti_standalone: a reproducer written by triton-torch-matrix.

The harness recorded: error at run: RuntimeError: standalone process exited 1: RuntimeError: Could not find schema for harness::softmax_custom_op_autotune.
Measured on NVIDIA H100 80GB HBM3, torch 2.11.0+cu130, triton 3.6.0.
The same failure in 35 more cell(s): add-custom_op-aoti_standalone, add-custom_op_autotune-aoti_standalone, add-custom_op_heuristics_autotune-aoti_standalone, add-custom_op_autotune_heuristics-aoti_standalone, sin-custom_op-aoti_standalone, sin-custom_op_autotune-aoti_standalone, sin-custom_op_heuristics_autotune-aoti_standalone, sin-custom_op_autotune_heuristics-aoti_standalone, silu-custom_op-aoti_standalone, silu-custom_op_autotune-aoti_standalone, silu-custom_op_heuristics_autotune-aoti_standalone, silu-custom_op_autotune_heuristics-aoti_standalone, softmax-custom_op-aoti_standalone, softmax-custom_op_heuristics_autotune-aoti_standalone, softmax-custom_op_autotune_heuristics-aoti_standalone, matmul-custom_op-aoti_standalone, matmul-custom_op_autotune-aoti_standalone, matmul-custom_op_heuristics_autotune-aoti_standalone, matmul-custom_op_autotune_heuristics-aoti_standalone, add_inplace-custom_op-aoti_standalone, add_inplace-custom_op_autotune-aoti_standalone, add_inplace-custom_op_heuristics_autotune-aoti_standalone, add_inplace-custom_op_autotune_heuristics-aoti_standalone, rmsnorm-custom_op-aoti_standalone, rmsnorm-custom_op_autotune-aoti_standalone, rmsnorm-custom_op_heuristics_autotune-aoti_standalone, rmsnorm-custom_op_autotune_heuristics-aoti_standalone, layernorm-custom_op-aoti_standalone, layernorm-custom_op_autotune-aoti_standalone, layernorm-custom_op_heuristics_autotune-aoti_standalone, layernorm-custom_op_autotune_heuristics-aoti_standalone, sin_triton_backward-custom_op-aoti_standalone, sin_triton_backward-custom_op_autotune-aoti_standalone, sin_triton_backward-custom_op_heuristics_autotune-aoti_standalone, sin_triton_backward-custom_op_autotune_heuristics-aoti_standalone.

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


# ---- the style: custom_op_autotune (@triton.autotune kernel in a custom_op) ----

kernel = triton.autotune(configs=CASE.configs, key=['n_cols'])(CASE.kernel)
META = {'EVEN': False}


@torch.library.custom_op('mylib::softmax_custom_op_autotune', mutates_args=())
def softmax_custom_op_autotune(x: torch.Tensor) -> torch.Tensor:
    return CASE.launch(kernel, x, **META)


@softmax_custom_op_autotune.register_fake
def _(x):
    return CASE.reference(x)


softmax_custom_op_autotune.register_kernel('cpu')(CASE.reference)


torch.utils.flop_counter.register_flop_formula(torch.ops.mylib.softmax_custom_op_autotune)(
    lambda *shapes, out_shape=None, **kwargs: CASE.flops(*shapes)
)


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.ops.mylib.softmax_custom_op_autotune(x)


class Reference(torch.nn.Module):
    def forward(self, x):
        return CASE.reference(x)


# ---- the path: aoti_standalone ----

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


def standalone(package):  # a fresh process that imports torch only loads the package and runs it
    def run(*inputs):
        folder = tempfile.mkdtemp()
        torch.save(list(inputs), f"{folder}/in.pt")
        code = ("import sys, torch; inputs = torch.load(sys.argv[2])"
                "; runner = torch._inductor.aoti_load_package(sys.argv[1])"
                "; torch.save(runner(*inputs), sys.argv[3])")
        done = subprocess.run([sys.executable, "-c", code, package, f"{folder}/in.pt", f"{folder}/out.pt"])
        if done.returncode:
            raise RuntimeError(f"standalone process exited {done.returncode}")
        return torch.load(f"{folder}/out.pt")
    return run


def check():
    inputs = inputs_of()
    program = torch.export.export(build(Model).eval(), copy(inputs), strict=True)
    package = torch._inductor.aoti_compile_and_package(program, package_path=tempfile.mktemp(".pt2"))
    infer('output', standalone(package), inputs)


if __name__ == "__main__":
    try:
        check()
    finally:  # a GPU fault left behind surfaces here, as at the end of a cell
        synchronize()
    print("no failure: softmax-custom_op_autotune-aoti_standalone passes here")
