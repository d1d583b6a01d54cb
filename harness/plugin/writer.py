"""The results writer, on the controller only: the records the run keeps (``--resume``, ``--reuse``) and every
record to results.json moments after it arrives (atomically, so a killed run keeps what it measured), a cell whose
pytest worker died recorded as ``crash``, and at the end the chart and one repro script per distinct failure."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from harness.cell.paths import PATH_GROUPS, PATHS
from harness.errors import EXIT_BAD_INPUT, EXIT_RUN_BROKE
from harness.plugin import options as opts
from harness.plugin import reportdir
from harness.plugin.collect import RECORD_PROPERTY, CellItem, device_of, record_of
from harness.plugin.processes import cell_environment
from harness.records import reuse
from harness.records.record import environment, memory_by_process, new_record, write_results
from harness.spec import Outcome

# The most of the controller's time that keeping results.json current may take: rewriting all 2574 records took
# about 0.1 s, and writing after every record kept the controller from feeding 30 xdist workers (they waited
# 1538 s in all between cells, a quarter of the run); records written at most every 9 such writes' time instead.
WRITE_SHARE = 0.1


def _first_line(function: Any) -> str:
    """A path's definition for the chart: its docstring's first sentence."""
    return " ".join((function.__doc__ or "").split()).split(". ")[0].rstrip(".")


class ResultsWriter:
    """Collects records as reports arrive and keeps results.json current; draws the chart at the end."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.options = config.stash[opts.options_key]
        self.cells: dict[str, dict[str, Any]] = {}
        self.expected: list[str] = []
        self.env: dict[str, Any] | None = None
        self.start = time.perf_counter()
        self.previous_env: dict[str, Any] = {}
        self.finished = False
        self.failed: OSError | None = None  # a write of results.json failed: the run stops
        self.rescued: str | None = None  # then, the line saying where its records went
        previous = opts.resumed(config)
        if previous is not None:
            import torch

            if previous["environment"].get("torch") != torch.__version__:
                pytest.exit(
                    f"{self.options.results_file}: environment.torch: a run of torch "
                    f"{previous['environment'].get('torch')} cannot be resumed under torch {torch.__version__}",
                    returncode=EXIT_BAD_INPUT,
                )
            self.previous_env = previous["environment"]
        # kept, not run: a resumed run's records, and the --reuse run's unchanged ones (collect.py deselects them)
        self.cells = dict(opts.kept(config))
        self.kept = list(self.cells)
        self.resumed = len(previous["cells"]) if previous else 0
        self.reused = len(self.kept) - self.resumed
        self.lock = threading.Lock()  # self.cells, between pytest's thread and the writer's
        self.writing = threading.Lock()
        self.unwritten = threading.Event()
        self.writer: threading.Thread | None = None

    def _environment(self, device: str | None) -> dict[str, Any]:
        if self.env is None:
            workers = opts.workers(self.config)
            matrix = opts.matrix(self.config)
            self.env = environment(device or reuse.device_name(), workers, str(self.options.matrix_file))
            axes = {"cases": list(matrix.cases), "styles": list(matrix.styles), "paths": [p.id for p in matrix.paths]}
            self.env.update(
                docs=matrix.docs,
                axes=axes,
                styles={style: {"decorator": d, "wrapper": w} for style, (d, w) in matrix.style_axes.items()},
                paths={
                    spec.id: {"group": PATH_GROUPS[spec.id], "doc": _first_line(PATHS[spec.id]), "device": spec.device}
                    for spec in matrix.paths
                },
                reruns=matrix.reruns,
                goals=matrix.goals or None,
                cell_environment=cell_environment(matrix.environment, self.options.cache_dir, workers),
                cache_dir=str(self.options.cache_dir.resolve()),
            )
        return self.env

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self._expect({item.name for item in session.items if isinstance(item, CellItem)})

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if not self.expected:
            matrix_file = self.options.matrix_file.resolve()
            file_of = {nodeid: (self.config.rootpath / nodeid.partition("::")[0]).resolve() for nodeid in ids}
            self._expect({nodeid.partition("::")[2] for nodeid in ids if file_of[nodeid] == matrix_file})

    def _expect(self, to_run: set[str]) -> None:
        """The cells this run must record: those selected now, plus those it keeps (resumed or reused)."""
        wanted = to_run | set(self.kept)
        if not wanted:
            return
        order = [*self.previous_env.get("expected_cells", []), *opts.matrix(self.config).cell_ids()]
        self.expected = list(dict.fromkeys(cell for cell in order if cell in wanted))
        self.expected += sorted(wanted - set(self.expected))

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        """xdist: the pytest worker running ``crashitem`` died. Its record says so (the report then arrives
        through pytest_runtest_logreport like any other)."""
        specs = {spec.id: spec for spec in opts.matrix(self.config).cells}
        spec = specs.get(crashitem.partition("::")[2])
        if spec is not None:
            lost = Outcome(status="crash", error_type="WorkerLost", error=str(report.longrepr)[-2000:])
            report.user_properties.append((RECORD_PROPERTY, new_record(spec, lost, opts.keys(self.config)[spec.id])))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = record_of(report)
        if record is None:
            return
        device = device_of(report)
        env = self._environment(device)
        if env["device"] == "unknown" and device:
            env["device"] = device
        with self.lock:
            self.cells[record["id"]] = record
        if self.failed:
            pytest.exit(self._rescue(), returncode=EXIT_RUN_BROKE)
        if self.writer is None:
            self.writer = threading.Thread(target=self._keep_writing, name="harness-results", daemon=True)
            self.writer.start()
        self.unwritten.set()

    def _keep_writing(self) -> None:
        """The writer thread: results.json with every record that has arrived, rewritten as new ones come, but
        busy at most ``WRITE_SHARE`` of the time (a write of the whole file grows with the run)."""
        while not self.finished:
            self.unwritten.wait()
            self.unwritten.clear()
            if self.finished:
                return
            start = time.perf_counter()
            self._write(complete=False)
            time.sleep((time.perf_counter() - start) * (1 / WRITE_SHARE - 1))

    def _data(self, complete: bool) -> dict[str, Any]:
        env = dict(self._environment(None))
        env["wall_seconds"] = round(time.perf_counter() - self.start, 1)
        with self.lock:
            recorded = list(self.cells.values())
        env["complete"] = complete and {record["id"] for record in recorded}.issuperset(self.expected)
        env["expected_cells"] = self.expected
        if self.resumed:
            env["resumed_cells"] = self.resumed
        if self.reused:
            env["reused_cells"] = self.reused
        if self.options.shard:
            env["shard"] = "{}/{}".format(*self.options.shard)
        env["memory"] = memory_by_process([cell for cell in recorded if not cell.get("reused_from")])
        order = {cell: index for index, cell in enumerate(self.expected)}
        cells = sorted(recorded, key=lambda r: order.get(r["id"], len(order)))
        return {"environment": env, "cells": cells}

    def _write(self, complete: bool) -> dict[str, Any] | None:
        """Write results.json (one writer at a time; once the run has finished, only its final write)."""
        with self.writing:
            if self.finished and not complete:
                return None
            data = self._data(complete)
            try:
                write_results(self.options.results_file, data["environment"], data["cells"])
            except OSError as error:
                self.failed = self.failed or error
                self.finished = True  # nothing more is written here: the next record stops the run
                return None
            return data

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.finish()
        if self.failed is not None:
            session.exitstatus = EXIT_RUN_BROKE

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.finish()  # again, in case an interrupted session's other plugins kept sessionfinish from us

    def finish(self) -> None:
        """Write the final results, the chart and the repros, once (a partial chart for an interrupted run)."""
        if not self.expected or self.config.option.collectonly:
            return
        from harness.report.chart import render
        from harness.report.repro import write_repros

        if not self.finished:
            self.finished = True
            self.unwritten.set()  # the writer thread ends
            data = self._write(complete=True)
            if data is not None:
                (self.options.report_dir / "matrix.md").write_text(render(data))
                write_repros(data, opts.matrix(self.config).tolerances, self.options.report_dir / "repros")
        if self.failed is not None and self.rescued is None:  # the last write failed, after every record
            self._rescue()

    def _rescue(self) -> str:
        """A write failed: save every record elsewhere; the line says where (and stops the run)."""
        assert self.failed is not None
        self.rescued = reportdir.write_failed(self.options.results_file, self.failed, self._data(complete=False))
        return self.rescued

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.rescued:
            terminalreporter.write_line(f"[harness] {self.rescued}")
        elif self.expected:
            folder = self.options.report_dir
            terminalreporter.write_line(
                f"[harness] records: {self.options.results_file}  chart: {folder / 'matrix.md'}  "
                f"repros: {folder / 'repros'}/"
            )
        kept = [f"{self.reused} record(s) of {self.options.reuse} whose key is unchanged (--reuse)"] * bool(self.reused)
        kept += [f"{self.resumed} record(s) of the resumed run (--resume)"] * bool(self.resumed)
        if kept:
            terminalreporter.write_line(f"[harness] not run, kept: {', '.join(kept)}")
