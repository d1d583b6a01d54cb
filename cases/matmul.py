"""fp16 matrix multiply with tl.dot, fp32 accumulation, masked edges in M, N and K."""

import torch
import triton
import triton.language as tl

from harness.case import Case

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
    bytes_moved=lambda a, b: (a.numel() + b.numel() + a.shape[0] * b.shape[1]) * a.element_size(),
    sizes=(157, 64, 300),
    bandwidth_size=1 << 19,  # rows of a (203 halves) times 203x131: ~80 flops a byte, below the H200's ridge
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
