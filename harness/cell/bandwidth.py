"""A timed cell's artifact at its case's ``bandwidth_size`` (the bandwidth-bound regime): whether the artifact
takes inputs of that size at all, and, where it does, the ``AtSize`` the timing phase checks against the reference
there (harness/cell/timing.py ``check_at``) before it times it there."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from harness.case import Inputs, as_tuple, copy_inputs
from harness.cell.context import CaseBug
from harness.cell.paths.training import training_step
from harness.cell.timing import NOT_AT, AtSize, bytes_moved, inference_call
from harness.kernel.compare import FLOATING, Mismatch, within_reference_error
from harness.spec import BOUNDED_PATHS, RESIZED_PATHS

if TYPE_CHECKING:
    from harness.cell.context import Cell


def bandwidth_regime(cell: Cell, path: str) -> AtSize | str | None:
    """The cell's artifact at the case's bandwidth size; why it is not timed there (an export or AOTInductor
    artifact is compiled for one shape; a dynamic one within ``size_bounds``); None where the case declares none."""
    size = cell.case.bandwidth_size
    if size is None:
        return None
    if path in BOUNDED_PATHS:
        low, high = cell.case.bounds
        if not low <= size <= high:
            return f"{NOT_AT}: {size} is outside the artifact's dynamic dims' bounds (size_bounds {low} to {high})"
    elif path not in RESIZED_PATHS:
        return f"{NOT_AT}: the artifact is compiled for one shape"
    model = cell.timed_model
    if model is None:
        return f"{NOT_AT}: {path} keeps no artifact that takes other inputs"
    train = cell.timed_train

    def inputs() -> Inputs:  # the same for a training step, which makes its own leaves of them (``_leaves``)
        return cell.inputs(size, seed=0)

    def check(made: Inputs) -> None:
        (_train_check if train else _infer_check)(cell, model, made, size)

    def call(made: Inputs) -> Any:
        return training_step(model, _leaves(cell, made)) if train else inference_call(model, made)

    moved = lambda made: None if train else bytes_moved(cell.case, made)  # noqa: E731
    return AtSize(size, inputs, check, call, moved, key=(cell.case.id, size))


def _infer_check(cell: Cell, model: Any, inputs: Inputs, size: int) -> None:
    """The artifact's output at ``size`` against the reference's (``torch.testing.assert_close``, the cell's
    tolerance): ``Mismatch`` where it differs."""
    expected = cell.expected(inputs)
    with torch.no_grad():
        out = model(*copy_inputs(inputs))
    cell.synchronize()
    cell.compare(f"output at the bandwidth size {size}", out, expected)


def _train_check(cell: Cell, model: Any, inputs: Inputs, size: int) -> None:
    """A training step's outputs and input gradients at ``size`` against the reference's, the same output grads
    given to both. A floating gradient outside the tolerance passes when it is about as close to the reference
    run in float64 as the reference is (``within_reference_error``, float32 included: a weight's gradient summed
    over 16384 rows in another order than PyTorch's differs from it by more than float32's fixed tolerance)."""
    out, grads, _ = _step(model, _leaves(cell, inputs))
    with cell.own("reference", size, 0):
        expected, expected_grads, out_grads = _step(cell.reference_model(), _leaves(cell, inputs))
    cell.synchronize()
    cell.compare(f"output at the bandwidth size {size}", out, expected)
    exact: list[Any] = []  # the reference's gradients in float64, computed at the first mismatch
    for index, (name, grad, want) in enumerate(zip(cell.case.arg_names, grads, expected_grads, strict=False)):
        if grad is None or want is None:
            continue
        try:
            cell.compare(f"gradient of {name} at the bandwidth size {size}", grad, want)
        except Mismatch:
            exact = exact or _exact_grads(cell, inputs, out_grads, size)
            anchor = exact[index] if index < len(exact) else None
            if anchor is None or not within_reference_error(grad, want, anchor, cell.tolerance.atol, FLOATING):
                raise


def _exact_grads(cell: Cell, inputs: Inputs, out_grads: list[Any], size: int) -> list[Any]:
    """The reference's input gradients with its floating inputs and its output grads (``out_grads``) in float64
    (none where it cannot run so: the plain tolerance decides)."""
    wide = tuple(v.detach().double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in inputs)
    try:
        with cell.own("reference", size, 0):  # raises a GPU fault as it is, anything else as a CaseBug
            return _step(cell.reference_model().double(), _leaves(cell, wide), [g.double() for g in out_grads])[1]
    except CaseBug:  # a reference that needs its own dtype
        return []


def _leaves(cell: Cell, inputs: Inputs) -> Inputs:
    """Copies of ``inputs`` (the ones every artifact of the case and size shares) as a training step's
    own leaves: its in-place writes and its gradients stay off the shared ones."""
    return tuple(_leaf(cell, index, value) for index, value in enumerate(inputs))


def _leaf(cell: Cell, index: int, value: Any) -> Any:
    if not isinstance(value, torch.Tensor):
        return value
    return copy_inputs((value,))[0].requires_grad_(cell.case.takes_grad(index, value))


def _step(model: Any, inputs: Inputs, out_grads: list[Any] | None = None) -> tuple[Any, list[Any], list[Any]]:
    """One training step: the outputs, the inputs' gradients and the output grads given (``out_grads``, else drawn
    from a generator seeded 0, one per output that requires grad)."""
    outs = as_tuple(model(*inputs))
    live = [out for out in outs if isinstance(out, torch.Tensor) and out.requires_grad]
    if out_grads is None:
        generator = torch.Generator(device=live[0].device).manual_seed(0) if live else None
        out_grads = [torch.randn(out.shape, generator=generator, dtype=out.dtype, device=out.device) for out in live]
    torch.autograd.backward(live, out_grads)
    detached = tuple(out.detach() if isinstance(out, torch.Tensor) else out for out in outs)
    return detached, [value.grad if isinstance(value, torch.Tensor) else None for value in inputs], out_grads
