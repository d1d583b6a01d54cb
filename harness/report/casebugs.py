"""A case broken at inputs its cells drew: its own ``make_inputs`` or reference failed there (a size its load check
did not run; the cell's error type ``CASE_BUG``), so those cells measured nothing of the styles. Named once, in the
run's summary and the chart, never charted as the styles' failures."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from harness.records.record import Record
from harness.spec import CASE_BUG


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
    bugs: dict[str, list[Record]] = {}
    for cell in cells:
        if is_case_bug(cell):
            bugs.setdefault(cell.case, []).append(cell)
    return {case: BrokenCase(case, len(found), found[0].error or CASE_BUG) for case, found in bugs.items()}
