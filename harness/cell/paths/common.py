"""What the path modules share: the registry (``@path``), running a model and comparing its output, and
compiling the cell's model."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from harness.case import Inputs, copy_inputs

if TYPE_CHECKING:
    from harness.cell.context import Cell


PathRunner = Callable[["Cell"], None]
PATHS: dict[str, PathRunner] = {}
PATH_GROUPS: dict[str, str] = {}  # path id -> the chart group of the module that registered it


def path(runner: PathRunner) -> PathRunner:
    """Register a path under its function's name (the id used in matrix.toml and cell ids; a trailing ``_`` that
    keeps a builtin's name free, ``compile_``, left out), in the group its module declares (``GROUP``)."""
    name = runner.__name__.removesuffix("_")
    PATHS[name] = runner
    PATH_GROUPS[name] = sys.modules[runner.__module__].GROUP
    return runner


CALLS = 2  # how often a path calls its model, compiled, exported or loaded artifact on the same inputs


def _infer(
    cell: Cell,
    model: Callable[..., Any],
    inputs: Inputs,
    what: str = "output",
    calls: int = CALLS,
    expected: Any = None,
) -> None:
    """Run ``model`` without grad on a copy of ``inputs``, ``CALLS`` times, and compare every call's output(s) with
    the reference's (``expected``, by default run here): a pass holds on every call (an artifact right once and wrong
    the next time is wrong)."""
    expected = cell.expected(inputs) if expected is None else expected
    cell.keep_call(model, inputs)
    for call in range(1, calls + 1):
        with torch.no_grad():
            out = model(*copy_inputs(inputs))
        cell.synchronize()
        cell.compare(what if call == 1 else f"{what}, call {call}", out, expected)
        cell.measurements.calls = (cell.measurements.calls or 0) + 1


def _compiled(cell: Cell, train: bool = False, **options: Any) -> Callable[..., Any]:
    cell.saw(compiled=True, trained=train)
    patches = torch._inductor.list_mode_options(options.pop("mode", "default"), options.get("dynamic"))
    return torch.compile(cell.model(train), backend=cell.backend(**patches), **options)
