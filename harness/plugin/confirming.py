"""Every distinct failure's repro script (harness/repro/failures.py) run in a fresh process (harness/execution/
confirm.py), and each failed cell's record given its ``confirmation``: reproduced by the script (with its error
line), or not, a harness suspect. The first cell of each kind of failure has its script run while the run goes on, a
few at a time beside the cells (``early_width``; the one expected to run longest first, harness/plugin/
scriptqueue.py), and as many at a time as workers once the last cell has ended, up to twice as many while cores are
idle (beside the workers' warm-ups, before the timing phase on their GPU, which they hold back; none starts during
its turns where the GPU has run short of memory), one more only while the GPU has the memory it needs (an early
script out of the GPU's memory where its cell was not queues once more; a script out of it again runs alone once
every other has ended); each script runs on the GPU of the run's fewest scripts (``GpuShare``); the end of the run
writes the final scripts (for those same cells), waits for those runs and runs the rest, each within its path's
timeout. Records kept from an earlier run keep theirs; a run that broke confirms nothing. An interrupt (Ctrl-C,
SIGTERM: pytest's, or one while the final scripts run) kills every script still running and starts none: their
failures are "not confirmed", and the run exits 130."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from harness.execution.confirm import ScriptRun, Scripts
from harness.plugin.inputs import inputs, visible_gpus
from harness.plugin.options import options, workers
from harness.plugin.processes import RESERVED_CORES, cache_folders, host_cores, processes_key
from harness.plugin.scriptqueue import GpuMemory, IdleCores, ScriptQueue, Width
from harness.plugin.timing import FileCoordination
from harness.records.confirmation import confirmation, crowded_out, needs_confirmation
from harness.records.record import Record
from harness.records.results import Results
from harness.records.schema import to_json
from harness.report.broken import run_broke
from harness.repro.failures import failure_signature, safe_source
from harness.spec import Status

DEFAULT_LIMIT = 600.0  # seconds a script may run where its path is not in this run's matrix
EARLY_SHARE = 4  # while cells run, one script at a time per this many workers, or more on cores no worker has
# once the cells have ended, up to this many scripts per worker while cores are idle: one H200 at 3e48632 had 4-11 of
# its 16 cores idle from 25 s after the last cell, its 14 places full, while 65 scripts had yet to start (the last
# ended 59 s after the last cell; the timing phase waits for them)
AFTER_CELLS_MOST = 2


def early_width(workers: int, cores: int) -> int:
    """How many scripts may run at once while cells run: one per ``EARLY_SHARE`` workers, or one per core no worker
    has where there are more (14 workers on a 64-core host leave 48 idle)."""
    return max(1, workers // EARLY_SHARE, cores - workers - RESERVED_CORES)


def triton_cache(config: pytest.Config) -> str:
    """The Triton cache the scripts share: the one the run was started with, else the cells' own under
    ``--cache-dir`` (matrix.toml's [environment] is the cells' alone, as every setting the harness gives them)."""
    return os.environ.get("TRITON_CACHE_DIR") or cache_folders(options(config).cache_dir)["TRITON_CACHE_DIR"]


scripts_key = pytest.StashKey[Scripts]()  # the run's scripts, made before the case modules import


def start_early_scripts(config: pytest.Config) -> None:
    """On the controller of a run that confirms, with a GPU, before it imports the case modules (beside the early
    zygote): the scripts' fork server starts now, on a host still idle, so that the first failure's script starts as
    it arrives (one H200 at 63208c6, started at the session with the cells about to load the host, it imported torch
    and asked Inductor's CPU-ISA probes in 31 s). Faithful to a script: each imports torch before the case's code,
    which may then set what it likes; one that sets the environment first is not forked (``forkable``). Stopped when
    the config is cleaned up (bad input stops the run before its first cell)."""
    if config.option.collectonly or not options(config).confirm or not visible_gpus():
        return
    scripts = Scripts(triton_cache(config), probe_isas=True)
    config.stash[scripts_key] = scripts
    config.add_cleanup(scripts.stop)
    scripts.prestart()


class GpuShare:
    """The GPUs dealt among the workers, shared by the scripts: each script runs on the GPU fewest scripts run on
    now (the first of those), or, where the workers see every GPU (``gpus`` empty), as the run was started."""

    def __init__(self, gpus: tuple[str, ...]) -> None:
        self.gpus = gpus
        self.running = dict.fromkeys(gpus, 0)
        self.lock = threading.Lock()

    @contextmanager
    def one(self) -> Iterator[str | None]:
        """A GPU for one script while it runs (None: the run's own)."""
        if not self.running:
            yield None
            return
        with self.lock:
            gpu = min(self.running, key=lambda name: self.running[name])
            self.running[gpu] += 1
        try:
            yield gpu
        finally:
            with self.lock:
                self.running[gpu] -= 1


def _crowded(lead: Record, run: ScriptRun) -> bool:
    """Whether ``run`` (not stopped) of the script of ``lead``'s failure ran out of GPU memory where that cell did
    not: it says nothing of the failure, and runs again."""
    return not run.stopped and crowded_out(lead, run.output)


class Confirmer:
    """Runs the repro scripts of a run's failures: early, as the first of each kind arrives, and at the end."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.enabled = options(config).confirm
        self.folder = options(config).report_dir / ".confirming"
        self.queue: ScriptQueue | None = None
        gpus = visible_gpus()
        self.width = Width(
            early_width(workers(config), host_cores()),
            most=workers(config),
            idle=IdleCores(),
            memory=GpuMemory() if gpus else None,
            timing=self._timing_wants_gpu,
        )
        self.early: dict[str, tuple[str, Future[ScriptRun]]] = {}  # signature -> (its cell, its script's run)
        early = config.stash.get(scripts_key, None)  # made before the case modules imported (a run with a GPU)
        self.scripts = early if early is not None else Scripts(triton_cache(config), probe_isas=bool(gpus))
        self.gpus = GpuShare(inputs(config).plan.gpus)
        self.interrupted: pytest.ExceptionInfo[BaseException] | None = None  # an interrupt the final wait took

    def stop(self) -> None:
        """The run is interrupted: every script running is killed, and none starts."""
        self.scripts.stop()

    def submit(self, record: Record, env: dict[str, Any]) -> None:
        """During the run: the script of ``record``, the first failure of its kind, starts running."""
        if not self.enabled or record.status in (Status.PASS, Status.SKIP) or not record.module:
            return
        signature = failure_signature(record)
        if not needs_confirmation(record) or signature in self.early:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        script = self.folder / f"{len(self.early)}.py"
        script.write_text(safe_source(record, env, inputs(self.config).matrix.tolerances))
        future = self.script_queue().submit(
            script, self.limit(record.path), record.path, record.seconds or 0.0,
            again=lambda run: _crowded(record, run),
        )  # fmt: skip
        self.early[signature] = (record.id, future)

    def script_queue(self) -> ScriptQueue:
        """The early scripts' queue, made at the first: a thread for each place the width can ever give (its
        ``AFTER_CELLS_MOST`` times the workers once the cells have ended), so that the width alone bounds them."""
        if self.queue is None:
            self.queue = ScriptQueue(self.width, AFTER_CELLS_MOST * max(1, workers(self.config)), self._run_early)
        return self.queue

    def _run_early(self, script: Path, limit: float) -> ScriptRun:
        """An early script runs on one GPU, holding that GPU's lock shared: no timing (harness/plugin/timing.py)
        on it meanwhile; the other GPUs' workers time."""
        folder = self.config.stash[processes_key].timing_folder
        with self.gpus.one() as gpu:
            if folder is None:
                return self.scripts.run(script, limit, gpu=gpu)
            with FileCoordination(folder, 1).shared(() if gpu is None else (gpu,)):
                return self.scripts.run(script, limit, gpu=gpu)

    def _timing_wants_gpu(self) -> bool:
        """Whether the workers are in their timing turns on a GPU the scripts run on: no script starts then."""
        folder = self.config.stash[processes_key].timing_folder
        return folder is not None and FileCoordination(folder, 1).wanted(self.gpus.gpus)

    def _run_final(self, script: Path, limit: float) -> ScriptRun:
        """A script run after the timing phase, on the GPU fewest scripts run on."""
        with self.gpus.one() as gpu:
            return self.scripts.run(script, limit, gpu=gpu)

    def cells_ended(self) -> None:
        """Every cell has its record: the early scripts still queued run as many at a time as there are workers,
        beside the workers' warm-ups of their kept artifacts, and more, up to ``AFTER_CELLS_MOST`` times as many,
        while the host has idle cores; the timing phase, which waits for them (they hold the GPUs' locks shared),
        then starts once the queue is drained instead of waiting for it three at a time."""
        count = max(1, workers(self.config))
        self.width.widen(count, most=AFTER_CELLS_MOST * count)

    def places(self) -> dict[str, Any]:
        """The environment's ``script_places``: the width's readings while scripts waited for a place (none: {})."""
        readings = list(self.width.readings)
        return {"script_places": [to_json(reading) for reading in readings]} if readings else {}

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
            self.stop()  # scripts a run that broke left running
            if self.queue is not None:
                self.queue.shutdown()
            shutil.rmtree(self.folder, ignore_errors=True)

    def _confirmed(self, results: Results, scripts: dict[Path, list[str]]) -> list[Record]:
        records = results.by_id()
        early = {cell: future for cell, future in self.early.values()}
        to_run = {  # a script runs its first cell's path: that path's timeout
            script: self.limit(records[cells[0]].path)
            for script, cells in scripts.items()
            if cells[0] not in early and any(needs_confirmation(records[cell]) for cell in cells)
        }
        with ThreadPoolExecutor(max_workers=max(1, workers(self.config))) as pool:
            futures = {script: pool.submit(self._run_final, script, limit) for script, limit in to_run.items()}
            futures.update({script: early[cells[0]] for script, cells in scripts.items() if cells[0] in early})
            runs = self._wait(futures)
        runs.update(self._alone(runs, {script: records[cells[0]] for script, cells in scripts.items()}))
        confirmed = []
        for script, run in runs.items():
            name = f"{script.parent.name}/{script.name}"
            for cell in scripts[script]:
                record = records[cell]
                if not needs_confirmation(record):  # kept from an earlier run, with its own
                    continue
                found = confirmation(
                    record, name, run.returncode, run.output, run.last_line, run.stopped, scripts[script][0]
                )
                confirmed.append(record.replace(confirmation={**found, "seconds": run.seconds, "started": run.started}))
        return confirmed

    def _alone(self, runs: dict[Path, ScriptRun], leads: dict[Path, Record]) -> dict[Path, ScriptRun]:
        """The scripts that ran out of GPU memory where their cell did not, run again one at a time, once every
        other has ended: beside the run's cell processes and the other scripts the GPU's memory can run out (an
        80 GB H100 with 14 workers), which says nothing of the failure (``reproduced``); none after an interrupt."""
        crowded = [script for script, run in runs.items() if _crowded(leads[script], run)]
        again = {}
        for script in crowded:
            if self.interrupted is not None:
                break
            try:
                again[script] = self._run_final(script, self.limit(leads[script].path))
            except KeyboardInterrupt:
                self.interrupted = pytest.ExceptionInfo.from_current()
                self.stop()
        return again

    def _wait(self, futures: dict[Path, Future[ScriptRun]]) -> dict[Path, ScriptRun]:
        """Each script's run; a Ctrl-C or SIGTERM meanwhile (raised here as KeyboardInterrupt) is kept for the
        session, kills the scripts still running, and every run comes back at once."""
        try:
            return {script: future.result() for script, future in futures.items()}
        except KeyboardInterrupt:
            self.interrupted = pytest.ExceptionInfo.from_current()
            self.stop()
            return {script: future.result() for script, future in futures.items()}
