"""The program of one cell: the style built by its decorator-stack and wrapper functions, the path function run on
it with the kernels it launches observed, and the verdict judged from what it saw. The cell runs these functions;
its repro script holds their text and that of everything they use (``program``: a bundle, harness/bundle.py), so
the two run one program, and differ only where a fresh process differs."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import torch

from harness.bundle import Bundle, bundle, harness_imports
from harness.case import Case
from harness.cell.context import Cell
from harness.cell.paths import PATHS
from harness.cell.verdict import Facts, Kernel, verdict
from harness.kernel.compare import Mismatch
from harness.kernel.decorators import DECORATORS
from harness.kernel.launches import observed_launches
from harness.kernel.styles import AS_SHIPPED, CONTROL, KNOWN_STYLES, as_shipped, control, is_library_op, op_name
from harness.kernel.wrappers import WRAPPERS
from harness.spec import Status, Tolerance

MAX_BREAK_REASONS = 3  # Dynamo's graph-break reasons a record keeps, most frequent first
# what a repro's exception line starts with for each verdict that is not an exception of the cell's own
VERDICT_WORDS = {Status.WRONG: "wrong numbers: ", Status.GRAPH_BREAK: "graph break: ", Status.BLIND: ""}


class VerdictFailure(AssertionError):
    """A cell that ran to its end and failed its verdict (wrong numbers, a graph break, a blind count)."""


def run_program(cell: Cell, run_path: Callable[[Cell], None]) -> None:
    """Run the path on the cell's built style (seeded as every cell is), the kernels it launches observed, and
    Dynamo's graph breaks on the way counted, their most frequent reasons kept."""
    torch.manual_seed(0)
    torch._dynamo.utils.counters.clear()
    with observed_launches() as launched:
        try:
            run_path(cell)
        finally:
            cell.saw(kernels_launched=tuple(sorted(launched)))
            breaks = torch._dynamo.utils.counters["graph_break"]
            if breaks:
                common = breaks.most_common(MAX_BREAK_REASONS)
                reasons = tuple(" ".join(str(reason).split())[:300] for reason, _ in common)
                cell.saw(graph_breaks=sum(breaks.values()), graph_break_reasons=reasons)


def judge(cell: Cell, mismatch: str | None) -> tuple[Status, str | None]:
    """The verdict of a cell that ran to its end (or to its first number unlike the reference's, ``mismatch``)."""
    if cell.style == CONTROL:
        kernel = Kernel.NONE
    elif cell.style == AS_SHIPPED and not is_library_op(cell.case.shipped):
        kernel = Kernel.KERNELS  # a library op is captured whole
    else:
        kernel = Kernel.OP
    return verdict(Facts(cell.capture, kernel, cell.case.backward_kernel is not None, mismatch))


def check(cell: Cell, run_path: Callable[[Cell], None]) -> None:
    """A repro's run of the program: raises what the cell recorded (its own exception, or ``VerdictFailure``)."""
    mismatch = None
    try:
        run_program(cell, run_path)
    except Mismatch as error:
        mismatch = str(error).strip() or repr(error)
    status, said = judge(cell, mismatch)
    if status != Status.PASS:
        raise VerdictFailure(f"{VERDICT_WORDS[status]}{said}")


def style_roots(style: str) -> list[Any]:
    """The functions that build ``style``."""
    decorator, wrapper = KNOWN_STYLES[style]
    if wrapper == AS_SHIPPED:
        return [as_shipped]
    if decorator is None:
        return [control]
    return [DECORATORS[decorator], WRAPPERS[wrapper]]


def style_call(case: Case, style: str) -> str:
    """The call that builds ``style`` around ``case`` (``CASE``), by the functions ``style_roots`` names."""
    roots = style_roots(style)
    if len(roots) == 1:
        return f"{roots[0].__name__}(CASE)"
    decorate, wrap = roots
    return f"{wrap.__name__}(CASE, *{decorate.__name__}(CASE), {op_name(case, style)!r})"


def case_imports(module_name: str) -> list[tuple[str, str]]:
    """What the case module imports from the harness (``Case``, ...): its script carries their definitions."""
    return harness_imports(inspect.getsource(importlib.import_module(module_name)))


def program_digest(module_name: str, style: str, path: str) -> str:
    """The sha256 of the program text of a cell of this case module, style and path (what its script holds)."""
    return program(style, path, case_imports(module_name)).digest()


def program(style: str, path: str, case_imports: Sequence[tuple[str, str]]) -> Bundle:
    """The bundle of a cell's program: its style's and path's functions, the verdict, and what the case module
    imports from the harness (``Case``, ...)."""
    roots = [*case_imports, Cell, Tolerance, check, *style_roots(style), PATHS[path]]
    return bundle(roots, ("import tempfile", "from pathlib import Path"))
