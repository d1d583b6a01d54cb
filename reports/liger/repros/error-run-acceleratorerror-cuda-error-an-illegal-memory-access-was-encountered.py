"""liger_rms_norm-as_shipped-subclass_eager: a reproducer written by triton-torch-matrix.

The harness recorded: error at run: AcceleratorError: CUDA error: an illegal memory access was encountered
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0.
The same failure in 7 more cell(s): liger_rms_norm_gemma-as_shipped-subclass_eager, liger_swiglu-as_shipped-subclass_eager, liger_geglu-as_shipped-subclass_eager, liger_layer_norm-as_shipped-subclass_eager, liger_rope-as_shipped-subclass_eager, liger_cross_entropy-as_shipped-subclass_eager, liger_kl_div-as_shipped-subclass_eager.

Run it with python: it raises while the failure is there (exit 1) and prints "no failure" once it is fixed.
It needs torch, triton and the case's own imports; no code of the harness is in it.
"""

import os

import subprocess
import sys
import tempfile
import time

import torch
import torch.utils.flop_counter
import triton
from torch.testing._internal.two_tensor import TwoTensor

# ---- the case: cases.liger_rms_norm (its kernel, launch and PyTorch reference) ----

import types

Case = types.SimpleNamespace  # the harness's case container: here just the case's own fields

"""Liger's RMSNorm as Llama uses it: ``LigerRMSNormFunction.apply(x, weight, eps, offset=0.0, casting_mode="llama",
in_place=True)`` (the backward writes dX into dY), against Hugging Face's ``LlamaRMSNorm`` (the inverse RMS in float32,
the weight applied in the input's dtype), in bfloat16."""

import torch
from liger_kernel.ops import LigerRMSNormFunction


HIDDEN = 256  # the normalized and activated width
EPS = 1e-6


def randn(*shape, generator, device, dtype=torch.float32, scale=1.0):
    """Seeded normal values, drawn in float32 on CPU, then moved (the same numbers on every device)."""
    return (scale * torch.randn(*shape, generator=generator)).to(device=device, dtype=dtype)


def llama_rms_norm(x, weight):
    """transformers' LlamaRMSNorm.forward."""
    dtype = x.dtype
    hidden = x.to(torch.float32)
    hidden = hidden * torch.rsqrt(hidden.pow(2).mean(-1, keepdim=True) + EPS)
    return weight * hidden.to(dtype)


def make_inputs(batch, device, seed):
    gen = torch.Generator().manual_seed(seed)
    x = randn(batch, 17, HIDDEN, generator=gen, device=device, dtype=torch.bfloat16)
    weight = 1 + randn(HIDDEN, generator=gen, device=device, dtype=torch.bfloat16, scale=0.1)
    return x, weight


CASE = Case(
    id="liger_rms_norm",
    shipped=LigerRMSNormFunction.apply,
    shipped_args=(EPS, 0.0, "llama", True),
    reference=llama_rms_norm,
    make_inputs=make_inputs,
    arg_names=("x", "weight"),
    sizes=(3, 1, 8),
    dtype=torch.bfloat16,
    dynamic_dims=((0,), ()),
)


# ---- the style: as_shipped (the op as its library ships it) ----


class Model(torch.nn.Module):
    def forward(self, x, weight):
        return LigerRMSNormFunction.apply(x, weight, 1e-06, 0.0, 'llama', True)


class Reference(torch.nn.Module):
    def forward(self, x, weight):
        return CASE.reference(x, weight)


# ---- the path: subclass_eager ----

DEVICE, SIZE, SEED = 'cuda', 3, 0  # the input the cell failed on
ATOL, RTOL = 0.01, 0.016  # the tolerance for bfloat16
TAKES_GRAD = (True, True)  # which arguments are differentiated
SIZES, OTHER_SIZES = (3, 1, 8), (1, 8)


def copy_tensor(t):  # a copy with the same strides: a strided view stays strided
    t = t.detach()
    if 0 in t.stride() or t.is_contiguous():
        return t.clone()
    return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device).copy_(t)


def copy(inputs):
    return tuple(copy_tensor(v) if isinstance(v, torch.Tensor) else v for v in inputs)


def build(make):  # seeded: the model and its reference get the same parameters
    torch.manual_seed(0)
    return make().to(DEVICE)


def inputs_of(size=SIZE, seed=SEED):
    return CASE.make_inputs(size, DEVICE, seed)


def expected(inputs):
    with torch.no_grad():
        return build(Reference)(*copy(inputs))


def compare(what, actual, expected):
    try:
        torch.testing.assert_close(actual, expected, atol=ATOL, rtol=RTOL)
    except AssertionError as error:
        raise AssertionError(f"wrong numbers: {what}: {error}") from None


def synchronize():  # a GPU fault of the kernel surfaces here, right after the call that caused it
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def infer(what, run, inputs):  # every call compared: the same inputs twice
    for call in (1, 2):
        with torch.no_grad():
            out = run(*copy(inputs))
        synchronize()
        compare(f"{what}, call {call}", out, expected(inputs))


def check():
    first, second = inputs_of(), inputs_of(seed=SEED + 1)
    second = tuple(b if isinstance(b, torch.Tensor) else a for a, b in zip(first, second))
    both = tuple(TwoTensor(copy_tensor(a), copy_tensor(b)) if isinstance(a, torch.Tensor) else a for a, b in zip(first, second))
    out = build(Model)(*both)
    synchronize()
    outs = tuple(out) if isinstance(out, tuple | list) else (out,)
    for index, one in enumerate(outs):
        if not isinstance(one, TwoTensor):
            raise AssertionError(f'wrong numbers: output {index} is a {type(one).__name__}, not a TwoTensor')
    single = lambda values: values[0] if len(values) == 1 else values
    compare('output .a', single(tuple(o.a for o in outs)), expected(first))
    compare('output .b', single(tuple(o.b for o in outs)), expected(second))


if __name__ == "__main__":
    check()
    print("no failure: liger_rms_norm-as_shipped-subclass_eager passes here")
