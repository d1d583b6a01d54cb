"""liger_cross_entropy-as_shipped-train_compile: a reproducer written by triton-torch-matrix.

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

# ---- the case: cases.liger_cross_entropy (its kernel, launch and PyTorch reference) ----

import types

Case = types.SimpleNamespace  # the harness's case container: here just the case's own fields

"""Liger's cross-entropy, which writes the logits' gradient into them during the forward and launches a second kernel
(``element_mul``) in its backward: ``LigerCrossEntropyFunction.apply(logits, target, weight=None, ignore_index=-100,
lse_square_scale=1e-4, label_smoothing=0.0, reduction="mean", softcap=None, return_z_loss=True,
return_token_accuracy=True, return_predicted_tokens=True)``: four outputs, the last int64 argmax indices (compared
exactly, never differentiated), int64 targets with ignored positions; against the same loss in PyTorch ops
(cross-entropy plus the z-loss ``lse_square_scale * logsumexp**2``, averaged over the positions not ignored), in
float32. The z-loss, accuracy and indices are for logging: Liger's backward, like the reference, takes the gradient of
the loss alone."""

import torch
from liger_kernel.ops import LigerCrossEntropyFunction


VOCAB, IGNORE_INDEX, LSE_SQUARE_SCALE = 1000, -100, 1e-4
SHIPPED_ARGS = (None, IGNORE_INDEX, LSE_SQUARE_SCALE, 0.0, "mean", None, True, True, True)


def randn(*shape, generator, device, dtype=torch.float32, scale=1.0):
    """Seeded normal values, drawn in float32 on CPU, then moved (the same numbers on every device)."""
    return (scale * torch.randn(*shape, generator=generator)).to(device=device, dtype=dtype)


def cross_entropy(logits, target):
    keep = target != IGNORE_INDEX
    kept = keep.sum()
    lse = logits.float().logsumexp(-1)
    loss = torch.nn.functional.cross_entropy(logits.float(), target, ignore_index=IGNORE_INDEX, reduction="sum")
    z_loss = (LSE_SQUARE_SCALE * lse.square() * keep).sum() / kept
    predicted = logits.argmax(-1)
    accuracy = ((predicted == target) & keep).sum() / kept
    return (
        (loss / kept + z_loss).to(logits.dtype),
        z_loss.detach().to(logits.dtype),
        accuracy.float(),
        torch.where(keep, predicted, -1),
    )


def make_inputs(rows, device, seed):
    gen = torch.Generator().manual_seed(seed)
    logits = randn(rows, VOCAB, generator=gen, device=device, scale=2.0)
    target = torch.randint(0, VOCAB, (rows,), generator=gen)
    target[torch.rand(rows, generator=gen) < 0.2] = IGNORE_INDEX
    target[0] = 0  # one position kept at least
    return logits, target.to(device)


CASE = Case(
    id="liger_cross_entropy",
    shipped=LigerCrossEntropyFunction.apply,
    shipped_args=SHIPPED_ARGS,
    reference=cross_entropy,
    make_inputs=make_inputs,
    arg_names=("logits", "target"),
    outputs=4,
    sizes=(37, 5, 64),
)


# ---- the style: as_shipped (the op as its library ships it) ----


class Model(torch.nn.Module):
    def forward(self, logits, target):
        return LigerCrossEntropyFunction.apply(logits, target, None, -100, 0.0001, 0.0, 'mean', None, True, True, True)


class Reference(torch.nn.Module):
    def forward(self, logits, target):
        return CASE.reference(logits, target)


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
    missing = sorted(set(['element_mul_kernel', 'liger_cross_entropy_kernel']) - kernels_held('forward', 'backward'))
    if missing:
        raise AssertionError(f'graph break: kernel(s) {missing} ran outside the compiled graph ({len(reasons)} graph break(s): {reasons[:3]})')


if __name__ == "__main__":
    check()
    print("no failure: liger_cross_entropy-as_shipped-train_compile passes here")
