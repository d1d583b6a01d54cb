"""silu-autotune_heuristics-flop_counter: a reproducer written by triton-torch-matrix.
The harness recorded: blind at compare: flops: FlopCounterMode counted 0 for the op, the case declares 256
The same failure in 8 more cell(s) of this style and path: add-autotune_heuristics-flop_counter, sin-autotune_heuristics-flop_counter, softmax-autotune_heuristics-flop_counter, matmul-autotune_heuristics-flop_counter, add_inplace-autotune_heuristics-flop_counter, rmsnorm-autotune_heuristics-flop_counter, layernorm-autotune_heuristics-flop_counter, sin_triton_backward-autotune_heuristics-flop_counter.
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0; needs no harness.
Run it: it raises the failure while it is there (exit 1), and prints "no failure" once it is fixed (exit 0)."""


from torch.utils.flop_counter import FlopCounterMode


# ---- the case's own code (cases.silu) ----

import math
import torch
import triton
import triton.language as tl

IN_FEATURES, HIDDEN = 128, 64
MAX_BLOCK = 1024


@triton.jit
def silu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr, EVEN: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    if EVEN:
        x = tl.load(x_ptr + offsets)
    else:
        x = tl.load(x_ptr + offsets, mask=mask)
    x_f32 = x.to(tl.float32)  # the math in float32, then back to the input's dtype, as in the blog
    out = (x_f32 * (1.0 / (1.0 + tl.exp(-x_f32)))).to(x.dtype)
    if EVEN:
        tl.store(out_ptr + offsets, out)
    else:
        tl.store(out_ptr + offsets, out, mask=mask)


def launch(kernel, x, **meta):
    out = torch.empty_like(x)
    n_elements = out.numel()
    kernel[lambda m: (triton.cdiv(n_elements, m["BLOCK_SIZE"]),)](x, out, n_elements, **meta)
    return out


class SiluMLP(torch.nn.Module):
    """Linear -> SiLU (the op under test) -> Linear, in bf16."""

    def __init__(self, op):
        super().__init__()
        self.linear1 = torch.nn.Linear(IN_FEATURES, HIDDEN, dtype=torch.bfloat16)
        self.linear2 = torch.nn.Linear(HIDDEN, IN_FEATURES, dtype=torch.bfloat16)
        self.op = op

    def forward(self, x):
        return self.linear2(self.op(self.linear1(x).contiguous()))


def make_inputs(batch, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(batch, IN_FEATURES, generator=gen).to(device=device, dtype=torch.bfloat16),)


def module(op):
    return SiluMLP(op)


flops = lambda x: 4 * math.prod(x)
CONFIGS = [triton.Config({"BLOCK_SIZE": 256}, num_warps=4), triton.Config({"BLOCK_SIZE": 1024}, num_warps=4)]
KEY = ["n_elements"]
HEURISTICS = {"EVEN": lambda args: args["n_elements"] % MAX_BLOCK == 0}
CONFIG_HEURISTICS = {"EVEN": lambda args: args["n_elements"] % args["BLOCK_SIZE"] == 0}


# ---- the style: autotune_heuristics ----
kernel = triton.autotune(configs=CONFIGS, key=KEY)(triton.heuristics({**HEURISTICS, **CONFIG_HEURISTICS})(silu_kernel))


def silu(x):
    return launch(kernel, x)


def op(x):
    return silu(x)


def reference_op(x):
    return torch.nn.functional.silu(x)


# ---- the path: flop_counter ----
DEVICE, SIZE, SEED = 'cuda', 1, 0  # the inputs the cell ran
ATOL, RTOL = 0.01, 0.016  # the tolerance for bfloat16


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
    model = module(op).to(DEVICE)
    torch.manual_seed(0)  # the same parameters
    reference_model = module(reference_op).to(DEVICE)
    inputs = make_inputs(SIZE, DEVICE, SEED)
    with torch.no_grad():
        expected = reference_model(*copied(inputs))
    counter = FlopCounterMode(display=False)
    with counter:
        with torch.no_grad():
            out = model(*copied(inputs))
        check("output", out, expected)
    counts = counter.get_flop_counts().get("Global", {})
    counted = sum(n for op, n in counts.items() if str(op).startswith("mylib."))
    declared = 0

    def spy(*args):  # the case's formula over the shapes the op is called with
        nonlocal declared
        declared += flops(*(tuple(a.shape) if isinstance(a, torch.Tensor) else a for a in args))
        return torch.nn.functional.silu(*args)

    with torch.no_grad():
        module(spy).to(DEVICE)(*copied(inputs))
    if counted != declared:
        raise AssertionError(f"FlopCounterMode counted {counted} for the op, the case declares {declared}")


if __name__ == "__main__":
    main()
    torch.cuda.synchronize() if torch.cuda.is_initialized() else None  # a GPU fault left behind surfaces
    print("no failure: silu-autotune_heuristics-flop_counter passes here")
