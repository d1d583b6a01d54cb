"""add-autotune-vmap: a reproducer written by triton-torch-matrix.
The harness recorded: error at run: Cannot access data pointer of Tensor that doesn't have storage
The same failure in 8 more cell(s) of this style and path: sin-autotune-vmap, silu-autotune-vmap, softmax-autotune-vmap, matmul-autotune-vmap, add_inplace-autotune-vmap, rmsnorm-autotune-vmap, layernorm-autotune-vmap, sin_triton_backward-autotune-vmap.
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0; needs no harness.
Run it: it raises the failure while it is there (exit 1), and prints "no failure" once it is fixed (exit 0)."""


# ---- the case's own code (cases.add) ----

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr, EVEN: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    if EVEN:
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets) + tl.load(y_ptr + offsets))
    else:
        mask = offsets < n_elements
        x = tl.load(x_ptr + offsets, mask=mask)
        y = tl.load(y_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, x + y, mask=mask)


def launch(kernel, x, y, **meta):
    out = torch.empty_like(x)
    n_elements = out.numel()
    kernel[lambda m: (triton.cdiv(n_elements, m["BLOCK_SIZE"]),)](x, y, out, n_elements, **meta)
    return out


def make_inputs(size, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(size, generator=gen).to(device) for _ in range(2))


CONFIGS = [triton.Config({"BLOCK_SIZE": 256}, num_warps=4), triton.Config({"BLOCK_SIZE": 1024}, num_warps=8)]
KEY = ["n_elements"]


# ---- the style: autotune ----
kernel = triton.autotune(configs=CONFIGS, key=KEY)(add_kernel)


def add(x, y):
    return launch(kernel, x, y, EVEN=False)


class Model(torch.nn.Module):
    def forward(self, x, y):
        return add(x, y)


class Reference(torch.nn.Module):
    def forward(self, x, y):
        return torch.add(x, y)


# ---- the path: vmap ----
DEVICE, SIZE, SEED = 'cuda', 3001, 0  # the inputs the cell ran
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
    def stacked(v):  # along a new dim 0, each item keeping its dim order in memory (a transposed one stays so)
        order = sorted(range(v[0].dim()), key=lambda d: -v[0].stride(d))
        batch = torch.stack([t.permute(order) for t in v])
        return batch.permute(0, *(order.index(d) + 1 for d in range(v[0].dim())))
    batched = tuple(stacked(v) if isinstance(v[0], torch.Tensor) else v[0] for v in zip(*items))
    in_dims = tuple(0 if isinstance(v, torch.Tensor) else None for v in batched)
    with torch.no_grad():
        out = torch.vmap(model, in_dims=in_dims)(*batched)
    torch.cuda.synchronize() if DEVICE == "cuda" else None  # a fault of the kernel surfaces here
    for one in out if isinstance(out, tuple | list) else (out,):
        if not isinstance(one, torch.Tensor) or one.shape[:1] != (3,):
            got = f"shape {tuple(one.shape)}" if isinstance(one, torch.Tensor) else type(one).__name__
            raise AssertionError(f"wrong numbers: output: expected 3 items along dim 0, got {got}")
    for k, item in enumerate(items):
        with torch.no_grad():
            expected = reference_model(*copied(item))
        check(f"output of item {k}", tuple(o[k] for o in out) if isinstance(out, tuple | list) else out[k], expected)


if __name__ == "__main__":
    main()
    torch.cuda.synchronize() if torch.cuda.is_initialized() else None  # a GPU fault left behind surfaces
    print("no failure: add-autotune-vmap passes here")
