"""add-autotune_heuristics-subclass_eager: a reproducer written by triton-torch-matrix.
The harness recorded: error at run: CUDA error: an illegal memory access was encountered
The same failure in 8 more cell(s) of this style and path: sin-autotune_heuristics-subclass_eager, silu-autotune_heuristics-subclass_eager, softmax-autotune_heuristics-subclass_eager, matmul-autotune_heuristics-subclass_eager, add_inplace-autotune_heuristics-subclass_eager, rmsnorm-autotune_heuristics-subclass_eager, layernorm-autotune_heuristics-subclass_eager, sin_triton_backward-autotune_heuristics-subclass_eager.
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0; needs no harness.
Run it: it raises the failure while it is there (exit 1), and prints "no failure" once it is fixed (exit 0)."""


from torch.testing._internal.two_tensor import TwoTensor


# ---- the case's own code (cases.add) ----

import torch
import triton
import triton.language as tl

MAX_BLOCK = 1024  # every block size below divides it, so n % MAX_BLOCK == 0 means no tail


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
HEURISTICS = {"EVEN": lambda args: args["n_elements"] % MAX_BLOCK == 0}
CONFIG_HEURISTICS = {"EVEN": lambda args: args["n_elements"] % args["BLOCK_SIZE"] == 0}


# ---- the style: autotune_heuristics ----
kernel = triton.autotune(configs=CONFIGS, key=KEY)(triton.heuristics({**HEURISTICS, **CONFIG_HEURISTICS})(add_kernel))


def add(x, y):
    return launch(kernel, x, y)


class Model(torch.nn.Module):
    def forward(self, x, y):
        return add(x, y)


class Reference(torch.nn.Module):
    def forward(self, x, y):
        return torch.add(x, y)


# ---- the path: subclass_eager ----
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
    with torch.no_grad():
        expected = reference_model(*copied(inputs))
    second = tuple(b if isinstance(b, torch.Tensor) else a for a, b in zip(inputs, make_inputs(SIZE, DEVICE, SEED + 1)))
    with torch.no_grad():
        expected_b = reference_model(*copied(second))
    both = tuple(TwoTensor(*copied((a, b))) if isinstance(a, torch.Tensor) else a for a, b in zip(inputs, second))
    with torch.no_grad():
        out = model(*both)
    torch.cuda.synchronize() if DEVICE == "cuda" else None  # a fault of the kernel surfaces here
    outs = out if isinstance(out, tuple | list) else (out,)
    several = isinstance(out, tuple | list)
    for i, one in enumerate(outs):
        if not isinstance(one, TwoTensor):
            what = f"output {i}" if several else "output"
            raise AssertionError(f"wrong numbers: {what}: expected a TwoTensor, got {type(one).__name__}")
    check("output .a", tuple(o.a for o in outs) if several else out.a, expected)
    check("output .b", tuple(o.b for o in outs) if several else out.b, expected_b)


if __name__ == "__main__":
    main()
    torch.cuda.synchronize() if torch.cuda.is_initialized() else None  # a GPU fault left behind surfaces
    print("no failure: add-autotune_heuristics-subclass_eager passes here")
