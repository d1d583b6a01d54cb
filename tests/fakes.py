"""Fakes for the process machinery: a cell runner that runs no process (the ``CellRunner`` protocol of
harness/plugin/processes.py), so scheduling, re-runs and crash records are tested in milliseconds, as
pytest-xdist tests its scheduler with ``MockNode``."""

from __future__ import annotations

import dataclasses
import os
import pickle
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness.cell.timing import Profile, Profiled
from harness.plugin import inputs, options
from harness.spec import CellSpec, Outcome, Timing

Answer = Callable[[CellSpec], Outcome]


@dataclass
class FakeRun:
    """One cell run by a fake process: which process (its number, in the order they were made) ran which attempt."""

    process: int
    cell: str
    attempt: int


@dataclass
class FakeProcess:
    """A cell process that answers each spec at once, as ``FakeCells.answer`` says."""

    cells: FakeCells
    number: int
    log_name: str
    gpu: str | None
    device: str | None = None
    stopped: int = 0
    closed: bool = False
    begun_after: int | None = None  # how many cells had run when it was begun ahead of its first (None: never)

    def begin(self) -> None:
        self.begun_after = len(self.cells.runs)

    def run(self, spec: CellSpec) -> Outcome:
        assert not self.closed, f"process {self.number} ran {spec.id} after it was closed"
        self.device = "fake-device"
        self.cells.runs.append(FakeRun(self.number, spec.id, spec.attempt))
        outcome = self.cells.answer(spec)
        runs = len(self.cells.runs)
        outcome.measurements.started, outcome.measurements.ended = float(runs), runs + 0.5
        return outcome

    def stop(self) -> None:
        self.stopped += 1

    def close(self) -> None:
        self.closed = True


@dataclass
class FakeCells:
    """The factory ``CellProcesses.make_process`` calls; it keeps every process it made and every run.
    ``statuses``: cell id -> the status of each attempt in turn (the last repeats; ``pass`` for other cells);
    a ``crash`` comes with ``error_type`` SIGSEGV, as a dead cell process's does; a ``cuda_fault`` is an error
    with ``cuda_fault`` set, as a cell whose GPU faulted gets; ``not_started`` is the error of a cell whose cell
    process could not start. ``in_turn``: the status of the first attempt of the first, second, ... cell run, in
    the order they run (before ``statuses``)."""

    statuses: dict[str, list[str]] = field(default_factory=dict)
    in_turn: list[str] = field(default_factory=list)
    processes: list[FakeProcess] = field(default_factory=list)
    runs: list[FakeRun] = field(default_factory=list)

    def __call__(
        self,
        log_file: Path,
        environment: dict[str, str],
        gpu: str | None,
        max_rss_mb: float = 0,
        zygote_address: str | None = None,
        zygote_pid: int | None = None,
    ) -> FakeProcess:
        process = FakeProcess(self, len(self.processes), log_file.stem, gpu)
        self.processes.append(process)
        return process

    def answer(self, spec: CellSpec) -> Outcome:
        statuses = self.statuses.get(spec.id, ["pass"])
        status = statuses[min(spec.attempt, len(statuses)) - 1]
        firsts = sum(run.attempt == 1 for run in self.runs)  # this run's own included
        if spec.attempt == 1 and firsts <= len(self.in_turn):
            status = self.in_turn[firsts - 1]
        if status == "not_started":
            failure = "cell process failed to start: ImportError: cannot import name 'knobs' from 'triton'"
            return Outcome(status="error", error_type="CellProcessFailed", error=failure, stage="build")
        if status == "crash":
            return Outcome(status="crash", error_type="SIGSEGV", error="cell process died of SIGSEGV")
        if status == "cuda_fault":
            fault = "CUDA error: an illegal memory access was encountered"
            return Outcome(status="error", error_type="AcceleratorError", error=fault, cuda_fault=True)
        if status == "poisoned":  # passed, then the timing's check at the bandwidth size faulted the GPU
            return Outcome(status="pass", poisoned=True)
        if status in ("wrong", "error"):
            return Outcome(status=status, error_type="Mismatch" if status == "wrong" else "RuntimeError", error="x")
        return Outcome(status=status, reason="no CUDA device" if status == "skip" else None)


