"""The early repro scripts' queue: a few run at a time beside the cells (``Width``: more while cores are idle), and
when a place frees the script expected to run longest goes next, not the first queued: the longest scripts then end
while the cells still run instead of after them. A script's expected seconds: the mean of this run's finished
scripts on its path, else its cell's seconds times the median ratio of script to cell seconds seen so far (its
cell's seconds alone before any has finished). One H200 at 7c5a2ea, first come first served: a script whose cell
failed 115 s into the run waited 243 s behind shorter ones, and ran 188 s."""

from __future__ import annotations

import itertools
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from harness.execution.confirm import ScriptRun
from harness.plugin.processes import host_cores

IDLE_SAMPLE = 2.0  # seconds between two readings of the host's idle cores
SPARE_CORES = 2.0  # idle cores that let one more script start beside the cells


class Width:
    """How many early scripts may run at once: ``allowed`` while cells run (more once they have all ended), and one
    more at a time, up to ``most``, while ``idle`` says the host has ``SPARE_CORES`` idle: cells that wait for the
    GPU leave cores a script can use (one H200 at 7c5a2ea: the cells used 3,349 of the 6,750 core-seconds of their
    421.9 s, three scripts beside them)."""

    def __init__(self, allowed: int, most: int | None = None, idle: Callable[[], float] | None = None) -> None:
        self.allowed = allowed
        self.most = max(allowed, most or allowed)
        self.idle = idle
        self.running = 0
        self.turn = threading.Condition()

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Held while one script runs; waits while ``allowed`` already do and no core is spare."""
        with self.turn:
            while not self.turn.wait_for(self._free, timeout=IDLE_SAMPLE if self.idle else None):
                pass
            self.running += 1
        try:
            yield
        finally:
            with self.turn:
                self.running -= 1
                self.turn.notify_all()

    def _free(self) -> bool:
        if self.running < self.allowed:
            return True
        return self.idle is not None and self.running < self.most and self.idle() >= SPARE_CORES

    def widen(self, allowed: int, most: int | None = None) -> None:
        """At least ``allowed`` at once from now on, and up to ``most`` while cores are idle."""
        with self.turn:
            self.allowed = max(self.allowed, allowed)
            self.most = max(self.most, self.allowed, most or 0)
            self.turn.notify_all()


class IdleCores:
    """The host's idle cores over the last ``IDLE_SAMPLE`` seconds, from /proc/stat (0 where there is none); a
    reading is used once: the next waits for a new sample, so scripts started on one reading are seen in the next."""

    def __init__(self, stat: str = "/proc/stat") -> None:
        self.stat = stat
        self.last = self._read()
        self.taken = time.monotonic()

    def __call__(self) -> float:
        if time.monotonic() - self.taken < IDLE_SAMPLE:
            return 0.0
        now = self._read()
        idle = now[0] - self.last[0]
        total = now[1] - self.last[1]
        self.last, self.taken = now, time.monotonic()
        return host_cores() * idle / total if total > 0 else 0.0

    def _read(self) -> tuple[int, int]:
        try:
            with open(self.stat) as stat:
                fields = [int(field) for field in stat.readline().split()[1:]]
        except (OSError, ValueError):
            return (0, 0)
        return fields[3] + (fields[4] if len(fields) > 4 else 0), sum(fields)


@dataclass
class Job:
    script: Path
    limit: float
    path: str
    cell_seconds: float
    order: int
    future: Future[ScriptRun] = field(default_factory=Future)


class ScriptQueue:
    """Runs each submitted script once a ``Width`` place is free, the one expected longest first; ``run`` is what
    runs one (its script and time limit)."""

    def __init__(self, width: Width, threads: int, run: Callable[[Path, float], ScriptRun]) -> None:
        self.width = width
        self.run = run
        self.pool = ThreadPoolExecutor(max_workers=max(1, threads))
        self.lock = threading.Lock()
        self.waiting: list[Job] = []
        self.finished: dict[str, list[tuple[float, float]]] = {}  # path -> (cell seconds, script seconds)
        self.counter = itertools.count()

    def submit(self, script: Path, limit: float, path: str, cell_seconds: float) -> Future[ScriptRun]:
        """Queue a script (of a cell on ``path`` that took ``cell_seconds``); its run comes back in the future."""
        job = Job(script, limit, path, cell_seconds, next(self.counter))
        with self.lock:
            self.waiting.append(job)
        self.pool.submit(self._run_next)
        return job.future

    def shutdown(self) -> None:
        self.pool.shutdown(cancel_futures=True)

    def expected(self, job: Job) -> float:
        """Seconds ``job``'s script is expected to run, from the scripts that have finished."""
        seen = self.finished.get(job.path)
        if seen:
            return statistics.fmean(script for _, script in seen)
        ratios = [script / cell for pairs in self.finished.values() for cell, script in pairs if cell > 0]
        return job.cell_seconds * (statistics.median(ratios) if ratios else 1.0)

    def _run_next(self) -> None:
        """One place free: the waiting script expected to run longest runs (ties: the first queued)."""
        with self.width.slot():
            with self.lock:
                job = max(self.waiting, key=lambda job: (self.expected(job), -job.order))
                self.waiting.remove(job)
            try:
                run = self.run(job.script, job.limit)
            except BaseException as error:
                job.future.set_exception(error)
                raise
            with self.lock:
                self.finished.setdefault(job.path, []).append((job.cell_seconds, run.seconds))
            job.future.set_result(run)
