"""add_inplace-triton_op-train_compile: a reproducer written by triton-torch-matrix.

The harness recorded: error at build: RuntimeError: harness::add_inplace_triton_op writes into x: triton_op cannot train it (Cannot register autograd formula for non-functional operator <CustomOpDef(harness::add_inplace_triton_op)> with schema harness::add_inplace_triton_op(Tensor(a0!) x, Tensor y) -> (). Please create a functional operator and register an autograd formula for that.)
Measured on NVIDIA H100 80GB HBM3, torch 2.11.0+cu130, triton 3.6.0.
The same failure in 3 more cell(s): add_inplace-triton_op-train_eager, add_inplace-custom_op-train_eager, add_inplace-custom_op-train_compile.

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

# ---- the case: cases.add_inplace (its kernel, launch and PyTorch reference) ----

import types

Case = types.SimpleNamespace  # the harness's case container: here just the case's own fields

"""In-place add: the kernel writes x + y into x (declared through ``mutates``)."""

import math

import torch
import triton
import triton.language as tl


MAX_BLOCK = 1024


@triton.jit
def add_inplace_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr, EVEN: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    if EVEN:
        tl.store(x_ptr + offsets, tl.load(x_ptr + offsets) + tl.load(y_ptr + offsets))
    else:
        mask = offsets < n_elements
        x = tl.load(x_ptr + offsets, mask=mask)
        tl.store(x_ptr + offsets, x + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def launch(kernel, x, y, **meta):
    n_elements = x.numel()
    kernel[lambda m: (triton.cdiv(n_elements, m["BLOCK_SIZE"]),)](x, y, n_elements, **meta)


def reference(x, y):
    x.add_(y)


def make_inputs(size, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(size, generator=gen).to(device) for _ in range(2))


CASE = Case(
    id="add_inplace",
    kernel=add_inplace_kernel,
    launch=launch,
    reference=reference,
    make_inputs=make_inputs,
    backward=lambda inputs, out, grad: (grad, grad),
    flops=lambda x, y: math.prod(x),
    arg_names=("x", "y"),
    sizes=(3001, 1000, 5003),
    meta={"BLOCK_SIZE": 256, "EVEN": False},
    configs=[triton.Config({"BLOCK_SIZE": 256}, num_warps=4), triton.Config({"BLOCK_SIZE": 1024}, num_warps=8)],
    key=["n_elements"],
    heuristics={"EVEN": lambda args: args["n_elements"] % MAX_BLOCK == 0},  # no tail, whatever the config
    config_heuristics={"EVEN": lambda args: args["n_elements"] % args["BLOCK_SIZE"] == 0},  # the picked config
    mutates=("x",),
    autotune_options={"restore_value": ["x_ptr"]},  # autotuning runs the kernel repeatedly
)


# ---- the style: triton_op (@triton.jit kernel in a triton_op) ----

kernel = CASE.kernel
META = {'BLOCK_SIZE': 256, 'EVEN': False}


@torch.library.triton_op('mylib::add_inplace_triton_op', mutates_args=('x',))
def add_inplace_triton_op(x: torch.Tensor, y: torch.Tensor) -> None:
    CASE.launch(torch.library.wrap_triton(kernel), x, y, **META)


add_inplace_triton_op.register_kernel('cpu')(CASE.reference)


torch.utils.flop_counter.register_flop_formula(torch.ops.mylib.add_inplace_triton_op)(
    lambda *shapes, out_shape=None, **kwargs: CASE.flops(*shapes)
)
MUTATED = (0,)


def outputs(value):
    return tuple(value) if isinstance(value, tuple | list) else (value,)


def save(ctx, inputs, output):  # the tensor inputs (not those the op overwrote) and every output; scalars on ctx
    kept = [None if i in MUTATED or not isinstance(v, torch.Tensor) else v for i, v in enumerate(inputs)]
    ctx.save_for_backward(*kept, *(() if output is None else outputs(output)))
    ctx.scalars = tuple(None if isinstance(v, torch.Tensor) else v for v in inputs)


def saved(ctx, grads):  # (inputs, output, grad) as the case's backward takes them
    tensors, count = ctx.saved_tensors, len(ctx.scalars)
    inputs = tuple(t if s is None else s for t, s in zip(tensors[:count], ctx.scalars))
    outs = tensors[count:]
    if not outs:
        return inputs, None, grads[0]
    grads = tuple(torch.zeros_like(o) if g is None else g for o, g in zip(outs, grads))
    return inputs, (outs[0] if len(outs) == 1 else outs), (grads[0] if len(grads) == 1 else grads)


BACKWARD = CASE.backward


def setup_context(ctx, inputs, output):
    save(ctx, inputs, output)


def backward(ctx, *grads):
    return tuple(BACKWARD(*saved(ctx, grads)))


add_inplace_triton_op.register_autograd(backward, setup_context=setup_context)


class Model(torch.nn.Module):
    def forward(self, x, y):
        x = x.clone()
        torch.ops.mylib.add_inplace_triton_op(x, y)
        return x


class Reference(torch.nn.Module):
    def forward(self, x, y):
        x = x.clone()
        CASE.reference(x, y)
        return x


# ---- the path: train_compile ----

DEVICE, SIZE, SEED = 'cuda', 3001, 0  # the input the cell failed on
ATOL, RTOL = 1e-05, 1e-05  # the tolerance for float32
TAKES_GRAD = (True, True)  # which arguments are differentiated
SIZES, OTHER_SIZES = (3001, 1000, 5003), (1000, 5003)


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


LAYOUTS = {"": False, " (non-contiguous output grad)": True}  # the output grads as they are, then strided views


def noncontiguous(grad: torch.Tensor) -> torch.Tensor:
    """``grad``'s values in a non-contiguous view (every other element of a tensor twice as wide); a grad of one
    element or none as it is (it has no other layout)."""
    if grad.numel() <= 1:
        return grad
    wide = grad.new_zeros(*grad.shape[:-1], 2 * grad.shape[-1])
    wide[..., ::2] = grad
    return wide[..., ::2]


def forward_backward(model, inputs, strided):  # backward of each output times a seeded random grad
    inputs = tuple(v.detach().requires_grad_(TAKES_GRAD[i]) if isinstance(v, torch.Tensor) else v
                   for i, v in enumerate(inputs))
    out = model(*inputs)
    outs = tuple(out) if isinstance(out, tuple | list) else (out,)
    gen = torch.Generator().manual_seed(1)
    grads = [torch.randn(o.shape, generator=gen).to(device=o.device, dtype=o.dtype) for o in outs]
    grads = [noncontiguous(g) for g in grads] if strided else grads
    pairs = [(o, g) for o, g in zip(outs, grads) if o.requires_grad] or list(zip(outs, grads))
    torch.autograd.backward([o for o, _ in pairs], [g for _, g in pairs])
    synchronize()
    named = [(f"input {i}", v) for i, v in enumerate(inputs) if isinstance(v, torch.Tensor) and v.requires_grad]
    named += list(model.named_parameters())  # a module's parameters: the reference holds the same ones
    detached = tuple(o.detach() for o in outs) if isinstance(out, tuple | list) else out.detach()
    return detached, [t.grad for _, t in named], [name.removeprefix("_orig_mod.") for name, _ in named]


def train(model):
    reference = build(Reference)
    for layout, strided in LAYOUTS.items():
        model.zero_grad(set_to_none=True)
        reference.zero_grad(set_to_none=True)
        out, grads, names = forward_backward(model, inputs_of(), strided)
        want, want_grads, _ = forward_backward(reference, inputs_of(), strided)
        compare("output", out, want)
        for name, grad, want_grad in zip(names, grads, want_grads, strict=True):
            compare(f"gradient of {name}{layout}", grad, want_grad)


def check():
    train(torch.compile(build(Model)))


if __name__ == "__main__":
    try:
        check()
    finally:  # a GPU fault left behind surfaces here, as at the end of a cell
        synchronize()
    print("no failure: add_inplace-triton_op-train_compile passes here")
