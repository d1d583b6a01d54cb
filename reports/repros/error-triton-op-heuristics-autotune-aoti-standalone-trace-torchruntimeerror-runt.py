"""layernorm-triton_op_heuristics_autotune-aoti_standalone: a reproducer written by triton-torch-matrix.
The harness recorded: error at trace: RuntimeError when making fake tensor call
The same failure in 8 more cell(s) of this style and path: add-triton_op_heuristics_autotune-aoti_standalone, sin-triton_op_heuristics_autotune-aoti_standalone, silu-triton_op_heuristics_autotune-aoti_standalone, softmax-triton_op_heuristics_autotune-aoti_standalone, matmul-triton_op_heuristics_autotune-aoti_standalone, add_inplace-triton_op_heuristics_autotune-aoti_standalone, rmsnorm-triton_op_heuristics_autotune-aoti_standalone, sin_triton_backward-triton_op_heuristics_autotune-aoti_standalone.
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0; needs no harness.
Run it: it raises the failure while it is there (exit 1), and prints "no failure" once it is fixed (exit 0)."""


from typing import Optional
import os
import subprocess
import sys
import tempfile


# ---- the case's own code (cases.layernorm) ----

import torch
import triton
import triton.language as tl

N_COLS, ROW_STRIDE = 768, 1024
MAX_BLOCK = 1024  # every block size below divides it


@triton.jit
def layernorm_kernel(
    x_ptr,
    y_ptr,
    w_ptr,
    b_ptr,
    mean_ptr,
    rstd_ptr,
    x_row_stride,
    y_row_stride,
    N,
    eps,
    HAS_BIAS: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    EVEN: tl.constexpr,
):
    row = tl.program_id(axis=0)
    x_ptr += row * x_row_stride
    y_ptr += row * y_row_stride
    total = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for offset in range(0, N, BLOCK_SIZE):
        cols = offset + tl.arange(0, BLOCK_SIZE)
        if EVEN:
            total += tl.load(x_ptr + cols).to(tl.float32)
        else:
            total += tl.load(x_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
    mean = tl.sum(total, axis=0) / N
    squares = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for offset in range(0, N, BLOCK_SIZE):
        cols = offset + tl.arange(0, BLOCK_SIZE)
        if EVEN:
            centered = tl.load(x_ptr + cols).to(tl.float32) - mean
        else:
            x = tl.load(x_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
            centered = tl.where(cols < N, x - mean, 0.0)
        squares += centered * centered
    rstd = 1 / tl.sqrt(tl.sum(squares, axis=0) / N + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    for offset in range(0, N, BLOCK_SIZE):
        cols = offset + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(w_ptr + cols, mask=mask)
        x = tl.load(x_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w
        if HAS_BIAS:
            y += tl.load(b_ptr + cols, mask=mask)
        tl.store(y_ptr + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def launch(kernel, x, weight, bias, eps, **meta):
    n_rows, n_cols = x.shape
    y = torch.empty((n_rows, n_cols), device=x.device, dtype=x.dtype)
    mean = torch.empty(n_rows, device=x.device, dtype=torch.float32)
    rstd = torch.empty(n_rows, device=x.device, dtype=torch.float32)
    has_bias = bias is not None
    kernel[(n_rows,)](
        x,
        y,
        weight,
        bias if has_bias else weight,  # never read without a bias: HAS_BIAS is false
        mean,
        rstd,
        x.stride(0),
        y.stride(0),
        n_cols,
        eps,
        HAS_BIAS=has_bias,
        **meta,
    )
    return y, mean, rstd


def reference(x, weight, bias, eps):
    mean = x.mean(dim=-1)
    centered = x - mean[:, None]
    rstd = torch.rsqrt(centered.pow(2).mean(dim=-1) + eps)
    y = centered * rstd[:, None] * weight
    return (y if bias is None else y + bias), mean, rstd


def make_inputs(rows, device, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, ROW_STRIDE, generator=gen).to(device)[:, :N_COLS]  # a view: rows ROW_STRIDE apart
    weight = 1 + 0.1 * torch.randn(N_COLS, generator=gen)
    return x, weight.to(device), None, 1e-5


CONFIGS = [triton.Config({"BLOCK_SIZE": 256}, num_warps=4), triton.Config({"BLOCK_SIZE": 1024}, num_warps=8)]
KEY = ["N"]
HEURISTICS = {"EVEN": lambda args: args["N"] % MAX_BLOCK == 0}


# ---- the style: triton_op_heuristics_autotune ----
kernel = triton.heuristics(HEURISTICS)(triton.autotune(configs=CONFIGS, key=KEY)(layernorm_kernel))


@torch.library.triton_op("mylib::layernorm", mutates_args=())
def layernorm(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], eps: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return launch(torch.library.wrap_triton(kernel), x, weight, bias, eps)


class Model(torch.nn.Module):
    def forward(self, x, weight, bias, eps):
        return torch.ops.mylib.layernorm(x, weight, bias, eps)


class Reference(torch.nn.Module):
    def forward(self, x, weight, bias, eps):
        return reference(x, weight, bias, eps)


# ---- the path: aoti_standalone ----
DEVICE, SIZE, SEED = 'cuda', 67, 0  # the inputs the cell ran
ATOL, RTOL = 1e-05, 1e-05  # the tolerance for float32


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
    print("no failure: layernorm-triton_op_heuristics_autotune-aoti_standalone passes here")