@dataclass
class InProcessCell:
    """A cell process that runs each cell for real, by ``run_cell`` in this process (on CPU), stamps its start and
    end as ``CellProcess.run`` does, and answers the timing phase as a cell process's child does: a whole run's
    records as the code writes them, with no process started."""

    workdir: Path
    device: str | None = None
    pid: int = field(default_factory=os.getpid)
    built: dict[Any, Any] = field(default_factory=dict)

    def run(self, spec: CellSpec) -> Outcome:
        from harness.case import load_case
        from harness.cell.runner import run_cell

        self.device = "cpu"
        started = time.time()
        outcome = run_cell(load_case(spec.module, spec.case), spec, self.workdir, self.built, "cpu")
        outcome.measurements.started, outcome.measurements.ended = round(started, 3), round(time.time(), 3)
        return outcome

    def ask(self, request: tuple[Any, ...], timeout: float) -> Any:
        from harness.execution.child import answer_timing

        return answer_timing(request)

    def begin(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def close(self) -> None:
        pass


@dataclass
class InProcessCells:
    """The factory ``CellProcesses.make_process`` calls for ``InProcessCell``s."""

    workdir: Path

    def __call__(self, log_file: Path, environment: dict[str, str], gpu: str | None, *rest: Any) -> InProcessCell:
        return InProcessCell(self.workdir)


def fake_config(tmp_path: Path, cells: tuple[CellSpec, ...], workerid: str | None = None, **plan: Any) -> Any:
    """Just what ``CellProcesses`` reads of a pytest config: the options, the plan (as a worker's, from its
    controller), the xdist worker's id."""
    given = options.Options(
        matrix_file=tmp_path / "m.toml",
        matrix_source="--matrix",
        report_dir=tmp_path / "out",
        cases=None,
        styles=None,
        paths=None,
        shard=None,
        resume=False,
        cache_dir=tmp_path / "cache",
        max_rss_mb=0,
        baseline=None,
        reuse=None,
    )
    fields = {"keys": {}, "wanted": frozenset(), "baseline": {}, "reruns": 0, "environment": {}, "gpus": (), **plan}
    stash = pytest.Stash()
    stash[options.options_key] = given
    plan = {inputs.PLAN_INPUT: pickle.dumps(inputs.Plan(cells=cells, **fields))}  # as a worker gets it
    worker = {"workerid": workerid, "workercount": 2} if workerid is not None else {}
    option = SimpleNamespace(dist="no", tx=None, collectonly=False)
    return SimpleNamespace(stash=stash, option=option, workerinput={**plan, **worker})


class FakeTimer:
    """Device seconds from a list (cycled), host seconds fixed; each timed call is made, as a real timer's is, and
    each device sample's cover kept (``covers``). ``kernels``: each profiled call's GPU activities (name, seconds),
    cycled; ``profiler``: what the profiler raises instead (None: it works); ``memory``: the bytes a call allocates
    at its peak."""

    def __init__(
        self,
        device: list[float],
        host: float = 2e-6,
        kernels: list[list[tuple[str, float]]] | None = None,
        profiler: Exception | None = None,
        memory: int = 3 * 2**20,
    ) -> None:
        self.device, self.host, self.calls, self.covers, self.memory = device, host, 0, [], memory
        self.kernels = kernels if kernels is not None else [[("add_k", 1e-6)], [("add_k", 1.25e-6)], [("add_k", 2e-6)]]
        self.profiler, self.profiled, self.sessions = profiler, 0, 0

    def device_seconds(self, call: Callable[[], object], cover: float) -> float:
        call()
        self.calls += 1
        self.covers.append(cover)
        return self.device[(self.calls - 1) % len(self.device)]

    def kernel_samples(self, artifacts: Sequence[Profiled]) -> list[Profile]:
        if self.profiler is not None:
            raise self.profiler
        self.sessions += 1
        profiles = []
        for artifact in artifacts:
            artifact.ready()
            artifact.call()  # the call not counted
            calls = []
            for index in range(artifact.count):
                artifact.call()
                calls.append(self.kernels[index % len(self.kernels)])
            self.calls += artifact.count
            self.profiled += artifact.count
            profiles.append(Profile(calls, 0.0))
        return profiles

    def host_seconds(self, call: Callable[[], object]) -> float:
        call()
        return self.host

    def synchronize(self) -> None:
        pass

    def copy_gbps(self) -> float | None:
        return 3000.0

    def call_bytes(self, call: Callable[[], object]) -> int:
        call()
        return self.memory


def without_cost(timing: Timing | None) -> Timing | None:
    """``timing`` (and its bandwidth-bound one) without what the timing and its warm-up cost, which no fake clock
    fixes."""
    if timing is None:
        return None
    return dataclasses.replace(timing, cost_s=None, warm_s=None, bandwidth=without_cost(timing.bandwidth))
