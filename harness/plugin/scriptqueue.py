"""The early repro scripts' queue: a few run at a time beside the cells (``Width``: more while cores are idle, none
beyond the first while the GPU lacks the memory for one more, ``GpuMemory``, and none during the workers' timing
turns on a GPU that has run short of memory), and
when a place frees the script expected to run longest goes next, not the first queued: the longest scripts then end
while the cells still run instead of after them. A script's expected seconds: the mean of this run's finished
scripts on its path, else its cell's seconds times the median ratio of script to cell seconds seen so far (its
cell's seconds alone before any has finished). One H200 at 7c5a2ea, first come first served: a script whose cell
failed 115 s into the run waited 243 s behind shorter ones, and ran 188 s."""

from __future__ import annotations

import itertools
import os
import statistics
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from harness.execution.confirm import ScriptRun
from harness.plugin.processes import host_cores
from harness.records.environment import PlacesReading

IDLE_SAMPLE = 2.0  # seconds between two readings of the host's idle cores
SPARE_CORES = 2.0  # idle cores that let one more script start beside the cells
# GPU memory one more script must find free, and what each script started since the last reading is taken to use:
# on an 80 GB H100 at 6a4839d (14 workers, up to 28 scripts) about 80 scripts met "CUDA out of memory" beside the
# cell processes, where their cells allocated at most 321 MiB
SCRIPT_GPU_MB = 4096.0


