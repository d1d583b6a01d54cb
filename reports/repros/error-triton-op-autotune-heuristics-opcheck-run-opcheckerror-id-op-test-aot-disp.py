"""silu-triton_op_autotune_heuristics-opcheck: a reproducer written by triton-torch-matrix.
The harness recorded: error at run: opcheck(op, ...): test_aot_dispatch_dynamic failed with BooleanAtom not allowed in this context. (scroll up for stack trace)
The same failure in 7 more cell(s) of this style and path: add-triton_op_autotune_heuristics-opcheck, sin-triton_op_autotune_heuristics-opcheck, softmax-triton_op_autotune_heuristics-opcheck, matmul-triton_op_autotune_heuristics-opcheck, rmsnorm-triton_op_autotune_heuristics-opcheck, layernorm-triton_op_autotune_heuristics-opcheck, sin_triton_backward-triton_op_autotune_heuristics-opcheck.
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


def backward(inputs, out, grad):
    x = inputs[0].float()
    sig = torch.sigmoid(x)
    return ((grad.float() * sig * (1 + x * (1 - sig))).to(grad.dtype),)


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
CONFIG_HEURISTICS = {"EVEN": lambda args: args["n_elements"] % args["BLOCK_SIZE"] == 0}


# ---- the style: triton_op_autotune_heuristics ----
kernel = triton.autotune(configs=CONFIGS, key=KEY)(triton.heuristics({**HEURISTICS, **CONFIG_HEURISTICS})(silu_kernel))


@torch.library.triton_op("mylib::silu", mutates_args=())
def silu(x: torch.Tensor) -> torch.Tensor:
    return launch(torch.library.wrap_triton(kernel), x)


def setup_context(ctx, inputs, output):
    x, = inputs
    ctx.save_for_backward(x, output)


def silu_gradients(ctx, grad):
    x, out = ctx.saved_tensors
    inputs, output = (x,), out
    return tuple(backward(inputs, output, grad))


silu.register_autograd(silu_gradients, setup_context=setup_context)


def op(x):
    return torch.ops.mylib.silu(x)


def reference_op(x):
    return torch.nn.functional.silu(x)


# ---- the path: opcheck ----
DEVICE, SIZE, SEED = 'cuda', 37, 0  # the inputs the cell ran
ATOL, RTOL = 0.01, 0.016  # the tolerance for bfloat16


def main():
    torch.manual_seed(0)
    model = module(op).to(DEVICE)
    torch.manual_seed(0)  # the same parameters
    reference_model = module(reference_op).to(DEVICE)
    inputs = make_inputs(SIZE, DEVICE, SEED)
    inputs = tuple(v.detach().requires_grad_(v.is_floating_point() and i not in ()) if isinstance(v, torch.Tensor) else v for i, v in enumerate(inputs))
    torch.library.opcheck(silu, inputs)


if __name__ == "__main__":
    main()
    torch.cuda.synchronize() if torch.cuda.is_initialized() else None  # a GPU fault left behind surfaces
    print("no failure: silu-triton_op_autotune_heuristics-opcheck passes here")
