"""The training group: forward and backward, every gradient compared."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from harness.case import Inputs, as_tuple
from harness.cell.context import CellSkip
from harness.cell.paths.common import _compiled, path
from harness.kernel.compare import LOW_PRECISION, Mismatch, within_reference_error
from harness.kernel.styles import CONTROL

if TYPE_CHECKING:
    from harness.cell.context import Cell

GROUP = "training"


# each layout the output grads are given in: the mismatch message's suffix -> strided (a non-contiguous view, as a
# model that concatenates or slices the op's output hands its backward; PyTorch issue 194719)
LAYOUTS = {"": False, " (non-contiguous output grad)": True}


def _train(cell: Cell, compiled: bool) -> None:
    taking = [i for i, value in enumerate(cell.inputs()) if cell.case.takes_grad(i, value)]
    if not taking and not any(p.requires_grad for p in cell.reference_model().parameters()):
        raise CellSkip("no argument takes a gradient (no float tensor, none outside no_grad): nothing to train")
    model = _compiled(cell, train=True) if compiled else cell.model(train=True)
    reference = cell.reference_model()
    for layout, strided in LAYOUTS.items():
        model.zero_grad(set_to_none=True)
        reference.zero_grad(set_to_none=True)
        cell.stage = "trace" if compiled and not strided else "run"
        own = cell.style == CONTROL and not compiled  # the control trains the case's reference itself, eagerly
        with cell.own("reference") if own else contextlib.nullcontext():
            out, grads, names = _forward_backward(model, cell.inputs(requires_grad=True), strided)
        with cell.own("reference"):
            expected, expected_grads, _ = _forward_backward(reference, cell.inputs(requires_grad=True), strided)
        cell.compare("output", out, expected)
        _compare_gradients(cell, [f"{name}{layout}" for name in names], grads, expected_grads)
    cell.timed_call = training_step(model, cell.inputs(requires_grad=True))
    cell.timed_model, cell.timed_train = model, True


def training_step(model: Any, inputs: Inputs) -> Callable[[], object]:
    """One training step of ``model`` on ``inputs``, the step timed: gradients set to None, forward, backward of
    the outputs that require grad with output grads drawn once (at the first step), as an optimizer loop does."""
    grads: list[Any] = []

    def step() -> object:
        for value in inputs:
            if isinstance(value, torch.Tensor):
                value.grad = None
        model.zero_grad(set_to_none=True)
        outs = [out for out in as_tuple(model(*inputs)) if out.requires_grad]
        if not grads:
            grads.extend(torch.randn_like(out) for out in outs)
        torch.autograd.backward(outs, grads)
        return outs

    return step


def _compare_gradients(cell: Cell, names: list[str], grads: list[Any], expected_grads: list[Any]) -> None:
    """Each gradient against the reference's (``compare_gradient``)."""
    for name, grad, expected_grad in zip(names, grads, expected_grads, strict=True):
        compare_gradient(cell, name, grad, expected_grad)


def compare_gradient(cell: Cell, name: str, grad: Any, expected_grad: Any) -> None:
    """The gradient of ``name`` (its layout's suffix included) against the reference's: a missing or unexpected one
    is a mismatch; a half-precision one off by no more than the reference's own error (against float64) is noted,
    not wrong."""
    if grad is None or expected_grad is None:
        if grad is not expected_grad:
            cell.stage = "compare"
            raise Mismatch(f"gradient of {name}: {'missing' if grad is None else 'unexpected'}")
        return
    try:
        cell.compare(f"gradient of {name}", grad, expected_grad)
    except Mismatch:
        if cell.case.dtype not in LOW_PRECISION:
            raise
        unlaid = next((name.removesuffix(layout) for layout in LAYOUTS if layout and name.endswith(layout)), name)
        exact = _exact_gradients(cell).get(unlaid)
        note = exact is not None and within_reference_error(grad, expected_grad, exact, cell.tolerance.atol)
        if not note:
            raise
        notes = cell.measurements.as_close_as_reference = cell.measurements.as_close_as_reference or {}
        notes[f"gradient of {name}"] = note


def _exact_gradients(cell: Cell) -> dict[str, Any]:
    """The reference's gradients, by name, with its floating inputs in float64 ({} where it cannot run so)."""
    inputs = tuple(
        value.detach().double().requires_grad_(value.requires_grad)
        if isinstance(value, torch.Tensor) and value.is_floating_point()
        else value
        for value in cell.inputs(requires_grad=True)
    )
    try:
        _, grads, names = _forward_backward(cell.reference_model().double(), inputs)
    except Exception:  # a reference that needs its own dtype: no float64 anchor, the plain tolerance decides
        return {}
    return dict(zip(names, grads, strict=True))


def noncontiguous(grad: torch.Tensor) -> torch.Tensor:
    """``grad``'s values in a non-contiguous view (every other element of a tensor twice as wide); a grad of one
    element or none as it is (it has no other layout)."""
    if grad.numel() <= 1:
        return grad
    wide = grad.new_zeros(*grad.shape[:-1], 2 * grad.shape[-1])
    wide[..., ::2] = grad
    return wide[..., ::2]


def _forward_backward(model: Any, inputs: Inputs, strided: bool = False) -> Any:
    """Forward, then backward of the sum of each output times its own random grad (the same grads for every
    model: drawn from one seeded generator, in output order; ``strided``: given as non-contiguous views), through
    the outputs that require grad."""
    raw = model(*inputs)
    outs = as_tuple(raw)
    gen = torch.Generator().manual_seed(1)
    grads = [torch.randn(out.shape, generator=gen).to(device=out.device, dtype=out.dtype) for out in outs]
    grads = [noncontiguous(grad) for grad in grads] if strided else grads
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
