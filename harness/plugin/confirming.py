"""At the end of a run: every distinct failure's repro script (harness/report/repro.py) run in a fresh process
(harness/execution/confirm.py), and each failed cell's record given its ``confirmation``: reproduced by the script
(with its error line), or not, a harness suspect. Records kept from an earlier run keep theirs."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.execution.confirm import run_scripts
from harness.plugin import options as opts
from harness.records.confirmation import confirmation
from harness.records.record import Record
from harness.records.results import Results
from harness.report.broken import run_broke

DEFAULT_LIMIT = 600.0  # seconds a script may run where its path is not in this run's matrix


def confirm(config: pytest.Config, results: Results, scripts: dict[Path, list[str]]) -> list[Record]:
    """The records of ``scripts``' cells with their confirmation (none with ``--no-confirm``)."""
    if config.getoption("no_confirm") or not scripts or run_broke(results):  # a broken run measured nothing
        return []
    records = results.by_id()
    limits = {path.id: path.timeout for path in opts.matrix(config).paths}
    to_run = {
        script: max(limits.get(records[cell].path, DEFAULT_LIMIT) for cell in cells)
        for script, cells in scripts.items()
        if any(records[cell].confirmation is None for cell in cells)
    }
    runs = run_scripts(to_run, opts.workers(config))
    confirmed = []
    for script, run in runs.items():
        name = f"{script.parent.name}/{script.name}"
        for cell in scripts[script]:
            record = records[cell]
            found = confirmation(record, name, run.returncode, run.output, run.last_line)
            confirmed.append(record.replace(confirmation={**found, "seconds": run.seconds}))
    return confirmed
