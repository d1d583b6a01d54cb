"""The blog's bf16 SiLU kernel, inside the blog's small Linear -> SiLU -> Linear module."""

import math

import torch
import triton
import triton.language as tl

from harness.case import Case

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


CASE = Case(
    id="silu",
    kernel=silu_kernel,
    launch=launch,
    reference=torch.nn.functional.silu,
    make_inputs=make_inputs,
    backward=backward,
    flops=lambda x: 4 * math.prod(x),
    arg_names=("x",),
    sizes=(37, 8, 61),
    bandwidth_size=1 << 18,  # rows of 128 bf16 through two small linears: ~43 flops a byte, bound by memory
    meta={"BLOCK_SIZE": 256, "EVEN": False},
    configs=[triton.Config({"BLOCK_SIZE": 256}, num_warps=4), triton.Config({"BLOCK_SIZE": 1024}, num_warps=4)],
    key=["n_elements"],
    heuristics={"EVEN": lambda args: args["n_elements"] % MAX_BLOCK == 0},  # no tail, whatever the config
    config_heuristics={"EVEN": lambda args: args["n_elements"] % args["BLOCK_SIZE"] == 0},  # the picked config
    dtype=torch.bfloat16,
    module=module,
)
