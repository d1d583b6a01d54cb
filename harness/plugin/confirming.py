"""Every distinct failure's repro script (harness/repro/failures.py) run in a fresh process (harness/execution/
confirm.py), and each failed cell's record given its ``confirmation``: reproduced by the script (with its error
line), or not, a harness suspect. The first cell of each kind of failure has its script run while the run goes on,
a few at a time beside the cells; the end of the run writes the final scripts (for those same cells), waits for
those runs and runs the rest. Records kept from an earlier run keep theirs; a run that broke confirms nothing."""

from __future__ import annotations

import shutil
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from harness.execution.confirm import ScriptRun, run_script, run_scripts
from harness.plugin.inputs import inputs
from harness.plugin.options import options, workers
from harness.records.confirmation import confirmation
from harness.records.record import Record
from harness.records.results import Results
from harness.report.broken import run_broke
from harness.repro.failures import failure_signature, safe_source
from harness.spec import Status

DEFAULT_LIMIT = 600.0  # seconds a script may run where its path is not in this run's matrix
EARLY_SHARE = 4  # while cells run, one script at a time per this many workers


class Confirmer:
    """Runs the repro scripts of a run's failures: early, as the first of each kind arrives, and at the end."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.enabled = options(config).confirm
        self.folder = options(config).report_dir / ".confirming"
        self.pool: ThreadPoolExecutor | None = None
        self.early: dict[str, tuple[str, Future[ScriptRun]]] = {}  # signature -> (its cell, its script's run)

    def submit(self, record: Record, env: dict[str, Any]) -> None:
        """During the run: the script of ``record``, the first failure of its kind, starts running."""
        if not self.enabled or record.status in (Status.PASS, Status.SKIP) or not record.module:
            return
        signature = failure_signature(record)
        if record.confirmation is not None or signature in self.early:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        script = self.folder / f"{len(self.early)}.py"
        script.write_text(safe_source(record, env, inputs(self.config).matrix.tolerances))
        if self.pool is None:
            self.pool = ThreadPoolExecutor(max_workers=max(1, workers(self.config) // EARLY_SHARE))
        future = self.pool.submit(run_script, script, self.limit(record.path))
        self.early[signature] = (record.id, future)

    def limit(self, path: str) -> float:
        """Seconds a script of a cell on ``path`` may run: the path's timeout in this run's matrix."""
        limits = {spec.id: spec.timeout for spec in inputs(self.config).matrix.paths}
        return limits.get(path, DEFAULT_LIMIT)

    def leaders(self) -> dict[str, str]:
        """Failure signature -> the cell whose script already runs (the final script is written for it)."""
        return {signature: cell for signature, (cell, _) in self.early.items()}

    def confirm(self, results: Results, scripts: dict[Path, list[str]]) -> list[Record]:
        """The records of ``scripts``' cells with their confirmation (none with ``--no-confirm``, or where the run
        broke: it measured nothing)."""
        try:
            if not self.enabled or not scripts or run_broke(results):
                return []
            return self._confirmed(results, scripts)
        finally:
            if self.pool is not None:
                self.pool.shutdown(cancel_futures=True)
            shutil.rmtree(self.folder, ignore_errors=True)

    def _confirmed(self, results: Results, scripts: dict[Path, list[str]]) -> list[Record]:
        records = results.by_id()
        early = {cell: future for cell, future in self.early.values()}
        to_run = {
            script: max(self.limit(records[cell].path) for cell in cells)
            for script, cells in scripts.items()
            if cells[0] not in early and any(records[cell].confirmation is None for cell in cells)
        }
        runs = run_scripts(to_run, workers(self.config))
        runs.update({script: early[cells[0]].result() for script, cells in scripts.items() if cells[0] in early})
        confirmed = []
        for script, run in runs.items():
            name = f"{script.parent.name}/{script.name}"
            for cell in scripts[script]:
                record = records[cell]
                if record.confirmation is not None:  # kept from an earlier run, with its own
                    continue
                found = confirmation(record, name, run.returncode, run.output, run.last_line)
                confirmed.append(record.replace(confirmation={**found, "seconds": run.seconds}))
        return confirmed
