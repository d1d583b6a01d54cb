"""liger_rope-as_shipped-aoti_dynamic: a reproducer written by triton-torch-matrix.

The harness recorded: error at trace: UserError: Constraints violated (size)! For more information, run with TORCH_LOGS="+dynamic".
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0.
The same failure in 1 more cell(s): liger_rope-as_shipped-export_dynamic_strict.

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

# ---- the case: cases.liger_rope (its kernel, launch and PyTorch reference) ----

import types

Case = types.SimpleNamespace  # the harness's case container: here just the case's own fields

"""Liger's RoPE on q and k: ``LigerRopeFunction.apply(q, k, cos, sin)`` (what ``liger_rotary_pos_emb`` calls), two
outputs, against Hugging Face's ``apply_rotary_pos_emb`` (Llama's ``rotate_half``, ``unsqueeze_dim=1``), in float32.
The cos/sin caches take no gradient (``no_grad``); q has more heads than k (grouped-query attention)."""

import torch
from liger_kernel.ops import LigerRopeFunction


Q_HEADS, KV_HEADS, SEQ, HEAD_DIM = 4, 2, 16, 64


def randn(*shape, generator, device, dtype=torch.float32, scale=1.0):
    """Seeded normal values, drawn in float32 on CPU, then moved (the same numbers on every device)."""
    return (scale * torch.randn(*shape, generator=generator)).to(device=device, dtype=dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    """transformers' apply_rotary_pos_emb with unsqueeze_dim=1."""
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def make_inputs(batch, device, seed):
    gen = torch.Generator().manual_seed(seed)
    q = randn(batch, Q_HEADS, SEQ, HEAD_DIM, generator=gen, device=device)
    k = randn(batch, KV_HEADS, SEQ, HEAD_DIM, generator=gen, device=device)
    inv_freq = 1.0 / (10000 ** (torch.arange(0, HEAD_DIM, 2, dtype=torch.float32) / HEAD_DIM))
    freqs = torch.outer(torch.arange(SEQ, dtype=torch.float32), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)[None]  # (1, seq, head_dim), as LlamaRotaryEmbedding gives it
    return q, k, emb.cos().to(device), emb.sin().to(device)


CASE = Case(
    id="liger_rope",
    shipped=LigerRopeFunction.apply,
    reference=apply_rotary_pos_emb,
    make_inputs=make_inputs,
    arg_names=("q", "k", "cos", "sin"),
    no_grad=("cos", "sin"),
    outputs=2,
    sizes=(2, 1, 5),
    dynamic_dims=((0,), (0,), (), ()),
)


# ---- the style: as_shipped (the op as its library ships it) ----


class Model(torch.nn.Module):
    def forward(self, q, k, cos, sin):
        return LigerRopeFunction.apply(q, k, cos, sin)


class Reference(torch.nn.Module):
    def forward(self, q, k, cos, sin):
        return CASE.reference(q, k, cos, sin)


# ---- the path: aoti_dynamic ----

DEVICE, SIZE, SEED = 'cuda', 2, 0  # the input the cell failed on
ATOL, RTOL = 1e-05, 1e-05  # the tolerance for float32
TAKES_GRAD = (True, True, False, False)  # which arguments are differentiated
SIZES, OTHER_SIZES = (2, 1, 5), (1, 5)
size = torch.export.Dim("size", min=1, max=10)
DYNAMIC = ({0: size}, {0: size}, None, None,)


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
    inputs = inputs_of()
    program = torch.export.export(build(Model).eval(), copy(inputs), dynamic_shapes=DYNAMIC, strict=True)
    package = torch._inductor.aoti_compile_and_package(program, package_path=tempfile.mktemp(".pt2"))
    runner = torch._inductor.aoti_load_package(package)
    infer(f'output at traced size {SIZE}', runner, inputs)
    for size in OTHER_SIZES:
        infer(f'output at size {size}', runner, inputs_of(size))


if __name__ == "__main__":
    check()
    print("no failure: liger_rope-as_shipped-aoti_dynamic passes here")
