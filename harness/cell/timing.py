"""Timing, in the cell process, the artifacts its passing cells built and checked. A cell that passes on a timed
path keeps its artifact (the callable and inputs its check called: the model, the compiled module, the exported
module, the loaded AOTInductor package, a training step) in this process (``KEPT``); once no cell of any worker
runs, and holding the GPU alone (harness/plugin/timing.py), the worker asks this process to time them all
(``time_kept``). Each is called ``WARMUP`` times, then ``SAMPLES`` times with the L2 cache flushed before each call
and CUDA events around it (device time), then ``SAMPLES`` times more with a host clock around each call, which does
not wait for the GPU, the GPU waited for between calls (host time)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from harness.case import Case, Inputs, copy_inputs
from harness.kernel.interpreter import triton_interpreted
from harness.spec import Timing, TimingState
from harness.timing import summarize

WARMUP = 5  # calls before the samples (the dashboard: 5 warm-ups, the median of 30)
SAMPLES = 30
MIN_SAMPLES = 5
SAMPLING_BUDGET_S = 0.25  # device seconds a cell's samples may take: a slow artifact gets fewer (>= MIN_SAMPLES)
L2_FLUSH_BYTES = 256 * 2**20  # written before each sample, as triton.testing.do_bench does
COPY_BYTES = 256 * 2**20  # the copy that measures the GPU's bandwidth
COPIES = 10
RECOMPILE_LIMITS = ("recompile_limit", "accumulated_recompile_limit")  # per code object, and in all


class DeviceTimer(Protocol):
    """How one call is timed: ``CudaTimer`` on a GPU; a test's fake on CPU."""

    def device_seconds(self, call: Callable[[], object]) -> float: ...  # one call on the device, L2 flushed first

    def host_seconds(self, call: Callable[[], object]) -> float: ...  # one call's host side, not waiting

    def synchronize(self) -> None: ...

    def copy_gbps(self) -> float | None: ...  # the device's copy bandwidth (read + write), GB/s


class CudaTimer:
    """CUDA events around each call, the L2 cache flushed before it; a host clock for the host side."""

    def __init__(self) -> None:
        self.flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.int8, device="cuda")

    def device_seconds(self, call: Callable[[], object]) -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        self.flush.zero_()
        start.record()
        call()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3

    def host_seconds(self, call: Callable[[], object]) -> float:
        start = time.perf_counter()
        call()
        return time.perf_counter() - start

    def synchronize(self) -> None:
        torch.cuda.synchronize()

    def copy_gbps(self) -> float | None:
        source = torch.empty(COPY_BYTES, dtype=torch.int8, device="cuda")
        target = torch.empty_like(source)
        target.copy_(source)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(COPIES):
            target.copy_(source)
        end.record()
        end.synchronize()
        return round(2 * COPY_BYTES * COPIES / (start.elapsed_time(end) / 1e3) / 1e9, 1)


def timer_for(device: str) -> DeviceTimer | str:
    """The timer for cells on ``device``, or why they cannot be timed here."""
    if triton_interpreted():
        return "under Triton's interpreter: kernels run on the CPU"
    if device != "cuda" or not torch.cuda.is_available():
        return "on CPU: timing needs a CUDA GPU"
    return CudaTimer()


@dataclass
class Kept:
    """A passing cell's artifact, kept for the timing phase: ``call`` runs it once on its inputs."""

    call: Callable[[], object]
    bytes_moved: int | None = None
    failed: str | None = None  # why a warm-up call failed


KEPT: dict[str, Kept] = {}  # cell id -> its artifact, in this cell process


def inference_call(model: Callable[..., Any], inputs: Inputs) -> Callable[[], object]:
    """One call of ``model`` without grad on a copy of ``inputs`` (which the path copies before each call of its
    own: they stay as made), the copy made at the first call, not while the cell runs, and then reused (no copy
    inside a timed call)."""
    own: list[Inputs] = []

    def call() -> object:
        own[:] = own or [copy_inputs(inputs)]
        with torch.no_grad():
            return model(*own[0])

    return call


def bytes_moved(case: Case, inputs: Inputs) -> int | None:
    """The bytes the case declares one call on ``inputs`` moves (None without a declaration, or where it cannot
    say: a case's helper failing here must not fail its cell)."""
    if case.bytes_moved is None:
        return None
    try:
        return int(case.bytes_moved(*inputs))
    except Exception:
        return None


def keep(cell_id: str, path: str, device: str, call: Callable[[], object] | None, bytes_moved: int | None) -> Timing:
    """A passing cell's timing so far: ``call`` kept for the timing phase (pending), or why it will not be timed."""
    timer = timer_for(device)
    if isinstance(timer, str):
        return Timing.not_timed(timer)
    if call is None:
        return Timing.not_timed(f"{path} keeps no artifact in the cell process")
    KEPT[cell_id] = Kept(call, bytes_moved)
    return Timing(TimingState.PENDING)


def warm_kept() -> None:
    """Call each kept artifact once, beside the other workers' last cells (not timed): Dynamo's caches, which
    each cell's reset emptied, are filled again from Inductor's caches (the same compiled code), CUDA graphs
    recorded again; an artifact that fails here is not timed, and says why. Dynamo's recompile limits are lifted
    first: the compiled modules of a case's own ``module`` class (or a shipped one) share its ``forward``, and past
    8 entries Dynamo would run the rest eagerly, unseen (a hit moves its entry to the front, so a timed call checks
    only its own guards)."""
    for limit in RECOMPILE_LIMITS:
        if hasattr(torch._dynamo.config, limit):
            setattr(torch._dynamo.config, limit, max(getattr(torch._dynamo.config, limit), 100 * len(KEPT)))
    for kept in KEPT.values():
        try:
            kept.call()
        except Exception as error:  # the artifact of a cell that passed: recorded, not raised
            kept.failed = f"its warm-up call failed: {type(error).__name__}: {str(error).strip()[:200]}"


def time_kept(ids: list[str], device: str) -> tuple[dict[str, Timing], float | None]:
    """The timing of each cell of ``ids`` (with the GPU to this process alone), and the GPU's copy bandwidth."""
    timer = timer_for(device)
    if isinstance(timer, str):
        return {cell: Timing.not_timed(timer) for cell in ids}, None
    timings = {cell: measure(KEPT[cell], timer) if cell in KEPT else lost() for cell in ids}
    KEPT.clear()
    return timings, timer.copy_gbps()


def lost() -> Timing:
    return Timing.not_timed("its artifact was not in the cell process at the timing phase")


def measure(kept: Kept, timer: DeviceTimer) -> Timing:
    """``WARMUP`` calls, then up to ``SAMPLES`` device samples (fewer for a slow artifact, within
    ``SAMPLING_BUDGET_S``) and as many host samples."""
    if kept.failed:
        return Timing.not_timed(kept.failed)
    try:
        for _ in range(WARMUP):
            kept.call()
        timer.synchronize()
        first = timer.device_seconds(kept.call)
        count = max(MIN_SAMPLES, min(SAMPLES, int(SAMPLING_BUDGET_S / max(first, 1e-9))))
        device = [first, *(timer.device_seconds(kept.call) for _ in range(count - 1))]
        host = []
        for _ in range(count):  # each on an idle GPU: a full launch queue would block the host
            host.append(timer.host_seconds(kept.call))
            timer.synchronize()
    except Exception as error:  # a passing artifact failing now: recorded, not raised
        return Timing.not_timed(f"it failed while timed: {type(error).__name__}: {str(error).strip()[:200]}")
    return summarize(device, host, kept.bytes_moved)
