"""The run's timing phase: once no cell of any worker runs, each worker's cell process times the artifacts its
passing cells kept (harness/cell/timing.py), one process at a time, so that each timing has the GPU alone.

Why there, and not in a later phase that builds again: re-compiling every passing cell costs a second run, and
would time another program than the one checked. Why not at each cell's end: a timing needs the GPU to itself,
and the other workers' cells would have to stop for it. So each cell process keeps the artifacts of its passing
cells; when a worker has run its last cell, it has its cell process call each kept artifact once (the warm-up that
fills Dynamo's caches again, beside the other workers' last cells), then ``arrive``s at a barrier every worker
reaches after its last cell, waits for all of them (``wait_all``), and times in two turns while it holds its GPU's
lock (``exclusive``: one lock per GPU where each worker sees one of several, so the GPUs time at once, each one
worker at a time): first the host samples, then, once every worker has taken them (a second barrier), every cell
process starts the profiler at once, none measuring (a process's first session starts CUPTI, and a
launch's host time is higher after it), and once all have (a third), the device samples; the controller's early
repro scripts each hold their GPU's lock shared while they run, and where the GPU has run short of memory none starts
from the first barrier to the last worker's device samples (``wanting``): else scripts started one after another,
each the GPU's memory let in (an 80 GB H100 at b3efeb5), held the lock shared without a break, and the timing waited
41-73 s for it. A cell whose artifact is lost (its process replaced: a crash, a re-run, the RSS bound, a CUDA fault)
is recorded ``not timed`` with the reason; so is every cell of a worker that waited past ``BARRIER_TIMEOUT``. The
coordination is a ``Coordination`` (files and ``flock`` here; a test's fake checks that no two timings overlap and
none overlaps a cell)."""

from __future__ import annotations

import fcntl
import re
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from pathlib import Path
from typing import Any, Protocol

from harness.spec import Timing

BARRIER_TIMEOUT = 1800.0  # seconds a worker waits for the others' last cells before giving up its timings
WARM_TIMEOUT = 600.0  # seconds a cell process may take to warm up its kept artifacts
TIME_TIMEOUT = 900.0  # ... and to time them
WARM_PEAK = "warm_gpu_peak_mb"  # in a worker's phase clock: its warm-up's peak of GPU memory (MiB), not a time
WARM_COLD = "warm_cold"  # ... how many of its warm-ups ran out of GPU memory beside the others (done again alone)
LOCK_NAME = "gpu.lock"
ARRIVED = "arrived"
CELLS, HOSTS, PRIMED = "", "hosts", "primed"  # the barriers: after the last cells, host samples, profiler start
STEPS = (CELLS, HOSTS, PRIMED)


class Coordination(Protocol):
    """How the workers agree on the timing phase: a barrier after every worker's last cell, and its GPU's lock."""

    def arrive(self, worker: str, step: str = CELLS) -> None: ...  # this worker is past ``step`` (STEPS)

    def wait_all(self, timeout: float, step: str = CELLS) -> str | None: ...  # None once all are, else why not

    def exclusive(self) -> AbstractContextManager[None]: ...  # its GPU to this process alone

    def wanting(self) -> AbstractContextManager[None]: ...  # its GPU wanted for timing: no new script starts on it


DIED = {  # why the cells of a process that did not answer a step of the timing are not timed
    "warm": "its cell process died warming up",
    "host": "its cell process died while its host samples were taken",
    "prime": "its cell process died starting the profiler",
    "time": "its cell process died while timed",
}
WAITED_FOR = {HOSTS: "host samples", PRIMED: "profiler's start"}


def arrivals(step: str) -> str:
    """The folder of the arrivals past ``step``."""
    return ARRIVED if step == CELLS else f"{ARRIVED}-{step}"


def lock_name(gpu: str | None) -> str:
    """The lock file of ``gpu`` (a CUDA_VISIBLE_DEVICES id; None where the cell processes see every GPU)."""
    return LOCK_NAME if gpu is None else f"gpu-{re.sub(r'[^A-Za-z0-9_.-]', '_', gpu)}.lock"


