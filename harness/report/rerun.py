"""The gate's re-runs: regressed cells run again on this machine (when it is the one that measured them), and
what the re-runs saw applied to the diff. A re-run that passes makes a regression flaky; one that gives wrong
numbers makes it wrong, which no re-run excuses."""

from __future__ import annotations

import argparse
import dataclasses
import subprocess
import sys
import tempfile
from pathlib import Path

from harness.records.results import Results, read_results
from harness.report.gate import Change
from harness.spec import Status


def rerun_regressions(changes: list[Change], current: Results, args: argparse.Namespace) -> list[Change]:
    """The diff with each regression re-run ``args.rerun`` times here (not re-run, with a note, when
    ``current`` was measured on another machine)."""
    from harness.cell.runner import device_name

    regressed = [change.id for change in changes if change.kind == "regression"]
    if not regressed or args.rerun <= 0:
        return changes
    here = device_name()
    if current.environment.get("device") != here:
        print(
            f"note: not re-running regressions: {args.current} was measured on "
            f"{current.environment.get('device')}, this machine is {here}",
            file=sys.stderr,
        )
        return changes
    seen: dict[str, list[Status]] = {}
    for _ in range(args.rerun):
        for cell, status in _run_once(regressed, current, args).items():
            seen.setdefault(cell, []).append(status)
    return apply_reruns(changes, seen)


def apply_reruns(changes: list[Change], seen: dict[str, list[Status]]) -> list[Change]:
    """Each regression judged again by what its re-runs saw (``seen``: cell id -> each re-run's status, in
    order): wrong numbers on any re-run make it ``wrong``; else a pass on any makes it ``flaky``."""
    out = []
    for change in changes:
        statuses = seen.get(change.id, [])
        if change.kind == "regression" and Status.WRONG in statuses:
            n = statuses.index(Status.WRONG) + 1
            change = dataclasses.replace(change, kind="wrong", current=f"{change.current}; wrong on re-run {n}")
        elif change.kind == "regression" and Status.PASS in statuses:
            n = statuses.index(Status.PASS) + 1
            change = dataclasses.replace(change, kind="flaky", current=f"{change.current}; pass on re-run {n}")
        out.append(change)
    return out


def _run_once(cells: list[str], current: Results, args: argparse.Namespace) -> dict[str, Status]:
    """One ``python -m harness run`` of ``cells``: each one's status."""
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "harness",
                "run",
                "--matrix",
                args.matrix,
                "--report-dir",
                out,
                *(f"{args.matrix}::{cell}" for cell in cells),
                *(["--interpret"] if current.environment.get("triton_interpret") else []),
                "-q",
            ],
            check=False,
            capture_output=True,
        )
        results = Path(out) / "results.json"
        return {cell.id: cell.status for cell in read_results(results).cells} if results.exists() else {}
