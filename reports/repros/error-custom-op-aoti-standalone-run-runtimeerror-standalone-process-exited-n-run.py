"""matmul-custom_op-aoti_standalone: a reproducer written by triton-torch-matrix.
The harness recorded: error at run: standalone process exited 1: RuntimeError: Could not find schema for harness::matmul_custom_op.
The same failure in 8 more cell(s) of this style and path: add-custom_op-aoti_standalone, sin-custom_op-aoti_standalone, silu-custom_op-aoti_standalone, softmax-custom_op-aoti_standalone, add_inplace-custom_op-aoti_standalone, rmsnorm-custom_op-aoti_standalone, layernorm-custom_op-aoti_standalone, sin_triton_backward-custom_op-aoti_standalone.
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0; needs no harness.
Run it: it raises the failure while it is there (exit 1), and prints "no failure" once it is fixed (exit 0)."""


import os
import subprocess
import sys
import tempfile


# ---- the case's own code (cases.matmul) ----

import torch
import triton
import triton.language as tl


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


# ---- the style: custom_op ----
@torch.library.custom_op("mylib::matmul", mutates_args=())
def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return launch(matmul_kernel, a, b, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, EVEN_K=False)


@matmul.register_fake
def _(a, b):
    return torch.mm(a, b)


class Model(torch.nn.Module):
    def forward(self, a, b):
        return torch.ops.mylib.matmul(a, b)


class Reference(torch.nn.Module):
    def forward(self, a, b):
        return torch.mm(a, b)


# ---- the path: aoti_standalone ----
DEVICE, SIZE, SEED = 'cuda', 157, 0  # the inputs the cell ran
ATOL, RTOL = 0.001, 0.004  # the tolerance for float16


def copied(inputs):  # fresh copies of the tensors for every call, their strides kept
    return tuple((v.detach().clone() if v.is_contiguous() or 0 in v.stride() else torch.empty_strided(
        v.shape, v.stride(), dtype=v.dtype, device=v.device).copy_(v)) if isinstance(v, torch.Tensor) else v
        for v in inputs)


def check(what, out, expected):  # every output against the reference's, on the CPU
    cpu = lambda v: tuple(map(cpu, v)) if isinstance(v, tuple | list) else v.detach().cpu() if torch.is_tensor(v) else v
    try:
        torch.testing.assert_close(cpu(out), cpu(expected), atol=ATOL, rtol=RTOL)
    except AssertionError as error:
        raise AssertionError(f"wrong numbers: {what}: {' '.join(str(error).split())}") from None


def main():
    torch.manual_seed(0)
    model = Model().to(DEVICE)
    reference_model = Reference().to(DEVICE)
    inputs = make_inputs(SIZE, DEVICE, SEED)
    with torch.no_grad():
        expected = reference_model(*copied(inputs))
    model.eval()
    program = torch.export.export(model, copied(inputs), strict=True)
    package = torch._inductor.aoti_compile_and_package(program, package_path=os.path.join(tempfile.mkdtemp(), "model.pt2"))
    folder = tempfile.mkdtemp()  # a fresh process that imports torch only loads and runs the package
    torch.save(list(inputs), f"{folder}/in.pt")
    done = subprocess.run([sys.executable, "-c", "import sys, torch, torch._inductor.package; runner = torch._inductor.aoti_load_package(sys.argv[1]); torch.save(runner(*torch.load(sys.argv[2])), sys.argv[3])", package, f"{folder}/in.pt",
                           f"{folder}/out.pt"], capture_output=True, text=True)
    if done.returncode < 0:
        os.kill(os.getpid(), -done.returncode)  # it died of a signal: so do we
    if done.returncode:
        said = (done.stderr.strip().splitlines() or ['(nothing on stderr)'])[-1]
        raise RuntimeError(f"standalone process exited {done.returncode}: {said}")
    check("output", torch.load(f"{folder}/out.pt"), expected)


if __name__ == "__main__":
    main()
    torch.cuda.synchronize() if torch.cuda.is_initialized() else None  # a GPU fault left behind surfaces
    print("no failure: matmul-custom_op-aoti_standalone passes here")
