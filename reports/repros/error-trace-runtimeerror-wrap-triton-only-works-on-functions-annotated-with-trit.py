"""matmul-triton_op_heuristics_autotune-aoti_nonstrict: a reproducer written by triton-torch-matrix.

The harness recorded: error at trace: RuntimeError: wrap_triton only works on functions annotated with triton.jit or triton.autotune
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0.
The same failure in 26 more cell(s): add-triton_op_heuristics_autotune-export_nonstrict, add-triton_op_heuristics_autotune-aoti_nonstrict, add-triton_op_heuristics_autotune-export_dynamic_nonstrict, sin-triton_op_heuristics_autotune-export_nonstrict, sin-triton_op_heuristics_autotune-aoti_nonstrict, sin-triton_op_heuristics_autotune-export_dynamic_nonstrict, silu-triton_op_heuristics_autotune-export_nonstrict, silu-triton_op_heuristics_autotune-aoti_nonstrict, silu-triton_op_heuristics_autotune-export_dynamic_nonstrict, softmax-triton_op_heuristics_autotune-export_nonstrict, softmax-triton_op_heuristics_autotune-aoti_nonstrict, softmax-triton_op_heuristics_autotune-export_dynamic_nonstrict, matmul-triton_op_heuristics_autotune-export_nonstrict, matmul-triton_op_heuristics_autotune-export_dynamic_nonstrict, add_inplace-triton_op_heuristics_autotune-export_nonstrict, add_inplace-triton_op_heuristics_autotune-aoti_nonstrict, add_inplace-triton_op_heuristics_autotune-export_dynamic_nonstrict, rmsnorm-triton_op_heuristics_autotune-export_nonstrict, rmsnorm-triton_op_heuristics_autotune-aoti_nonstrict, rmsnorm-triton_op_heuristics_autotune-export_dynamic_nonstrict, layernorm-triton_op_heuristics_autotune-export_nonstrict, layernorm-triton_op_heuristics_autotune-aoti_nonstrict, layernorm-triton_op_heuristics_autotune-export_dynamic_nonstrict, sin_triton_backward-triton_op_heuristics_autotune-export_nonstrict, sin_triton_backward-triton_op_heuristics_autotune-aoti_nonstrict, sin_triton_backward-triton_op_heuristics_autotune-export_dynamic_nonstrict.

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

# ---- the case: cases.matmul (its kernel, launch and PyTorch reference) ----

import types

Case = types.SimpleNamespace  # the harness's case container: here just the case's own fields

"""fp16 matrix multiply with tl.dot, fp32 accumulation, masked edges in M, N and K."""

import torch
import triton
import triton.language as tl


MAX_BLOCK_K = 64  # every BLOCK_K below divides it


@triton.jit
def matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    EVEN_K: tl.constexpr,
):
    pid_m = tl.program_id(axis=0)
    pid_n = tl.program_id(axis=1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        ks = k * BLOCK_K + rk
        a_ptrs = a_ptr + rm[:, None] * stride_am + ks[None, :] * stride_ak
        b_ptrs = b_ptr + ks[:, None] * stride_bk + rn[None, :] * stride_bn
        if EVEN_K:
            a = tl.load(a_ptrs, mask=rm[:, None] < M, other=0.0)
            b = tl.load(b_ptrs, mask=rn[None, :] < N, other=0.0)
        else:
            a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0)
            b = tl.load(b_ptrs, mask=(ks[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def launch(kernel, a, b, **meta):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    grid = lambda m: (triton.cdiv(M, m["BLOCK_M"]), triton.cdiv(N, m["BLOCK_N"]))  # noqa: E731
    kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1), **meta)
    return c


def make_inputs(m, device, seed):
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(m, 203, generator=gen).to(device=device, dtype=torch.float16)
    b = torch.randn(203, 131, generator=gen).to(device=device, dtype=torch.float16)
    return a, b


CASE = Case(
    id="matmul",
    kernel=matmul_kernel,
    launch=launch,
    reference=torch.mm,
    make_inputs=make_inputs,
    backward=lambda inputs, out, grad: (grad @ inputs[1].t(), inputs[0].t() @ grad),
    flops=lambda a, b: 2 * a[0] * a[1] * b[1],
    arg_names=("a", "b"),
    sizes=(157, 64, 300),
    meta={"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "EVEN_K": False},
    configs=[
        triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}, num_warps=4, num_stages=2),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64}, num_warps=4, num_stages=3),
    ],
    key=["M", "N", "K"],
    heuristics={"EVEN_K": lambda args: args["K"] % MAX_BLOCK_K == 0},  # no K tail, whatever the config
    config_heuristics={"EVEN_K": lambda args: args["K"] % args["BLOCK_K"] == 0},  # the picked config
    dtype=torch.float16,
    dynamic_dims=((0,), ()),  # the size is M, the rows of a; b is (K, N), fixed
)


# ---- the style: triton_op_heuristics_autotune (@triton.heuristics over @triton.autotune kernel in a triton_op) ----

kernel = triton.heuristics(CASE.heuristics)(triton.autotune(configs=CASE.configs, key=['M', 'N', 'K'])(CASE.kernel))
META = {}


@torch.library.triton_op('mylib::matmul_triton_op_heuristics_autotune', mutates_args=())
def matmul_triton_op_heuristics_autotune(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return CASE.launch(torch.library.wrap_triton(kernel), a, b, **META)


matmul_triton_op_heuristics_autotune.register_kernel('cpu')(CASE.reference)


torch.utils.flop_counter.register_flop_formula(torch.ops.mylib.matmul_triton_op_heuristics_autotune)(
    lambda *shapes, out_shape=None, **kwargs: CASE.flops(*shapes)
)


class Model(torch.nn.Module):
    def forward(self, a, b):
        return torch.ops.mylib.matmul_triton_op_heuristics_autotune(a, b)


class Reference(torch.nn.Module):
    def forward(self, a, b):
        return CASE.reference(a, b)


# ---- the path: aoti_nonstrict ----

DEVICE, SIZE, SEED = 'cuda', 157, 0  # the input the cell failed on
ATOL, RTOL = 0.001, 0.004  # the tolerance for float16
TAKES_GRAD = (True, True)  # which arguments are differentiated
SIZES, OTHER_SIZES = (157, 64, 300), (64, 300)


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
    print("no failure: matmul-triton_op_heuristics_autotune-aoti_nonstrict passes here")
