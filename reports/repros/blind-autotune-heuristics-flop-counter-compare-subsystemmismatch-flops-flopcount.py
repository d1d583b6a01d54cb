"""sin-autotune_heuristics-flop_counter: a reproducer written by triton-torch-matrix.
The harness recorded: blind at compare: flops: FlopCounterMode counted 0 for the op, the case declares 1
The same failure in 8 more cell(s) of this style and path: add-autotune_heuristics-flop_counter, silu-autotune_heuristics-flop_counter, softmax-autotune_heuristics-flop_counter, matmul-autotune_heuristics-flop_counter, add_inplace-autotune_heuristics-flop_counter, rmsnorm-autotune_heuristics-flop_counter, layernorm-autotune_heuristics-flop_counter, sin_triton_backward-autotune_heuristics-flop_counter.
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0; needs no harness.
Run it: it raises the failure while it is there (exit 1), and prints "no failure" once it is fixed (exit 0)."""


from torch.utils.flop_counter import FlopCounterMode


# ---- the case's own code (cases.sin) ----

import math
import torch
import triton
import triton.language as tl

MAX_BLOCK = 1024


@triton.jit
def sin_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr, EVEN: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    if EVEN:
        tl.store(out_ptr + offsets, tl.sin(tl.load(x_ptr + offsets)))
    else:
        mask = offsets < n_elements
        tl.store(out_ptr + offsets, tl.sin(tl.load(x_ptr + offsets, mask=mask)), mask=mask)


def launch(kernel, x, **meta):
    out = torch.empty_like(x)
    n_elements = out.numel()
    kernel[lambda m: (triton.cdiv(n_elements, m["BLOCK_SIZE"]),)](x, out, n_elements, **meta)
    return out


def make_inputs(size, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(size, generator=gen).to(device),)


flops = lambda x: math.prod(x)
CONFIGS = [triton.Config({"BLOCK_SIZE": 256}, num_warps=4), triton.Config({"BLOCK_SIZE": 512}, num_warps=4)]
KEY = ["n_elements"]
HEURISTICS = {"EVEN": lambda args: args["n_elements"] % MAX_BLOCK == 0}
CONFIG_HEURISTICS = {"EVEN": lambda args: args["n_elements"] % args["BLOCK_SIZE"] == 0}


# ---- the style: autotune_heuristics ----
kernel = triton.autotune(configs=CONFIGS, key=KEY)(triton.heuristics({**HEURISTICS, **CONFIG_HEURISTICS})(sin_kernel))


def sin(x):
    return launch(kernel, x)


class Model(torch.nn.Module):
    def forward(self, x):
        return sin(x)


class Reference(torch.nn.Module):
    def forward(self, x):
        return torch.sin(x)


# ---- the path: flop_counter ----
DEVICE, SIZE, SEED = 'cuda', 1, 0  # the inputs the cell ran
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
        return torch.sin(*args)

    with torch.no_grad():
        spy(*copied(inputs))
    counted_as_declared(counted, declared)


if __name__ == "__main__":
    main()
    torch.cuda.synchronize() if torch.cuda.is_initialized() else None  # a GPU fault left behind surfaces
    print("no failure: sin-autotune_heuristics-flop_counter passes here")
