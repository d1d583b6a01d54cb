"""What a ``wrong`` cell's error says, in one line for the console: the output that differs, the greatest
absolute difference and where; and the kernel that is wrong in every style (its case's own bug, not a style's)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from harness.records.record import Record
from harness.report.casebugs import on_eager
from harness.report.marks import first_sentence, wrong_numbers
from harness.report.speed import CONTROL
from harness.spec import Status

_GREATEST = re.compile(r"Greatest absolute difference: (?P<diff>\S+) at index (?P<where>\([^)]*\))")
_RELATIVE = re.compile(r"Greatest relative difference: (?P<diff>\S+) at index")
_ELEMENTS = re.compile(r"Mismatched elements: (?P<count>\d+ / \d+)")


def max_abs_diff(record: Record) -> float | None:
    """The greatest absolute difference its error reports (None when it reports none)."""
    found = _GREATEST.search(record.error or "")
    try:
        return float(found["diff"]) if found else None
    except ValueError:
        return None


def first_mismatch(record: Record) -> str:
    """``output: max abs diff 749.3 at index (10,), 3001 / 3001 elements``; else the error's first sentence."""
    error = record.error or ""
    greatest = _GREATEST.search(error)
    if not greatest:
        return first_sentence(error) or (record.error_type or "wrong")
    what = error.split(":", 1)[0]
    elements = _ELEMENTS.search(error)
    count = f", {elements['count']} elements differ" if elements else ""
    return f"{what}: max abs diff {float(greatest['diff']):.4g} at index {greatest['where']}{count}"


def magnitude(record: Record) -> str:
    """How wrong: ``output: max abs 749.3, max rel 1.02e+06, 3001 / 3001 elements``; else the error's first
    sentence (``gradient of input 1: missing``)."""
    error = record.error or ""
    greatest, relative = _GREATEST.search(error), _RELATIVE.search(error)
    if not greatest:
        return first_sentence(error) or (record.error_type or "wrong")
    rel = f", max rel {float(relative['diff']):.3g}" if relative else ""
    elements = _ELEMENTS.search(error)
    count = f", {elements['count']} elements" if elements else ""
    return f"{error.split(':', 1)[0]}: max abs {float(greatest['diff']):.4g}{rel}{count}"


COMPARED = (Status.PASS, Status.WRONG, Status.BLIND, Status.GRAPH_BREAK)  # a cell whose numbers were compared


@dataclass(frozen=True)
class WrongKernel:
    """A case's kernel wrong on ``eager`` in every style whose numbers were compared there (``compared`` of the
    ``styles`` run; the others errored on a wrapping limit, crashed or were skipped before any comparison)."""

    case: str
    diff: float | None  # the greatest absolute difference of its wrong cells, where their errors give one
    compared: int
    styles: int

    def scope(self) -> str:
        """``every style``, or ``the 11 of 12 styles that ran to a comparison`` when some did not."""
        if self.compared == self.styles:
            return "every style"
        return f"the {self.compared} of {self.styles} styles that ran to a comparison"

    def reason(self) -> str:
        """Why its cells say nothing of the styles."""
        return (
            f"its kernel disagrees with its reference on eager in {self.scope()}, while its control passes: fix the "
            "kernel first"
        )

    def line(self) -> str:
        """``the kernel leaky disagrees with its reference in every style (max abs diff 2.25), while its control
        passes: fix the kernel first``."""
        size = f" (max abs diff {self.diff:.4g})" if self.diff is not None else ""
        return (
            f"the kernel {self.case} disagrees with its reference in {self.scope()}{size}, while its control passes: "
            "fix the kernel first"
        )


def wrong_kernels(cells: Iterable[Record]) -> dict[str, WrongKernel]:
    """case -> its wrong kernel, for each case whose every style but the control that got its numbers compared on
    ``eager`` (at least one) gave wrong numbers there, while its control passes: the kernel disagrees with its
    reference. A style that errored (a wrapping limit), crashed or was skipped before a comparison says nothing of
    the kernel's numbers: it does not count."""
    found: dict[str, WrongKernel] = {}
    for case, eager in on_eager(cells).items():
        styles = [c for c in eager if c.style != CONTROL]
        control = [c for c in eager if c.style == CONTROL]
        compared = [c for c in styles if any(status in COMPARED for status in c.attempts)]
        if compared and control and all(map(wrong_numbers, compared)) and control[0].status == Status.PASS:
            diffs = [d for c in compared if (d := max_abs_diff(c)) is not None]
            found[case] = WrongKernel(case, max(diffs) if diffs else None, len(compared), len(styles))
    return found
