"""add-triton_op_heuristics_autotune-flop_counter: a reproducer written by triton-torch-matrix.
The harness recorded: error at run: wrap_triton only works on functions annotated with triton.jit or triton.autotune
The same failure in 8 more cell(s) of this style and path: sin-triton_op_heuristics_autotune-flop_counter, silu-triton_op_heuristics_autotune-flop_counter, softmax-triton_op_heuristics_autotune-flop_counter, matmul-triton_op_heuristics_autotune-flop_counter, add_inplace-triton_op_heuristics_autotune-flop_counter, rmsnorm-triton_op_heuristics_autotune-flop_counter, layernorm-triton_op_heuristics_autotune-flop_counter, sin_triton_backward-triton_op_heuristics_autotune-flop_counter.
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0; needs no harness.
Run it: it raises the failure while it is there (exit 1), and prints "no failure" once it is fixed (exit 0)."""


from torch.utils.flop_counter import FlopCounterMode
from torch.utils.flop_counter import register_flop_formula


# ---- the case's own code (cases.add) ----

import math
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


flops = lambda x, y: math.prod(x)
CONFIGS = [triton.Config({"BLOCK_SIZE": 256}, num_warps=4), triton.Config({"BLOCK_SIZE": 1024}, num_warps=8)]
KEY = ["n_elements"]
HEURISTICS = {"EVEN": lambda args: args["n_elements"] % MAX_BLOCK == 0}


# ---- the style: triton_op_heuristics_autotune ----
kernel = triton.heuristics(HEURISTICS)(triton.autotune(configs=CONFIGS, key=KEY)(add_kernel))


@torch.library.triton_op("mylib::add", mutates_args=())
def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return launch(torch.library.wrap_triton(kernel), x, y)


register_flop_formula(torch.ops.mylib.add)(
    lambda *shapes, out_shape=None, **kwargs: flops(*shapes))


class Model(torch.nn.Module):
    def forward(self, x, y):
        return torch.ops.mylib.add(x, y)


class Reference(torch.nn.Module):
    def forward(self, x, y):
        return torch.add(x, y)


# ---- the path: flop_counter ----
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


def counted_as_declared(counted, declared):  # FlopCounterMode's count against the case's formula
    if counted != declared:
        raise AssertionError(f"FlopCounterMode counted {counted} for the op, the case declares {declared}")


def main():
    torch.manual_seed(0)
    model = Model().to(DEVICE)
    reference_model = Reference().to(DEVICE)
    inputs = make_inputs(SIZE, DEVICE, SEED)
    with torch.no_grad():
        expected = reference_model(*copied(inputs))
    counter = FlopCounterMode(display=False)
    with counter:
        with torch.no_grad():
            out = model(*copied(inputs))
        check("output", out, expected)
    counts = counter.get_flop_counts().get("Global", {})
    counted = sum(n for op, n in counts.items() if str(op).startswith('mylib.'))
    declared = 0

    def spy(*args):  # the case's formula over the shapes the op is called with
        nonlocal declared
        declared += flops(*(tuple(a.shape) if isinstance(a, torch.Tensor) else a for a in args))
        return torch.add(*args)

    with torch.no_grad():
        spy(*copied(inputs))
    counted_as_declared(counted, declared)


if __name__ == "__main__":
    main()
    torch.cuda.synchronize() if torch.cuda.is_initialized() else None  # a GPU fault left behind surfaces
    print("no failure: add-triton_op_heuristics_autotune-flop_counter passes here")
