"""Fused gated activations, the MLP kernels model libraries ship: ``act(gate) * up`` in one pass, with the
backward written in PyTorch ops. One kernel, two cases (GELU-tanh and SiLU gates), exported as ``CASES``:
a module may declare several cases; ``--cases examples.activations`` runs them all."""

import math

import torch
import triton
import triton.language as tl

from harness.case import Case

HIDDEN = 1000
SQRT_2_OVER_PI = 0.7978845608028654


@triton.jit
def gated_kernel(
    gate_ptr, up_ptr, out_ptr, n_elements, ACTIVATION: tl.constexpr, BLOCK_SIZE: tl.constexpr, EVEN: tl.constexpr
):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    if EVEN:
        gate = tl.load(gate_ptr + offsets).to(tl.float32)
        up = tl.load(up_ptr + offsets).to(tl.float32)
    else:
        gate = tl.load(gate_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        up = tl.load(up_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    if ACTIVATION == "gelu":
        inner = 0.7978845608028654 * (gate + 0.044715 * gate * gate * gate)
        act = 0.5 * gate * (1.0 + (2.0 / (1.0 + tl.exp(-2.0 * inner)) - 1.0))  # tanh via exp
    else:
        act = gate / (1.0 + tl.exp(-gate))
    out = (act * up).to(out_ptr.dtype.element_ty)
    if EVEN:
        tl.store(out_ptr + offsets, out)
    else:
        tl.store(out_ptr + offsets, out, mask=mask)


def launch(kernel, gate, up, **meta):
    out = torch.empty_like(gate)
    n_elements = out.numel()
    kernel[lambda m: (triton.cdiv(n_elements, m["BLOCK_SIZE"]),)](gate, up, out, n_elements, **meta)
    return out


def gelu_mul(gate, up):
    return torch.nn.functional.gelu(gate, approximate="tanh") * up


def silu_mul(gate, up):
    return torch.nn.functional.silu(gate) * up


def _wide(t):
    """float32 or wider: the backward's math in at least float32, as the kernel's."""
    return t.to(torch.promote_types(t.dtype, torch.float32))


def gelu_mul_backward(inputs, out, grad):
    gate, up = (_wide(t) for t in inputs)
    inner = SQRT_2_OVER_PI * (gate + 0.044715 * gate**3)
    tanh = torch.tanh(inner)
    act = 0.5 * gate * (1 + tanh)
    d_act = 0.5 * (1 + tanh) + 0.5 * gate * (1 - tanh**2) * SQRT_2_OVER_PI * (1 + 3 * 0.044715 * gate**2)
    grad = _wide(grad)
    return (grad * up * d_act).to(inputs[0].dtype), (grad * act).to(inputs[1].dtype)


def silu_mul_backward(inputs, out, grad):
    gate, up = (_wide(t) for t in inputs)
    sig = torch.sigmoid(gate)
    grad = _wide(grad)
    return (grad * up * sig * (1 + gate * (1 - sig))).to(inputs[0].dtype), (grad * gate * sig).to(inputs[1].dtype)


def make_inputs(rows, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(rows, HIDDEN, generator=gen).to(device) for _ in range(2))


def gated_case(name, activation, reference, backward, flops_per_element):
    return Case(
        id=name,
        kernel=gated_kernel,
        launch=launch,
        reference=reference,
        make_inputs=make_inputs,
        backward=backward,
        flops=lambda gate, up: flops_per_element * math.prod(gate),
        arg_names=("gate", "up"),
        sizes=(37, 5, 70),
        size_bounds=(1, 300),
        meta={"ACTIVATION": activation, "BLOCK_SIZE": 256, "EVEN": False},
        configs=[triton.Config({"BLOCK_SIZE": 256}, num_warps=4), triton.Config({"BLOCK_SIZE": 1024}, num_warps=8)],
        key=["n_elements"],
        heuristics={"EVEN": lambda args: args["n_elements"] % 1024 == 0},  # no tail, whatever the config
        config_heuristics={"EVEN": lambda args: args["n_elements"] % args["BLOCK_SIZE"] == 0},  # picked config
    )


CASES = [
    gated_case("gelu_mul", "gelu", gelu_mul, gelu_mul_backward, 10),
    gated_case("silu_mul", "silu", silu_mul, silu_mul_backward, 5),
]