def wanted_name(gpu: str | None) -> str:
    """The file whose shared ``flock`` says a worker on ``gpu`` is in its timing turns."""
    return lock_name(gpu).removesuffix(".lock") + ".wanted"


class FileCoordination:
    """Arrivals as files in ``folder/arrived`` (``arrived-STEP`` past the first barrier), the lock of the worker's
    ``gpu`` as ``flock`` on its file in ``folder`` (``lock_name``; released by the kernel when its holder dies)."""

    def __init__(self, folder: Path, workers: int, gpu: str | None = None) -> None:
        self.folder = folder
        self.workers = workers
        self.gpu = gpu

    def arrive(self, worker: str, step: str = CELLS) -> None:
        (self.folder / arrivals(step)).mkdir(parents=True, exist_ok=True)
        (self.folder / arrivals(step) / worker).touch()

    def arrived(self, step: str = CELLS) -> set[str]:
        folder = self.folder / arrivals(step)
        return {file.name for file in folder.iterdir()} if folder.is_dir() else set()

    def wait_all(self, timeout: float, step: str = CELLS) -> str | None:
        deadline = time.monotonic() + timeout
        while len(self.arrived(step)) < self.workers:
            if time.monotonic() > deadline:
                missing = self.workers - len(self.arrived(step))
                doing = "still ran cells" if step == CELLS else f"had not ended their {WAITED_FOR[step]}"
                return f"{missing} worker(s) {doing} after {timeout:g} s"
            time.sleep(0.05)
        return None

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._lock(lock_name(self.gpu), fcntl.LOCK_EX):
            yield

    @contextmanager
    def wanting(self) -> Iterator[None]:
        with self._lock(wanted_name(self.gpu), fcntl.LOCK_SH):
            yield

    def wanted(self, gpus: tuple[str, ...] = ()) -> bool:
        """Whether a worker on one of ``gpus`` (() where they see every GPU) is in its timing turns (``wanting``)."""
        for gpu in gpus or (None,):
            path = self.folder / wanted_name(gpu)
            if not path.exists():
                continue
            with open(path) as file:
                try:
                    fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    return True
        return False

    @contextmanager
    def shared(self, gpus: tuple[str, ...] = ()) -> Iterator[None]:
        """Held while something else uses the GPUs (an early repro script): no timing runs meanwhile on any of
        ``gpus`` (the GPUs dealt among the workers; () where they see every GPU)."""
        with ExitStack() as stack:
            for gpu in gpus or (None,):
                stack.enter_context(self._lock(lock_name(gpu), fcntl.LOCK_SH))
            yield

    @contextmanager
    def _lock(self, name: str, kind: int) -> Iterator[None]:
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / name, "a") as lock:
            fcntl.flock(lock, kind)
            yield


class TimedProcess(Protocol):
    """What the phase needs of a cell process (``CellProcess.ask``)."""

    pid: int | None

    def ask(self, request: tuple[Any, ...], timeout: float) -> Any: ...


def timing_phase(
    pending: dict[str, int | None],
    process: TimedProcess | None,
    coordination: Coordination,
    worker: str,
    retired: tuple[TimedProcess, ...] = (),
    clock: dict[str, float] | None = None,
) -> tuple[dict[str, Timing], float | None]:
    """The timings of the ``pending`` cells (cell id -> the pid of the cell process that kept its artifact), timed
    by the process that kept each: ``process`` (this worker's cell process, None when it has none) or one of
    ``retired`` (set aside, alive, when a re-run needed a fresh process); and the GPU's copy bandwidth. ``clock``
    gets when (seconds since the epoch) the warm-up began, the worker arrived, every worker had arrived, it held
    the GPU alone, had its host samples, every worker had, it had started the profiler, every worker had, it held
    the GPU alone again, and it was done: the run's cost model (bench/costs.py); and the warm-up's peak of GPU
    memory (``WARM_PEAK``, MiB) and how many warm-ups ran out of it (``WARM_COLD``) where its processes use a GPU."""
    clock = {} if clock is None else clock
    try:
        return _timing_phase(pending, process, coordination, worker, retired, clock)
    finally:  # however it ended (a process's answer it could not read), none of the others waits for this worker
        for step in STEPS:
            coordination.arrive(worker, step)


