"""The subsystems group: CPU tensors and PyTorch machinery around the op (flop counting, ...)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from harness.compare import Mismatch
from harness.paths import path
from harness.paths.common import _infer
from harness.paths.compilation import compile, eager

if TYPE_CHECKING:
    from harness.cell import Cell

GROUP = "subsystems"


@path
def cpu_fallback(cell: Cell) -> None:
    """CPU tensors, eager: works where the style has a CPU kernel."""
    eager(cell)


@path
def cpu_compile(cell: Cell) -> None:
    """CPU tensors under ``torch.compile``."""
    compile(cell)


@path
def flop_counter(cell: Cell) -> None:
    """``FlopCounterMode`` must report the op's declared flops (the control row checks the output only)."""
    from torch.utils.flop_counter import FlopCounterMode

    inputs = cell.inputs()
    model = cell.model()
    cell.stage = "run"
    counter = FlopCounterMode(display=False)
    with counter:
        _infer(cell, model, inputs)
    counted = sum(n for op, n in counter.get_flop_counts().get("Global", {}).items() if str(op).startswith("harness."))
    cell.diagnostics["flops"] = counted
    if cell.style != "control":
        declared = _declared_flops(cell, inputs)
        if counted != declared:
            cell.stage = "compare"
            raise Mismatch(f"flops: FlopCounterMode counted {counted} for the op, the case declares {declared}")


def _declared_flops(cell: Cell, inputs: tuple[torch.Tensor, ...]) -> int:
    """The case's flop formula over the shapes the op is really called with inside the module."""
    declared = 0

    def spy(*args: torch.Tensor) -> Any:
        nonlocal declared
        declared += cell.case.flops(*(tuple(t.shape) for t in args))
        return cell.case.reference(*args)

    with torch.no_grad():
        cell.case.build_module(spy).to(cell.device)(*(t.clone() for t in inputs))
    return declared
