"""The training group: forward and backward, every gradient compared."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from harness.case import Inputs, as_tuple
from harness.cell.paths.common import _compiled, path
from harness.kernel.compare import LOW_PRECISION, Mismatch, within_reference_error

if TYPE_CHECKING:
    from harness.cell.context import Cell

GROUP = "training"


def _train(cell: Cell, compiled: bool) -> None:
    inputs = cell.inputs(requires_grad=True)
    model = _compiled(cell, train=True) if compiled else cell.model(train=True)
    cell.stage = "trace" if compiled else "run"
    out, grads, names = _forward_backward(model, inputs)
    reference = cell.reference_model()
    expected, expected_grads, _ = _forward_backward(reference, cell.inputs(requires_grad=True))
    cell.compare("output", out, expected)
    exact_grads: list[Any] = []  # the float64 anchor, computed at the first mismatch of a half-precision case
    for index, (name, grad, expected_grad) in enumerate(zip(names, grads, expected_grads, strict=True)):
        if grad is None or expected_grad is None:
            if grad is not expected_grad:
                cell.stage = "compare"
                raise Mismatch(f"gradient of {name}: {'missing' if grad is None else 'unexpected'}")
            continue
        try:
            cell.compare(f"gradient of {name}", grad, expected_grad)
        except Mismatch:
            if cell.case.dtype not in LOW_PRECISION:
                raise
            exact_grads = exact_grads or _exact_gradients(cell, len(names))
            exact = exact_grads[index]
            note = exact is not None and within_reference_error(grad, expected_grad, exact, cell.tolerance.atol)
            if not note:
                raise
            notes = cell.measurements.as_close_as_reference = cell.measurements.as_close_as_reference or {}
            notes[f"gradient of {name}"] = note


def _exact_gradients(cell: Cell, count: int) -> list[Any]:
    """The reference's ``count`` gradients with its floating inputs in float64 (Nones where it cannot run so)."""
    inputs = tuple(
        value.detach().double().requires_grad_(value.requires_grad)
        if isinstance(value, torch.Tensor) and value.is_floating_point()
        else value
        for value in cell.inputs(requires_grad=True)
    )
    try:
        grads = _forward_backward(cell.reference_model().double(), inputs)[1]
    except Exception:  # a reference that needs its own dtype: no float64 anchor, the plain tolerance decides
        return [None] * count
    return grads if len(grads) == count else [None] * count


def _forward_backward(model: Any, inputs: Inputs) -> Any:
    """Forward, then backward of the sum of each output times its own random grad (the same grads for every
    model: drawn from one seeded generator, in output order), through the outputs that require grad."""
    raw = model(*inputs)
    outs = as_tuple(raw)
    gen = torch.Generator().manual_seed(1)
    grads = [torch.randn(out.shape, generator=gen).to(device=out.device, dtype=out.dtype) for out in outs]
    # none requiring grad: backward through all of them, which raises (no graph to differentiate)
    differentiable = [index for index, out in enumerate(outs) if out.requires_grad] or range(len(outs))
    torch.autograd.backward([outs[i] for i in differentiable], [grads[i] for i in differentiable])
    if outs[0].is_cuda:
        torch.cuda.synchronize()
    named = [(f"input {i}", t) for i, t in enumerate(inputs) if isinstance(t, torch.Tensor) and t.requires_grad]
    named += [(name, p) for name, p in model.named_parameters()]
    out = tuple(out.detach() for out in outs) if isinstance(raw, tuple | list) else raw.detach()
    return out, [t.grad for _, t in named], [name.removeprefix("_orig_mod.") for name, _ in named]


@path
def train_eager(cell: Cell) -> None:
    """Forward and backward in eager mode; output and every gradient checked against the reference."""
    _train(cell, compiled=False)


@path
def train_compile(cell: Cell) -> None:
    """Forward and backward through ``torch.compile``; output and gradients checked."""
    _train(cell, compiled=True)