def _timing_phase(
    pending: dict[str, int | None],
    process: TimedProcess | None,
    coordination: Coordination,
    worker: str,
    retired: tuple[TimedProcess, ...],
    clock: dict[str, float],
) -> tuple[dict[str, Timing], float | None]:
    clock["warm"] = time.time()
    holders = [one for one in (*retired, process) if pending and getattr(one, "pid", None) is not None]
    kept = {one.pid: [cell for cell, pid in pending.items() if pid == one.pid] for one in holders}
    holders = [one for one in holders if kept[one.pid]]
    lost = Timing.not_timed("its cell process was replaced before the timing phase")
    timings = {cell: lost for cell, pid in pending.items() if not any(pid == one.pid for one in holders)}
    warm = []
    for one in holders:
        answer = one.ask(("warm",), WARM_TIMEOUT)
        if answer is None:
            timings.update({cell: Timing.not_timed(DIED["warm"]) for cell in kept[one.pid]})
            continue
        warm.append(one)
        if isinstance(answer, dict) and answer.get("gpu_peak_mb") is not None:  # the largest of its processes'
            clock[WARM_PEAK] = max(clock.get(WARM_PEAK, 0.0), float(answer["gpu_peak_mb"]))
            clock[WARM_COLD] = clock.get(WARM_COLD, 0.0) + float(answer.get("cold", 0))
    coordination.arrive(worker)
    clock["arrived"] = time.time()
    if not warm:
        return timings, None
    late = coordination.wait_all(BARRIER_TIMEOUT)
    clock["all_arrived"] = time.time()
    with nullcontext() if late else coordination.wanting():
        return _turns(warm, kept, timings, coordination, worker, clock, late)


def _turns(
    warm: list[TimedProcess],
    kept: dict[int | None, list[str]],
    timings: dict[str, Timing],
    coordination: Coordination,
    worker: str,
    clock: dict[str, float],
    late: str | None,
) -> tuple[dict[str, Timing], float | None]:
    """The two timing turns past the first barrier (``late``: why it was not passed, if so)."""
    if not late:
        with coordination.exclusive():
            clock["alone"] = time.time()
            warm = [one for one in warm if answered(one, ("host", kept[one.pid]), kept[one.pid], timings)]
        clock["hosted"] = time.time()
    coordination.arrive(worker, HOSTS)
    late = late or (coordination.wait_all(BARRIER_TIMEOUT, HOSTS) if warm else None)
    clock["all_hosted"] = time.time()
    if warm and not late:
        warm = [one for one in warm if answered(one, ("prime",), kept[one.pid], timings)]
        clock["primed"] = time.time()
    coordination.arrive(worker, PRIMED)
    late = late or (coordination.wait_all(BARRIER_TIMEOUT, PRIMED) if warm else None)
    clock["all_primed"] = time.time()
    if late:
        timings.update({cell: Timing.not_timed(late) for one in warm for cell in kept[one.pid]})
    if late or not warm:
        return timings, None
    gbps = None
    with coordination.exclusive():
        clock["alone_again"] = time.time()
        for one in warm:
            answer = one.ask(("time", kept[one.pid]), TIME_TIMEOUT)
            if answer is None:
                timings.update({cell: Timing.not_timed(DIED["time"]) for cell in kept[one.pid]})
                continue
            timed, measured = answer
            timings.update(timed)
            gbps = measured if gbps is None else gbps
    clock["done"] = time.time()
    return timings, gbps


def answered(process: TimedProcess, request: tuple[Any, ...], cells: list[str], timings: dict[str, Timing]) -> bool:
    """Whether ``process`` answered a step of the timing (``request``); where it did not (it died, or took past
    ``TIME_TIMEOUT``), its ``cells`` are not timed and say so."""
    if process.ask(request, TIME_TIMEOUT) is not None:
        return True
    timings.update({cell: Timing.not_timed(DIED[request[0]]) for cell in cells})
    return False
