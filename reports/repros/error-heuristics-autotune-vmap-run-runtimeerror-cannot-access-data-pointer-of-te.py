"""rmsnorm-heuristics_autotune-vmap: a reproducer written by triton-torch-matrix.
The harness recorded: error at run: Cannot access data pointer of Tensor that doesn't have storage
The same failure in 8 more cell(s) of this style and path: add-heuristics_autotune-vmap, sin-heuristics_autotune-vmap, silu-heuristics_autotune-vmap, softmax-heuristics_autotune-vmap, matmul-heuristics_autotune-vmap, add_inplace-heuristics_autotune-vmap, layernorm-heuristics_autotune-vmap, sin_triton_backward-heuristics_autotune-vmap.
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0; needs no harness.
Run it: it raises the failure while it is there (exit 1), and prints "no failure" once it is fixed (exit 0)."""


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


# ---- the style: heuristics_autotune ----
kernel = triton.heuristics(HEURISTICS)(triton.autotune(configs=CONFIGS, key=KEY)(rmsnorm_kernel))


def rmsnorm(x, weight, eps):
    return launch(kernel, x, weight, eps)


class Model(torch.nn.Module):
    def forward(self, x, weight, eps):
        return rmsnorm(x, weight, eps)


class Reference(torch.nn.Module):
    def forward(self, x, weight, eps):
        return reference(x, weight, eps)


# ---- the path: vmap ----
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
    items = [inputs] + [tuple(b if isinstance(b, torch.Tensor) else a for a, b in zip(inputs, make_inputs(SIZE, DEVICE, SEED + k))) for k in range(1, 3)]
    batched = tuple(torch.stack(v) if isinstance(v[0], torch.Tensor) else v[0] for v in zip(*items))
    in_dims = tuple(0 if isinstance(v, torch.Tensor) else None for v in batched)
    with torch.no_grad():
        out = torch.vmap(model, in_dims=in_dims)(*batched)
    torch.cuda.synchronize() if DEVICE == "cuda" else None  # a fault of the kernel surfaces here
    for one in out if isinstance(out, tuple | list) else (out,):
        if not isinstance(one, torch.Tensor) or one.shape[:1] != (3,):
            raise AssertionError(f"wrong numbers: output: expected 3 items along dim 0, got {getattr(one, 'shape', one)}")
    for k, item in enumerate(items):
        with torch.no_grad():
            expected = reference_model(*copied(item))
        check(f"output of item {k}", tuple(o[k] for o in out) if isinstance(out, tuple | list) else out[k], expected)


if __name__ == "__main__":
    main()
    torch.cuda.synchronize() if torch.cuda.is_initialized() else None  # a GPU fault left behind surfaces
    print("no failure: rmsnorm-heuristics_autotune-vmap passes here")
