"""A case broken at inputs its cells drew: its own ``make_inputs`` or reference failed there (a size its load check
did not run; the cell's error type ``CASE_BUG``), so those cells measured nothing of the styles; and a kernel that
fails as written, the same way in every style on eager. Named once, in the run's summary and the chart, never
charted as the styles' failures."""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from harness.records.record import Record
from harness.report.speed import CONTROL, EAGER
from harness.spec import CASE_BUG, Status

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class BrokenCase:
    """A case whose own code failed in ``cells`` of its cells; ``error``: the first one's, in the case's words."""

    case: str
    cells: int
    error: str

    def reason(self) -> str:
        """Why its cells say nothing of the styles."""
        return f"{self.error}: the case's own bug, fix the case first"

    def line(self) -> str:
        """The run's summary line."""
        return (
            f"{self.cells} cell(s) of {self.case} failed in the case's own code, not in a style: {self.error}: fix "
            "the case first"
        )


def is_case_bug(record: Record) -> bool:
    """The cell failed in its case's own code, not in the style."""
    return record.error_type == CASE_BUG


def broken_cases(cells: Iterable[Record]) -> dict[str, BrokenCase]:
    """case -> how it is broken, for each case some cell of which failed in the case's own code."""
    bugs = group_by((cell for cell in cells if is_case_bug(cell)), lambda cell: cell.case)
    return {case: BrokenCase(case, len(found), found[0].error or CASE_BUG) for case, found in bugs.items()}


@dataclass(frozen=True)
class FailingKernel:
    """A case's kernel that fails as written: on ``eager`` every style that ran raised, ``alike`` of the ``styles``
    (more than half, at least two) the same error at the same stage, while its control passes; ``error``: theirs."""

    case: str
    alike: int
    styles: int
    error: str

    def scope(self) -> str:
        return "every style" if self.alike == self.styles else f"{self.alike} of {self.styles} styles"

    def reason(self) -> str:
        """Why its cells say nothing of the styles."""
        return (
            f"its kernel fails the same way in {self.scope()} on eager ({self.error}), while its control passes: fix "
            "the kernel first"
        )

    def line(self) -> str:
        """The run's summary line."""
        return (
            f"the kernel {self.case} fails the same way in {self.scope()} on eager, while its control passes: "
            f"{self.error}: fix the kernel first"
        )


def group_by(cells: Iterable[Record], key: Callable[[Record], K]) -> dict[K, list[Record]]:
    """The cells by ``key``, each group in the cells' order."""
    groups: dict[K, list[Record]] = {}
    for cell in cells:
        groups.setdefault(key(cell), []).append(cell)
    return groups


def on_eager(cells: Iterable[Record]) -> dict[str, list[Record]]:
    """case -> its cells on ``eager``, where a kernel runs as written."""
    return group_by((cell for cell in cells if cell.path == EAGER), lambda cell: cell.case)


def _failure(record: Record) -> tuple[str, ...]:
    """A failure with the cell's own names and the numbers in its message set aside: its stage, error type and
    message's first line."""
    lines = (record.error or "").strip().splitlines()
    message = lines[0] if lines else ""
    for name in (record.style, record.case):
        message = re.sub(rf"\w*{re.escape(name)}\w*", "ID", message)
    return (str(record.stage), str(record.error_type), re.sub(r"0x[0-9a-fA-F]+|\d+", "N", message))


def failing_kernels(cells: Iterable[Record]) -> dict[str, FailingKernel]:
    """case -> its kernel failing as written, for each case whose every style but the control that ran on
    ``eager`` raised there, more than half of them (two or more: a library's one op as shipped is itself the
    finding) the same error (``_failure``), while its control passes: no wrapping is the cause of what the
    plainest launches share (Triton's interpreter refusing a bool argument, a block size that is no power of two);
    a style failing otherwise (a wrapping's own limit) keeps its cells in the chart, as all of them do."""
    found: dict[str, FailingKernel] = {}
    for case, eager in on_eager(cells).items():
        styles = [c for c in eager if c.style != CONTROL]
        control = [c for c in eager if c.style == CONTROL]
        ran = [c for c in styles if c.status != Status.SKIP]
        if not ran or not control or control[0].status != Status.PASS:
            continue
        if any(c.status != Status.ERROR for c in ran):
            continue
        alike = max(group_by(ran, _failure).values(), key=len)  # the most common failure, the first on a tie
        if len(alike) >= 2 and 2 * len(alike) > len(styles):
            error = " ".join(((alike[0].error or "").strip().splitlines() or [""])[0].split())[:200]
            found[case] = FailingKernel(case, len(alike), len(styles), f"{alike[0].error_type}: {error}")
    return found
