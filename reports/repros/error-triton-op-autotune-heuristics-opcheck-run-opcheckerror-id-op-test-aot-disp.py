"""matmul-triton_op_autotune_heuristics-opcheck: a reproducer written by triton-torch-matrix.
The harness recorded: error at run: opcheck(op, ...): test_aot_dispatch_dynamic failed with BooleanAtom not allowed in this context. (scroll up for stack trace)
The same failure in 7 more cell(s) of this style and path: add-triton_op_autotune_heuristics-opcheck, sin-triton_op_autotune_heuristics-opcheck, silu-triton_op_autotune_heuristics-opcheck, softmax-triton_op_autotune_heuristics-opcheck, rmsnorm-triton_op_autotune_heuristics-opcheck, layernorm-triton_op_autotune_heuristics-opcheck, sin_triton_backward-triton_op_autotune_heuristics-opcheck.
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0; needs no harness.
Run it: it raises the failure while it is there (exit 1), and prints "no failure" once it is fixed (exit 0)."""


# ---- the case's own code (cases.matmul) ----

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


CONFIGS = ([
        triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}, num_warps=4, num_stages=2),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64}, num_warps=4, num_stages=3),
    ])
KEY = ["M", "N", "K"]
HEURISTICS = {"EVEN_K": lambda args: args["K"] % MAX_BLOCK_K == 0}
CONFIG_HEURISTICS = {"EVEN_K": lambda args: args["K"] % args["BLOCK_K"] == 0}
backward = lambda inputs, out, grad: (grad @ inputs[1].t(), inputs[0].t() @ grad)


# ---- the style: triton_op_autotune_heuristics ----
kernel = triton.autotune(configs=CONFIGS, key=KEY)(triton.heuristics({**HEURISTICS, **CONFIG_HEURISTICS})(matmul_kernel))


@torch.library.triton_op("mylib::matmul", mutates_args=())
def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return launch(torch.library.wrap_triton(kernel), a, b)


def setup_context(ctx, inputs, output):
    a, b = inputs
    ctx.save_for_backward(a, b, output)


def matmul_gradients(ctx, grad):
    a, b, out = ctx.saved_tensors
    inputs, output = (a, b,), out
    return tuple(backward(inputs, output, grad))


matmul.register_autograd(matmul_gradients, setup_context=setup_context)


class Model(torch.nn.Module):
    def forward(self, a, b):
        return torch.ops.mylib.matmul(a, b)


class Reference(torch.nn.Module):
    def forward(self, a, b):
        return torch.mm(a, b)


# ---- the path: opcheck ----
DEVICE, SIZE, SEED = 'cuda', 157, 0  # the inputs the cell ran
ATOL, RTOL = 0.001, 0.004  # the tolerance for float16


def main():
    torch.manual_seed(0)
    model = Model().to(DEVICE)
    reference_model = Reference().to(DEVICE)
    inputs = make_inputs(SIZE, DEVICE, SEED)
    inputs = tuple(v.detach().requires_grad_(v.is_floating_point() and i not in ()) if isinstance(v, torch.Tensor) else v for i, v in enumerate(inputs))
    torch.library.opcheck(matmul, inputs)


if __name__ == "__main__":
    main()
    torch.cuda.synchronize() if torch.cuda.is_initialized() else None  # a GPU fault left behind surfaces
    print("no failure: matmul-triton_op_autotune_heuristics-opcheck passes here")
