"""The records writer, on the controller only: each finished cell's record appended to records.jsonl as its
report arrives (harness/records/log.py: a killed run keeps every cell it finished), and at the end results.json,
the chart and one repro script per distinct failure, derived from those lines."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.plugin import options as opts
from harness.plugin.collect import CellItem, device_of, record_of
from harness.plugin.processes import cell_environment
from harness.records.environment import environment
from harness.records.log import LOG_NAME, RecordLog, read_log
from harness.records.results import write_results
from harness.records.upgrade import path_entries

EXIT_WRITE_FAILED = 1  # a run that cannot keep its records stops at once, never exits 0


def run_environment(config: pytest.Config, device: str | None) -> dict[str, Any]:
    """The run's environment stamp: versions and machine, then the selected matrix's axes, goals and docs."""
    from harness.cell.runner import device_name

    options, matrix, workers = config.stash[opts.options_key], opts.matrix(config), opts.workers(config)
    env = environment(device or device_name(), workers, str(options.matrix_file))
    env.update(
        docs=matrix.docs,
        axes={"cases": list(matrix.cases), "styles": list(matrix.styles), "paths": [p.id for p in matrix.paths]},
        styles={style: {"decorator": d, "wrapper": w} for style, (d, w) in matrix.style_axes.items()},
        paths=path_entries([spec.id for spec in matrix.paths]),
        reruns=matrix.reruns,
        goals=matrix.goals or None,
        cell_environment=cell_environment(matrix.environment, options.cache_dir, workers),
        cache_dir=str(options.cache_dir.resolve()),
    )
    previous, kept = opts.resumed(config), opts.kept(config)
    resumed = len(previous.cells) if previous else 0
    counts = {"resumed_cells": resumed, "reused_cells": len(kept) - resumed}
    env.update({name: count for name, count in counts.items() if count})
    if options.shard:
        env["shard"] = "{}/{}".format(*options.shard)
    return env


def expected_ids(config: pytest.Config, to_run: set[str]) -> list[str]:
    """The cells this run must record, in matrix order: those selected now, plus those it keeps."""
    wanted = to_run | set(opts.kept(config))
    previous = opts.resumed(config)
    order = [*(previous.environment.get("expected_cells", []) if previous else []), *opts.matrix(config).cell_ids()]
    expected = list(dict.fromkeys(cell for cell in order if cell in wanted))
    return expected + sorted(wanted - set(expected))


def write_or_stop(file: Path, write: Callable[[], None]) -> None:
    """``write()``; when it fails, the run stops at once with one line naming ``file`` (exit 1)."""
    try:
        write()
    except OSError as error:
        pytest.exit(f"{file}: cannot write the records: {error}", returncode=EXIT_WRITE_FAILED)


class RecordsWriter:
    """Appends each record as it arrives; derives results.json, the chart and the repros at the end."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.options = config.stash[opts.options_key]
        self.log = RecordLog(self.options.report_dir / LOG_NAME)
        self.expected: list[str] = []
        self.start = time.perf_counter()
        self.finished = False

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        to_run = {item.name for item in session.items if isinstance(item, CellItem)}
        if to_run or opts.kept(self.config):
            self.expected = expected_ids(self.config, to_run)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if not self.expected:
            matrix_file = self.options.matrix_file.resolve()
            file_of = {nodeid: (self.config.rootpath / nodeid.partition("::")[0]).resolve() for nodeid in ids}
            to_run = {nodeid.partition("::")[2] for nodeid in ids if file_of[nodeid] == matrix_file}
            if to_run or opts.kept(self.config):
                self.expected = expected_ids(self.config, to_run)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = record_of(report)
        if record is not None:
            self._open(device_of(report))
            self._write(lambda: self.log.append(record))

    def _open(self, device: str | None) -> None:
        """The log's first lines, once: the environment, then the records this run keeps."""
        if self.log.stream is None:
            env = {**run_environment(self.config, device), "expected_cells": self.expected}
            self._write(lambda: self.log.start(env, list(opts.kept(self.config).values())))

    def _write(self, write: Callable[[], None]) -> None:
        write_or_stop(self.log.file, write)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.finish()

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.finish()  # again, in case an interrupted session's other plugins kept sessionfinish from us

    def finish(self) -> None:
        """The log's end line, then results.json, the chart and the repros derived from it, once."""
        if not self.expected or self.config.option.collectonly or self.finished:
            return
        from harness.report.chart import render
        from harness.report.repro import write_repros

        self.finished = True
        self._open(None)
        wall = round(time.perf_counter() - self.start, 1)
        self._write(lambda: self.log.end({"wall_seconds": wall, "complete": True}))
        results = read_log(self.log.file)
        write_results(self.options.results_file, results)
        (self.options.report_dir / "matrix.md").write_text(render(results))
        write_repros(results, opts.matrix(self.config).tolerances, self.options.report_dir / "repros")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.expected:
            folder = self.options.report_dir
            terminalreporter.write_line(
                f"[harness] records: {self.log.file} -> {self.options.results_file}  chart: {folder / 'matrix.md'}  "
                f"repros: {folder / 'repros'}/"
            )
        kept, previous = opts.kept(self.config), opts.resumed(self.config)
        if kept:
            resumed = len(previous.cells) if previous else 0
            terminalreporter.write_line(
                f"[harness] not run, kept: {len(kept) - resumed} record(s) of {self.options.reuse} whose key is "
                f"unchanged (--reuse), {resumed} of a resumed run (--resume)"
            )
