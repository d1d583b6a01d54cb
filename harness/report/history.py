"""Version history: several results files (one per torch/triton version) drawn as one chart."""

from __future__ import annotations

from typing import Any

from tabulate import tabulate

from harness.records.results import Results
from harness.report.marks import FLAKY, MISSING, SUBSYSTEM, SYMBOLS, mark


def label(env: dict[str, Any]) -> str:
    """A run's column: torch version, triton version, and the machine."""
    return f"torch {env.get('torch')} / triton {env.get('triton')} ({env.get('device')})"


def short(env: dict[str, Any]) -> str:
    return str(env.get("torch")).split("+")[0]


def render(runs: list[Results]) -> str:
    """Runs in the order given (oldest first); every cell's mark in each (a subsystem that ignored the kernel
    and a flaky cell's rate as in the chart), cells whose mark changed first."""
    cells: dict[str, list[str | None]] = {}
    for index, run in enumerate(runs):
        for cell in run.cells:
            cells.setdefault(cell.id, [None] * len(runs))[index] = mark(cell)
    changed = {cell: marks for cell, marks in cells.items() if len(set(marks)) > 1}
    headers = ["cell", *(label(run.environment) for run in runs)]
    out = ["# Support history across torch/triton versions", ""]
    out += [
        f"- {label(run.environment)}: {len(run.cells)} cells, commit {run.environment.get('commit')}, "
        f"{run.environment.get('timestamp')}"
        for run in runs
    ]
    out += ["", f"## Cells whose status changed ({len(changed)})", ""]
    if changed:
        rows = [[cell, _trend(runs, marks)] for cell, marks in changed.items()]
        out += [tabulate(rows, headers=["cell", "trend"], tablefmt="github"), ""]
    else:
        out += ["None: every cell has the same status in every run.", ""]
    rows = [[cell, *(_symbol(m) for m in marks)] for cell, marks in cells.items()]
    out += [f"## All cells ({len(cells)})", "", tabulate(rows, headers=headers, tablefmt="github"), ""]
    out += [
        "Legend: "
        + ", ".join(f"{symbol} {status}" for status, symbol in SYMBOLS.items())
        + f", {SUBSYSTEM} a subsystem ignored the kernel (not wrong numbers), {FLAKY} flaky (failing attempts"
        f" / attempts), {MISSING} not in that run",
        "",
    ]
    return "\n".join(out)


def _symbol(cell_mark: str | None) -> str:
    return MISSING if cell_mark is None else cell_mark


def _trend(runs: list[Results], marks: list[str | None]) -> str:
    return " → ".join(f"{short(run.environment)} {_symbol(m)}" for run, m in zip(runs, marks, strict=True))
