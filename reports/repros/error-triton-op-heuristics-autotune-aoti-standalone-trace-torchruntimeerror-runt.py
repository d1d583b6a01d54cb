"""rmsnorm-triton_op_heuristics_autotune-aoti_standalone: a reproducer written by triton-torch-matrix.
The harness recorded: error at trace: RuntimeError when making fake tensor call
The same failure in 8 more cell(s) of this style and path: add-triton_op_heuristics_autotune-aoti_standalone, sin-triton_op_heuristics_autotune-aoti_standalone, silu-triton_op_heuristics_autotune-aoti_standalone, softmax-triton_op_heuristics_autotune-aoti_standalone, matmul-triton_op_heuristics_autotune-aoti_standalone, add_inplace-triton_op_heuristics_autotune-aoti_standalone, layernorm-triton_op_heuristics_autotune-aoti_standalone, sin_triton_backward-triton_op_heuristics_autotune-aoti_standalone.
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0; needs no harness.
Run it: it raises the failure while it is there (exit 1), and prints "no failure" once it is fixed (exit 0)."""


import os
import subprocess
import sys
import tempfile


# ---- the case's own code (cases.rmsnorm) ----

import torch
import triton
import triton.language as tl

N_COLS = 1000


@triton.jit
def rmsnorm_kernel(
    x_ptr, x_row_stride, w_ptr, y_ptr, y_row_stride, rstd_ptr, n_cols, eps, BLOCK_SIZE: tl.constexpr, EVEN: tl.constexpr
):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    if EVEN:
        x = tl.load(x_ptr + row * x_row_stride + cols).to(tl.float32)
        w = tl.load(w_ptr + cols).to(tl.float32)
    else:
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(rstd_ptr + row, rstd)
    y = (x * rstd * w).to(y_ptr.dtype.element_ty)
    if EVEN:
        tl.store(y_ptr + row * y_row_stride + cols, y)
    else:
        tl.store(y_ptr + row * y_row_stride + cols, y, mask=cols < n_cols)


def launch(kernel, x, weight, eps, **meta):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    rstd = torch.empty(n_rows, device=x.device, dtype=torch.float32)
    block = triton.next_power_of_2(n_cols)
    kernel[(n_rows,)](x, x.stride(0), weight, y, y.stride(0), rstd, n_cols, eps, BLOCK_SIZE=block, **meta)
    return y, rstd


def reference(x, weight, eps):
    rstd = torch.rsqrt(x.pow(2).mean(dim=-1) + eps)
    return x * rstd[:, None] * weight, rstd


def make_inputs(rows, device, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, N_COLS, generator=gen)
    weight = 1 + 0.1 * torch.randn(N_COLS, generator=gen)
    return x.to(device), weight.to(device), 1e-6


CONFIGS = [triton.Config({}, num_warps=4), triton.Config({}, num_warps=8)]
KEY = ["n_cols"]
HEURISTICS = {"EVEN": lambda args: args["n_cols"] == args["BLOCK_SIZE"]}


# ---- the style: triton_op_heuristics_autotune ----
kernel = triton.heuristics(HEURISTICS)(triton.autotune(configs=CONFIGS, key=KEY)(rmsnorm_kernel))


@torch.library.triton_op("mylib::rmsnorm", mutates_args=())
def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    return launch(torch.library.wrap_triton(kernel), x, weight, eps)


class Model(torch.nn.Module):
    def forward(self, x, weight, eps):
        return torch.ops.mylib.rmsnorm(x, weight, eps)


class Reference(torch.nn.Module):
    def forward(self, x, weight, eps):
        return reference(x, weight, eps)


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
    print("no failure: rmsnorm-triton_op_heuristics_autotune-aoti_standalone passes here")
