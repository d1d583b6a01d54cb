"""liger_cross_entropy-as_shipped-aoti_standalone: a reproducer written by triton-torch-matrix.

The harness recorded: error at trace: Unsupported: Data-dependent branching
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0.
The same failure in 6 more cell(s): liger_cross_entropy-as_shipped-fullgraph, liger_cross_entropy-as_shipped-export_strict, liger_cross_entropy-as_shipped-aoti_strict, liger_cross_entropy-as_shipped-export_dynamic_strict, liger_cross_entropy-as_shipped-aoti_dynamic, liger_cross_entropy-as_shipped-export_saveload.

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


# ---- the path: aoti_standalone ----

DEVICE, SIZE, SEED = 'cuda', 37, 0  # the input the cell failed on
ATOL, RTOL = 1e-05, 1e-05  # the tolerance for float32
TAKES_GRAD = (True, False)  # which arguments are differentiated
SIZES, OTHER_SIZES = (37, 5, 64), (5, 64)


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


def standalone(package):  # a fresh process that imports torch only loads the package and runs it
    def run(*inputs):
        folder = tempfile.mkdtemp()
        torch.save(list(inputs), f"{folder}/in.pt")
        code = ("import sys, torch; inputs = torch.load(sys.argv[2])"
                "; runner = torch._inductor.aoti_load_package(sys.argv[1])"
                "; torch.save(runner(*inputs), sys.argv[3])")
        done = subprocess.run([sys.executable, "-c", code, package, f"{folder}/in.pt", f"{folder}/out.pt"])
        if done.returncode:
            raise RuntimeError(f"standalone process exited {done.returncode}")
        return torch.load(f"{folder}/out.pt")
    return run


def check():
    inputs = inputs_of()
    program = torch.export.export(build(Model).eval(), copy(inputs), strict=True)
    package = torch._inductor.aoti_compile_and_package(program, package_path=tempfile.mktemp(".pt2"))
    infer('output', standalone(package), inputs)


if __name__ == "__main__":
    check()
    print("no failure: liger_cross_entropy-as_shipped-aoti_standalone passes here")
