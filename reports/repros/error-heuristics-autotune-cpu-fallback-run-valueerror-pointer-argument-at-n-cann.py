"""silu-heuristics_autotune-cpu_fallback: a reproducer written by triton-torch-matrix.
The harness recorded: error at run: Pointer argument (at 0) cannot be accessed from Triton (cpu tensor?)
The same failure in 8 more cell(s) of this style and path: add-heuristics_autotune-cpu_fallback, sin-heuristics_autotune-cpu_fallback, softmax-heuristics_autotune-cpu_fallback, matmul-heuristics_autotune-cpu_fallback, add_inplace-heuristics_autotune-cpu_fallback, rmsnorm-heuristics_autotune-cpu_fallback, layernorm-heuristics_autotune-cpu_fallback, sin_triton_backward-heuristics_autotune-cpu_fallback.
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0; needs no harness.
Run it: it raises the failure while it is there (exit 1), and prints "no failure" once it is fixed (exit 0)."""


# ---- the case's own code (cases.silu) ----

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


CONFIGS = [triton.Config({"BLOCK_SIZE": 256}, num_warps=4), triton.Config({"BLOCK_SIZE": 1024}, num_warps=4)]
KEY = ["n_elements"]
HEURISTICS = {"EVEN": lambda args: args["n_elements"] % MAX_BLOCK == 0}


# ---- the style: heuristics_autotune ----
kernel = triton.heuristics(HEURISTICS)(triton.autotune(configs=CONFIGS, key=KEY)(silu_kernel))


def silu(x):
    return launch(kernel, x)


def op(x):
    return silu(x)


def reference_op(x):
    return torch.nn.functional.silu(x)


# ---- the path: cpu_fallback ----
DEVICE, SIZE, SEED = 'cpu', 37, 0  # the inputs the cell ran
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
    for call in range(1, 3):
        with torch.no_grad():
            out = model(*copied(inputs))
        check("output" if call == 1 else f"output, call {call}", out, expected)
    return model


if __name__ == "__main__":
    main()
    torch.cuda.synchronize() if torch.cuda.is_initialized() else None  # a GPU fault left behind surfaces
    print("no failure: silu-heuristics_autotune-cpu_fallback passes here")
