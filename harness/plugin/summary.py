"""The end of a run, on the controller: which matrix file it used (in pytest's header), and last, below pytest's
own error blocks, the chart's path and a short verdict summary from the run's results (the records writer's)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Generator
from typing import Any

import pytest

from harness.errors import EXIT_SUSPECTS
from harness.plugin.options import options, runs_matrix
from harness.records.confirmation import is_suspect, not_confirmed
from harness.records.record import Record
from harness.records.results import Results
from harness.report.casebugs import broken_cases, failing_kernels
from harness.report.mismatch import first_mismatch, wrong_kernels
from harness.spec import Status

SHOWN = 20  # wrong cells named, at most


class RunSummary:
    def __init__(self, config: pytest.Config, results: Callable[[], Results | None]) -> None:
        self.config = config
        self.results = results  # the run's, None until written

    def pytest_report_header(self, config: pytest.Config) -> str | None:
        if not runs_matrix(config):
            return None
        given = options(config)
        source = f" ({given.matrix_source})" if given.matrix_source != "--matrix" else ""
        return f"matrix: {given.matrix_file}{source}"

    @pytest.hookimpl(wrapper=True, tryfirst=True)  # outside the terminal reporter's: after its short summary
    def pytest_terminal_summary(self, terminalreporter: Any) -> Generator[None, None, None]:
        yield
        results = self.results()
        if results is not None:
            chart = options(self.config).report_dir / "matrix.md"
            for line in summary_lines(results.cells, chart, complete=bool(results.environment.get("complete"))):
                terminalreporter.write_line(line)


def summary_lines(cells: list[Record], chart: Any, complete: bool = True) -> list[str]:
    """The chart's path; the cells counted by status (and whether a cell selected has none: an interrupted run,
    ``complete`` False); the wrong ones (silently wrong numbers) named, each with
    its first mismatch; the passes whose kernel ran outside the compiled graph (``graph_break``) counted; each case
    broken in its own code at inputs its cells drew (``broken_cases``); each kernel failing as written, alike in
    every style on ``eager`` (``failing_kernels``); last,
    each kernel wrong on ``eager`` in every style that ran to a comparison while its control passes (the kernel's
    bug, not a style's: ``wrong_kernels``)."""
    counts = Counter(str(cell.status) for cell in cells)
    lines = [
        f"[harness] chart: {chart}",
        f"[harness] {len(cells)} cells{'' if complete else ' (incomplete: not every selected cell has a record)'}: "
        + (", ".join(f"{n} {status}" for status, n in counts.most_common()) or "none run"),
    ]
    wrong = [cell for cell in cells if cell.status == Status.WRONG]
    if wrong:
        more = f" and {len(wrong) - SHOWN} more" if len(wrong) > SHOWN else ""
        lines.append(f"[harness] silently wrong ({len(wrong)}): {', '.join(c.id for c in wrong[:SHOWN])}{more}")
        lines += [f"[harness]   {cell.id}: {first_mismatch(cell)}" for cell in wrong]
    else:
        lines.append("[harness] silently wrong: none")
    confirmed = [cell for cell in cells if cell.confirmation]
    suspects = [cell.id for cell in confirmed if is_suspect(cell)]
    unconfirmed = [cell.id for cell in confirmed if not_confirmed(cell)]
    if confirmed:
        shown = len(confirmed) - len(suspects) - len(unconfirmed)
        lines.append(f"[harness] failures reproduced by their repro script: {shown} of {len(confirmed)}")
    if unconfirmed:
        more = f" and {len(unconfirmed) - SHOWN} more" if len(unconfirmed) > SHOWN else ""
        lines.append(f"[harness] not confirmed, their repro script stopped or out of time ({len(unconfirmed)}): "
                     f"{', '.join(unconfirmed[:SHOWN])}{more}")
    if suspects:
        more = f" and {len(suspects) - SHOWN} more" if len(suspects) > SHOWN else ""
        lines.append(f"[harness] HARNESS SUSPECTS, not reproduced outside the harness ({len(suspects)}): "
                     f"{', '.join(suspects[:SHOWN])}{more} (exit {EXIT_SUSPECTS})")
    if counts[Status.GRAPH_BREAK]:
        outside = counts[Status.GRAPH_BREAK]
        lines.append(f"[harness] passes whose kernel ran outside the compiled graph (graph_break): {outside}")
    lines += [f"[harness] {bug.line()}" for bug in broken_cases(cells).values()]
    lines += [f"[harness] {kernel.line()}" for kernel in failing_kernels(cells).values()]
    return lines + [f"[harness] {kernel.line()}" for kernel in wrong_kernels(cells).values()]
