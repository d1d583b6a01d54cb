"""The records writer, on the controller only: each finished cell's record appended to records.jsonl as its
report arrives (harness/records/log.py: a killed run keeps every cell it finished), and at the end results.json,
the chart and one repro script per distinct failure, from the records it holds (the run's ``results``, which the
session's exit status and summary read: no file is read back). A write that fails stops the run with one line and
exit 6, every record so far saved (harness/plugin/reportdir.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.errors import EXIT_RUN_BROKE, InputError
from harness.execution.machine import versions
from harness.matrix.catalogue import Registries
from harness.plugin.collect import CellItem, device_of, record_of
from harness.plugin.confirming import Confirmer
from harness.plugin.inputs import inputs
from harness.plugin.options import options, workers
from harness.plugin.processes import TIMING_OUTPUT, cells_environment, given_key, processes_key
from harness.plugin.reportdir import ReportDir, report_dir
from harness.plugin.session import RunCommand
from harness.records import reuse, shares
from harness.records.environment import environment
from harness.records.log import LOG_NAME, RecordLog, assemble
from harness.records.record import Record
from harness.records.results import Results, ordered, write_results
from harness.records.schema import from_json
from harness.records.upgrade import path_entries
from harness.spec import Timing, TimingState


def run_environment(config: pytest.Config, device: str | None) -> dict[str, Any]:
    """The run's environment stamp: versions and machine, then the selected matrix's axes, goals and docs."""
    from harness.cell.runner import device_name

    given, run, count = options(config), inputs(config), workers(config)
    matrix = run.matrix
    settings = config.stash.get(given_key, None)
    env = environment(versions(), device or device_name(), count, str(given.matrix_file), settings)
    described = path_entries([spec.id for spec in matrix.paths], Registries())
    env.update(
        docs=matrix.docs,
        axes={"cases": list(matrix.cases), "styles": list(matrix.styles), "paths": [p.id for p in matrix.paths]},
        styles={style: {"decorator": d, "wrapper": w} for style, (d, w) in matrix.style_axes.items()},
        paths={spec.id: {**described[spec.id], "device": spec.device} for spec in matrix.paths},
        reruns=matrix.reruns,
        tolerances={dtype: {"atol": t.atol, "rtol": t.rtol} for dtype, t in matrix.tolerances.items()},
        libraries=reuse.libraries(set(matrix.modules.values())) or None,
        keyword=config.option.keyword or None,
        goals=matrix.goals or None,
        goal_sets=matrix.goal_sets or None,
        in_place=in_place(matrix) or None,
        cell_environment=cells_environment(config),
        cache_dir=str(given.cache_dir.resolve()),
        cold_cache=given.cold_cache,
    )
    resumed = len(run.resumed.cells) if run.resumed else 0
    counts = {"resumed_cells": resumed, "reused_cells": len(run.kept) - resumed}
    env.update({name: n for name, n in counts.items() if n})
    if given.shard:
        env["shard"] = "{}/{}".format(*given.shard)
    if run.shard_seconds is not None:
        env.update(shard_by=str(given.shard_by), shard_digest=shares.digest(run.shard_seconds))
    return env


def in_place(matrix: Any) -> dict[str, list[str]]:
    """case -> the inputs it writes into, for the cases whose op is in-place (``Case.mutates``): such an op cannot
    train as a ``torch.library`` op, which the goals' answers say."""
    from harness.case import load_case

    cases = {case: load_case(matrix.modules[case], case) for case in matrix.cases}
    return {case: list(spec.mutates) for case, spec in cases.items() if spec.mutates}


def expected_ids(config: pytest.Config, to_run: set[str]) -> list[str]:
    """The cells this run must record, in matrix order: those selected now, plus those it keeps."""
    run = inputs(config)
    wanted = to_run | set(run.kept)
    previous = run.resumed
    order = [*(previous.environment.get("expected_cells", []) if previous else []), *run.matrix.cell_ids()]
    expected = list(dict.fromkeys(cell for cell in order if cell in wanted))
    return expected + sorted(wanted - set(expected))


STOPPED = "a write into the report folder failed: the run stops"  # pytest's banner; the session says why


def write_or_stop(file: Path, write: Callable[[], None], records: Callable[[], Results], folder: ReportDir) -> None:
    """``write()``; when it fails, the run stops at once (exit 6), every record so far (``records()``) saved
    where ``folder``'s failed line, which names ``file``, says (the session prints it: ``error: ...``)."""
    try:
        write()
    except OSError as error:
        folder.write_failed(file, error, records().to_data())
        pytest.exit(STOPPED, returncode=EXIT_RUN_BROKE)