class Width:
    """How many early scripts may run at once: ``allowed`` while cells run (more once they have all ended), and
    ``extra`` places more, up to ``most``: one more at each reading of ``idle`` that finds ``SPARE_CORES`` idle, one
    fewer at each that finds less than one. Cells that wait for the GPU leave cores a script can use (one H200 at
    7c5a2ea: the cells used 3,349 of the 6,750 core-seconds of their 421.9 s, three scripts beside them). The places
    stay open: where a reading let just one script start, the short scripts after the last cell ran 14-15 at once
    on 14 places while 6-8 of 16 cores were idle (one H200 at 790df7f). On a GPU that has run short of memory
    (``GpuMemory.short``) no script starts while ``timing`` says the workers are in their timing turns: the cell
    processes free their memory only once timed, and scripts let in one by one kept the timing waiting (an 80 GB H100
    at b3efeb5: 41-73 s). With memory to spare the scripts go first, as they run beside the warm-ups (on one H200 at
    790df7f they would have moved 293 script-seconds after the timing)."""

    def __init__(
        self,
        allowed: int,
        most: int | None = None,
        idle: Callable[[], float | None] | None = None,
        memory: GpuMemory | None = None,
        timing: Callable[[], bool] | None = None,
    ) -> None:
        self.allowed = allowed
        self.most = max(allowed, most or allowed)
        self.idle = idle
        self.memory = memory
        self.timing = timing
        self.extra = 0
        self.running = 0
        self.turn = threading.Condition()
        self.readings: list[PlacesReading] = []  # at most one per ``IDLE_SAMPLE`` while a script waits (``_note``)
        self.noted = -IDLE_SAMPLE
        self.idle_seen: float | None = None

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Held while one script runs; waits while ``allowed`` already do and no core is spare, while others run
        and the GPU has not the memory one more needs, and during the timing turns on a GPU that ran short."""
        sampled = any(check is not None for check in (self.idle, self.memory, self.timing))
        with self.turn:
            while not self.turn.wait_for(self._free, timeout=IDLE_SAMPLE if sampled else None):
                pass
            self.running += 1
            if self.memory is not None:
                self.memory.take()
        try:
            yield
        finally:
            with self.turn:
                self.running -= 1
                self.turn.notify_all()

    def _free(self) -> bool:
        room = self.memory is None or self.memory.room()  # read for the first script too: it may find the GPU short
        held = "timing" if self._timing_first() else "memory" if self.running and not room else None
        if held is None:
            self._read_idle()
        self._note(held)
        return held is None and self.running < self.places()

    def places(self) -> int:
        """How many scripts may run at once now."""
        return min(self.most, self.allowed + self.extra)

    def _note(self, held: str | None) -> None:
        """A reading of the places, at most one per ``IDLE_SAMPLE`` (``readings``: the run's record of them)."""
        now = time.monotonic()
        if now - self.noted < IDLE_SAMPLE:
            return
        self.noted = now
        left = None if self.memory is None or self.memory.left is None else round(self.memory.left)
        idle = None if self.idle_seen is None else round(self.idle_seen, 1)
        self.readings.append(PlacesReading(round(time.time(), 1), self.running, self.places(), idle, left, held))

    def _timing_first(self) -> bool:
        """The workers are in their timing turns on a GPU that has run short of memory in this run."""
        return self.timing is not None and self.memory is not None and self.memory.short and self.timing()

    def _read_idle(self) -> None:
        """One place more or fewer, by a new reading of the idle cores (None: none yet)."""
        idle = self.idle() if self.idle is not None else None
        self.idle_seen = self.idle_seen if idle is None else idle
        if idle is not None and idle >= SPARE_CORES:
            self.extra = min(self.extra + 1, self.most - self.allowed)
        elif idle is not None and idle < 1.0:
            self.extra = max(self.extra - 1, 0)

    def widen(self, allowed: int, most: int | None = None) -> None:
        """At least ``allowed`` at once from now on, and up to ``most`` while cores are idle."""
        with self.turn:
            self.allowed = max(self.allowed, allowed)
            self.most = max(self.most, self.allowed, most or 0)
            self.extra = min(self.extra, self.most - self.allowed)
            self.turn.notify_all()


class IdleCores:
    """The host's idle cores over the last ``IDLE_SAMPLE`` seconds, from /proc/stat (0 where there is none); None
    until a new sample: scripts started on one reading are seen in the next."""

    def __init__(self, stat: str = "/proc/stat") -> None:
        self.stat = stat
        self.last = self._read()
        self.taken = time.monotonic()

    def __call__(self) -> float | None:
        if time.monotonic() - self.taken < IDLE_SAMPLE:
            return None
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


def free_gpu_mb(run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run) -> float | None:
    """The least free memory (MiB) of the GPUs ``CUDA_VISIBLE_DEVICES`` names (all where it is unset), by
    nvidia-smi; None where nvidia-smi cannot tell."""
    try:
        done = run(
            ["nvidia-smi", "--query-gpu=index,uuid,memory.free", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=10,
        )  # fmt: skip
        rows = [[item.strip() for item in line.split(",")] for line in done.stdout.splitlines() if line.strip()]
        free = {(index, uuid): float(mb) for index, uuid, mb in rows}
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    named = [item.strip() for item in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if item.strip()]
    seen = [mb for (index, uuid), mb in free.items() if not named or index in named or uuid in named]
    return min(seen) if done.returncode == 0 and seen else None


class GpuMemory:
    """Whether the GPU has room for one more script: its free memory, read at most once per ``IDLE_SAMPLE``
    (``free``: MiB, or None where it cannot be read, which holds no script back), less ``SCRIPT_GPU_MB`` for each
    script started since, at least ``SCRIPT_GPU_MB``; ``short`` once a reading has had none."""

    def __init__(self, free: Callable[[], float | None] = free_gpu_mb) -> None:
        self.free = free
        self.left: float | None = None
        self.taken = -IDLE_SAMPLE
        self.short = False  # a reading has had no room for a script

    def room(self) -> bool:
        if time.monotonic() - self.taken >= IDLE_SAMPLE:
            self.left, self.taken = self.free(), time.monotonic()
            self.short = self.short or (self.left is not None and self.left < SCRIPT_GPU_MB)
        return self.left is None or self.left >= SCRIPT_GPU_MB

    def take(self) -> None:
        """One more script started on this reading."""
        if self.left is not None:
            self.left -= SCRIPT_GPU_MB


@dataclass
class Job:
    script: Path
    limit: float
    path: str
    cell_seconds: float
    order: int
    again: Callable[[ScriptRun], bool] | None = None  # whether a run says nothing and the script queues once more
    future: Future[ScriptRun] = field(default_factory=Future)


class ScriptQueue:
    """Runs each submitted script once a ``Width`` place is free, the one expected longest first; ``run`` is what
    runs one (its script and time limit). A script whose run its ``again`` rejects (out of the GPU's memory beside
    the cell processes) queues once more at once, under the same width, instead of one at a time after every other
    script (one H100 at 6315b99: three such re-runs, 43 s after the last script)."""

    def __init__(self, width: Width, threads: int, run: Callable[[Path, float], ScriptRun]) -> None:
        self.width = width
        self.run = run
        self.pool = ThreadPoolExecutor(max_workers=max(1, threads))
        self.lock = threading.Lock()
        self.waiting: list[Job] = []
        self.finished: dict[str, list[tuple[float, float]]] = {}  # path -> (cell seconds, script seconds)
        self.counter = itertools.count()

    def submit(
        self,
        script: Path,
        limit: float,
        path: str,
        cell_seconds: float,
        again: Callable[[ScriptRun], bool] | None = None,
    ) -> Future[ScriptRun]:
        """Queue a script (of a cell on ``path`` that took ``cell_seconds``); its run comes back in the future."""
        job = Job(script, limit, path, cell_seconds, next(self.counter), again)
        self._queue(job)
        return job.future

    def _queue(self, job: Job) -> None:
        with self.lock:
            self.waiting.append(job)
        self.pool.submit(self._run_next)

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
            if job.again is not None and job.again(run):
                job.again = None
                self._queue(job)
                return
            with self.lock:
                self.finished.setdefault(job.path, []).append((job.cell_seconds, run.seconds))
            job.future.set_result(run)
