"""What a ``wrong`` cell's error says, in one line for the console: the output that differs, the greatest
absolute difference and where; and the kernel that is wrong in every style (its case's own bug, not a style's)."""

from __future__ import annotations

import re

from harness.records.record import Record
from harness.report.marks import first_sentence, wrong_numbers
from harness.spec import Status

_GREATEST = re.compile(r"Greatest absolute difference: (?P<diff>\S+) at index (?P<where>\([^)]*\))")
_RELATIVE = re.compile(r"Greatest relative difference: (?P<diff>\S+) at index")
_ELEMENTS = re.compile(r"Mismatched elements: (?P<count>\d+ / \d+)")
EAGER = "eager"  # the path where a kernel is run as written: wrong there in every style, the kernel is wrong


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


def wrong_kernels(cells: list[Record]) -> dict[str, float | None]:
    """case -> its greatest absolute difference, for each case wrong on ``eager`` in every style but the control
    (at least one), whose control passes there: the kernel disagrees with its reference."""
    found: dict[str, float | None] = {}
    for case in dict.fromkeys(cell.case for cell in cells):
        eager = [c for c in cells if c.case == case and c.path == EAGER]
        styles = [c for c in eager if c.style != "control"]
        control = [c for c in eager if c.style == "control"]
        if styles and control and all(map(wrong_numbers, styles)) and control[0].status == Status.PASS:
            diffs = [d for c in styles if (d := max_abs_diff(c)) is not None]
            found[case] = max(diffs) if diffs else None
    return found
