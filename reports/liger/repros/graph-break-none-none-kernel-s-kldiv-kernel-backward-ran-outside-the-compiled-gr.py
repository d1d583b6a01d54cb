"""liger_kl_div-as_shipped-train_compile: a reproducer written by triton-torch-matrix.

The harness recorded: graph_break: : 
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0.
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
from functorch.compile import make_boxed_func
from torch._dynamo.backends.common import aot_autograd

# ---- the case: cases.liger_kl_div (its kernel, launch and PyTorch reference) ----

import types

Case = types.SimpleNamespace  # the harness's case container: here just the case's own fields

"""Liger's KL divergence: ``LigerKLDivLossFunction.apply(log_probs, target, "batchmean", False, 1e-10)``
(``LigerKLDIVLoss``), against ``torch.nn.functional.kl_div(..., reduction="batchmean")``, in float32. Liger's backward
gives no gradient of the target: it is declared ``no_grad``."""

import torch
from liger_kernel.ops import LigerKLDivLossFunction


VOCAB = 1000


def randn(*shape, generator, device, dtype=torch.float32, scale=1.0):
    """Seeded normal values, drawn in float32 on CPU, then moved (the same numbers on every device)."""
    return (scale * torch.randn(*shape, generator=generator)).to(device=device, dtype=dtype)


def kl_div(log_probs, target):
    return torch.nn.functional.kl_div(log_probs, target, reduction="batchmean")


def make_inputs(rows, device, seed):
    gen = torch.Generator().manual_seed(seed)
    log_probs = randn(rows, VOCAB, generator=gen, device=device).log_softmax(-1)
    target = randn(rows, VOCAB, generator=gen, device=device).softmax(-1)
    return log_probs, target


CASE = Case(
    id="liger_kl_div",
    shipped=LigerKLDivLossFunction.apply,
    shipped_args=("batchmean", False, 1e-10),
    reference=kl_div,
    make_inputs=make_inputs,
    arg_names=("log_probs", "target"),
    no_grad=("target",),
    sizes=(37, 5, 64),
)


# ---- the style: as_shipped (the op as its library ships it) ----


class Model(torch.nn.Module):
    def forward(self, log_probs, target):
        return LigerKLDivLossFunction.apply(log_probs, target, 'batchmean', False, 1e-10)


class Reference(torch.nn.Module):
    def forward(self, log_probs, target):
        return CASE.reference(log_probs, target)


# ---- the path: train_compile ----

DEVICE, SIZE, SEED = 'cuda', 1, 0  # the input the cell failed on
ATOL, RTOL = 1e-05, 1e-05  # the tolerance for float32
TAKES_GRAD = (True, False)  # which arguments are differentiated
SIZES, OTHER_SIZES = (37, 5, 64), (37, 5, 64)


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


def forward_backward(model, inputs):  # backward of each output times a seeded random grad
    inputs = tuple(v.detach().requires_grad_(TAKES_GRAD[i]) if isinstance(v, torch.Tensor) else v
                   for i, v in enumerate(inputs))
    out = model(*inputs)
    outs = tuple(out) if isinstance(out, tuple | list) else (out,)
    gen = torch.Generator().manual_seed(1)
    grads = [torch.randn(o.shape, generator=gen).to(device=o.device, dtype=o.dtype) for o in outs]
    pairs = [(o, g) for o, g in zip(outs, grads) if o.requires_grad] or list(zip(outs, grads))
    torch.autograd.backward([o for o, _ in pairs], [g for _, g in pairs])
    synchronize()
    leaves = [v for v in inputs if isinstance(v, torch.Tensor) and v.requires_grad] + list(model.parameters())
    detached = tuple(o.detach() for o in outs) if isinstance(out, tuple | list) else out.detach()
    return detached, [leaf.grad for leaf in leaves]


def train(model):
    out, grads = forward_backward(model, inputs_of())
    want, want_grads = forward_backward(build(Reference), inputs_of())
    compare("output", out, want)
    for index, (grad, want_grad) in enumerate(zip(grads, want_grads)):
        compare(f"gradient {index}", grad, want_grad)


GRAPHS = {"dynamo": [], "forward": [], "backward": []}


def keep(kind):  # a backend that keeps each graph Dynamo (or AOTAutograd) hands it, then runs it as it is
    def compiler(gm, example_inputs):
        GRAPHS[kind].append(gm)
        return gm.forward if kind == "dynamo" else make_boxed_func(gm.forward)
    return compiler


def nodes(kinds):  # the calls of the kept graphs of these kinds, their subgraphs' (a Function's bodies) included
    return [node for kind in kinds for gm in GRAPHS[kind] for sub in gm.modules()
            if isinstance(sub, torch.fx.GraphModule) for node in sub.graph.nodes if node.op == "call_function"]


def holds_kernel(*kinds):  # a Triton kernel (or the style's op) among the calls of the kept graphs
    names = [str(node.target) for node in nodes(kinds)]
    return any("triton_kernel_wrapper" in n or "auto_functionalized" in n or n.startswith(('mylib.',)) for n in names)


def kernels_held(*kinds):  # the names of the Triton kernels the kept graphs launch
    from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table

    held = set()
    for node in nodes(kinds):
        if "triton_kernel_wrapper" in str(node.target) and "kernel_idx" in node.kwargs:
            kernel = kernel_side_table.get_kernel(node.kwargs["kernel_idx"])
            while not hasattr(kernel, "__code__") and (getattr(kernel, "fn", None) or getattr(kernel, "kernel", None)):
                kernel = getattr(kernel, "fn", None) or getattr(kernel, "kernel")
            held.add(getattr(kernel, "__name__", type(kernel).__name__))
    return held


def check():
    train(torch.compile(build(Model), backend=aot_autograd(fw_compiler=keep('forward'), bw_compiler=keep('backward'))))
    reasons = [r.reason for r in torch._dynamo.explain(build(Model))(*inputs_of()).break_reasons]
    missing = sorted(set(['_kldiv_kernel_backward', '_kldiv_kernel_forward']) - kernels_held('forward', 'backward'))
    if missing:
        raise AssertionError(f'graph break: kernel(s) {missing} ran outside the compiled graph ({len(reasons)} graph break(s): {reasons[:3]})')


if __name__ == "__main__":
    check()
    print("no failure: liger_kl_div-as_shipped-train_compile passes here")