def command_started(config: pytest.Config) -> float:
    """Where the run's wall starts (``time.perf_counter``): when ``python -m harness run`` began, its imports and
    checks before the session included; else now (a plain ``pytest`` session)."""
    begun = [p.started for p in config.pluginmanager.get_plugins() if isinstance(p, RunCommand) and p.started]
    return min(begun) if begun else time.perf_counter()


def kept_line(reused: int, resumed: int, reuse: Path | None) -> str | None:
    """The summary's line for the records kept, not run (None when none was)."""
    kept = [f"{reused} record(s) of {reuse} whose key is unchanged (--reuse)"] * bool(reused)
    kept += [f"{resumed} record(s) of the resumed run (--resume)"] * bool(resumed)
    return f"[harness] not run, kept: {', '.join(kept)}" if kept else None


def received(cell: str, value: Any) -> Timing:
    """A worker's timing of ``cell`` as the controller reads it; one it cannot read (a negative or non-finite
    number, a missing field) leaves that cell not timed, saying why, and the run goes on."""
    try:
        return from_json(Timing, value, "worker output", cell)
    except InputError as error:
        return Timing.not_timed(f"its worker's timing could not be read: {error}")


class RecordsWriter:
    """Appends each record as it arrives; writes results.json, the chart and the repros at the end."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.options = options(config)
        self.inputs = inputs(config)
        self.folder = report_dir(config)
        self.log = RecordLog(self.options.report_dir / LOG_NAME)
        self.expected: list[str] = []
        self.env: dict[str, Any] = {}
        self.records: dict[str, Record] = {}  # what the log holds so far, saved elsewhere should a write fail
        self.start = command_started(config)
        self.finished = False
        self.results: Results | None = None  # the run's, once written at its end
        self.confirmer = Confirmer(config)
        self.copy_gbps: list[float] = []  # each timed worker's measure of the GPU's copy bandwidth
        self.phases: dict[str, dict[str, float]] = {}  # each worker's timing phase, step by step
        self.last_cell: float | None = None  # when the last cell's record arrived
        # the run's start, step by step (epoch): the command, its session, its workers' collections, its zygote
        self.marks: dict[str, float] = {"command": time.time() - (time.perf_counter() - self.start)}

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.marks["session"] = time.time()

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.marks.setdefault("first_collected", time.time())
        to_run = {item.name for item in session.items if isinstance(item, CellItem)}
        if to_run or self.inputs.kept:
            self.expected = expected_ids(self.config, to_run)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.marks.setdefault("first_collected", time.time())
        self.marks["last_collected"] = time.time()
        if not self.expected:  # by cell id: a worker's rootdir, so its node ids' paths, may differ from this one's
            cells = {spec.id for spec in self.inputs.plan.cells}
            to_run = {nodeid.rpartition("::")[2] for nodeid in ids} & cells
            if to_run or self.inputs.kept:
                self.expected = expected_ids(self.config, to_run)

    @pytest.hookimpl(tryfirst=True)  # the record is in records.jsonl before any other plugin sees its report
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = record_of(report)
        if record is not None:
            self._open(device_of(report))
            self.records[record.id] = record
            self._write(lambda: self.log.append(record))
            self.confirmer.submit(record, self.env)
            self.last_cell = time.perf_counter()
            if self.expected and len(self.records) >= len(self.expected) and self.records.keys() >= set(self.expected):
                self.confirmer.cells_ended()

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """xdist: a worker is done; its timings (harness/plugin/timing.py) replace its cells' pending ones."""
        sent = getattr(node, "workeroutput", {}).get(TIMING_OUTPUT) or {}
        timings = sent.get("timings") or {}
        self._timed({cell: received(cell, value) for cell, value in timings.items()})
        if sent.get("copy_gbps"):
            self.copy_gbps.append(sent["copy_gbps"])
        if sent.get("phase"):
            self.phases[str(sent.get("worker"))] = sent["phase"]

    def _timed(self, timings: dict[str, Timing]) -> None:
        """Each record of ``timings``' cells again, with its timing, in the log."""
        for cell, timing in timings.items():
            if cell in self.records and self.log.stream is not None:
                record = self.records[cell] = self.records[cell].replace(timing=timing)
                self._write(lambda record=record: self.log.append(record))

    def _end_timing(self) -> dict[str, Any]:
        """This process's own timings (a run without workers), the pending ones no worker timed marked so, and
        the end line's timing summary."""
        own = self.config.stash[processes_key]
        self._timed(own.timings)
        if own.phase:
            self.phases[own.worker] = own.phase
        if own.copy_gbps:
            self.copy_gbps.append(own.copy_gbps)
        lost = Timing.not_timed("its worker sent no timing (the worker was lost, or the run was interrupted)")
        pending = [r.id for r in self.records.values() if r.timing and r.timing.state is TimingState.PENDING]
        self._timed(dict.fromkeys(pending, lost))
        summary: dict[str, Any] = {}
        if self.copy_gbps:
            summary["copy_gbps"] = sorted(self.copy_gbps)[len(self.copy_gbps) // 2]
        if self.last_cell is not None and any(r.timing and r.timing.timed for r in self.records.values()):
            summary["timing_seconds"] = round(time.perf_counter() - self.last_cell, 1)
        if self.phases:
            summary["timing_phases"] = {worker: self.phases[worker] for worker in sorted(self.phases)}
        summary["start_marks"] = self._start_marks()
        return summary

    def _start_marks(self) -> dict[str, float]:
        """The run's start marks (epoch), with when its zygote began to serve (its log says) where one did."""
        from harness.execution.zygote import served_at

        log = self.config.stash[processes_key].zygote_log
        served = served_at(log.read_text(errors="replace"), self.marks["command"]) if log and log.exists() else None
        marks = {**self.marks, **({"zygote_serving": served} if served else {})}
        return {name: round(when, 3) for name, when in sorted(marks.items(), key=lambda mark: mark[1])}

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        """The run stops (Ctrl-C, SIGTERM, a failed write): no repro script runs on."""
        self.confirmer.stop()

    def _open(self, device: str | None) -> None:
        """The log's first lines, once: the environment, then the records this run keeps."""
        if self.log.stream is None:
            self.env = {**run_environment(self.config, device), "expected_cells": self.expected}
            self.records = dict(self.inputs.kept)
            self._write(lambda: self.log.start(self.env, list(self.records.values())))

    def _write(self, write: Callable[[], None]) -> None:
        try:
            write_or_stop(self.log.file, write, self._so_far, self.folder)
        except pytest.exit.Exception:
            self.finished = True  # nothing more is written: the run stops here
            raise

    def _so_far(self) -> Results:
        return Results({**self.env, "complete": False}, ordered(self.records.values(), self.expected))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.finish()

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.finish()  # again, in case an interrupted session's other plugins kept sessionfinish from us

    def finish(self) -> None:
        """The log's end line, then results.json, the chart and the repros, once, from the records held."""
        if not self.expected or self.config.option.collectonly or self.finished:
            return
        from harness.report.chart import write_chart, write_pictures
        from harness.repro.failures import write_repros

        self.finished = True
        file = self.log.file
        try:  # no pytest.exit here: a write failing after every record sets the exit status instead
            if self.log.stream is None:
                self.env = {**run_environment(self.config, None), "expected_cells": self.expected}
                self.records = dict(self.inputs.kept)
                self.log.start(self.env, list(self.records.values()))
            timing = self._end_timing()
            results = assemble(self.env, self.records, {}, from_log=False)
            file = self.options.report_dir / "repros"
            scripts = write_repros(results, self.inputs.matrix.tolerances, file, leaders=self.confirmer.leaders())
            file = self.log.file
            for record in self.confirmer.confirm(results, scripts):  # confirmed records replace the first ones
                self.records[record.id] = record
                self.log.append(record)
            if self.confirmer.interrupted is not None:  # while the scripts ran: the session exits 130
                self.config.hook.pytest_keyboard_interrupt(excinfo=self.confirmer.interrupted)
            file = self.options.report_dir / "pictures"  # drawn inside the wall: the user waits for them too
            write_pictures(assemble(self.env, self.records, timing, from_log=False), self.options.report_dir)
            end = {
                "wall_seconds": round(time.perf_counter() - self.start, 1), "complete": True, **timing,
                **self.confirmer.places(),
            }  # fmt: skip
            self.log.end(end)
            results = assemble(self.env, self.records, end, from_log=False)
            file = self.options.results_file
            write_results(file, results)
            file = self.options.report_dir / "matrix.md"
            write_chart(results, file, pictures_too=False)
            self.results = results
        except OSError as error:
            self.folder.write_failed(file, error, self._so_far().to_data())

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.results is not None:
            folder = self.options.report_dir
            terminalreporter.write_line(
                f"[harness] records: {self.log.file} -> {self.options.results_file}  chart: {folder / 'matrix.md'}  "
                f"repros: {folder / 'repros'}/"
            )
        kept, previous = self.inputs.kept, self.inputs.resumed
        resumed = len(previous.cells) if previous else 0
        line = kept_line(len(kept) - resumed, resumed, self.options.reuse)
        if line:
            terminalreporter.write_line(line)
