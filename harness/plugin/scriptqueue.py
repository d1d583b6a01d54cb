"""The early repro scripts' queue: a few run at a time beside the cells (``Width``), and when a place frees the script
expected to run longest goes next, not the first queued: the longest scripts then end while the cells still run
instead of after them. A script's expected seconds: the mean of this run's finished scripts on its path, else its
cell's seconds times the median ratio of script to cell seconds seen so far (its cell's seconds alone before any
has finished). One H200 at 7c5a2ea, first come first served: a script whose cell failed 115 s into the run waited
243 s behind shorter ones, and ran 188 s."""

from __future__ import annotations

import itertools
import statistics
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from harness.execution.confirm import ScriptRun


class Width:
    """How many early scripts may run at once: a few while cells run, more once they have all ended."""

    def __init__(self, allowed: int) -> None:
        self.allowed = allowed
        self.running = 0
        self.turn = threading.Condition()

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Held while one script runs; waits while ``allowed`` already do."""
        with self.turn:
            self.turn.wait_for(lambda: self.running < self.allowed)
            self.running += 1
        try:
            yield
        finally:
            with self.turn:
                self.running -= 1
                self.turn.notify_all()

    def widen(self, allowed: int) -> None:
        with self.turn:
            self.allowed = max(self.allowed, allowed)
            self.turn.notify_all()


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
