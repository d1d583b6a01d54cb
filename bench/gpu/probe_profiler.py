"""What one profiler session costs the timing phase (issue 60): the phase profiles each kept artifact's samples in a
session of its own (harness/cell/timing.py ``CudaTimer.kernel_samples``), 1,432 sessions in a full run, one worker
at a time on the GPU. Times, on the host, the calls alone, the same calls inside a session of their own, reading the
session's events, and many artifacts' calls inside one session, for a small kernel (an add of 3,001 floats).
No harness code: run it on the GPU machine with ``python3 bench/gpu/probe_profiler.py``."""

from __future__ import annotations

import statistics
import time

import torch
from torch.profiler import ProfilerActivity, profile

CALLS = 30  # the samples of one timing (harness.cell.timing.SAMPLES)
MARKER_CYCLES = 1000
ROUNDS = 20
ARTIFACTS = 50  # artifacts whose samples one shared session would hold


def calls(call, count: int) -> None:
    for _ in range(count):
        torch.cuda._sleep(MARKER_CYCLES)
        call()
        torch.cuda._sleep(MARKER_CYCLES)
    torch.cuda.synchronize()


def seconds(step) -> float:
    began = time.perf_counter()
    step()
    return time.perf_counter() - began


def main() -> None:
    x, y = torch.randn(3001, device="cuda"), torch.randn(3001, device="cuda")
    call = lambda: x + y  # noqa: E731
    calls(call, CALLS)
    with profile(activities=[ProfilerActivity.CUDA]):  # the first session starts CUPTI
        calls(call, CALLS)
    alone = [seconds(lambda: calls(call, CALLS)) for _ in range(ROUNDS)]
    sessions, reading = [], []
    for _ in range(ROUNDS):
        began = time.perf_counter()
        with profile(activities=[ProfilerActivity.CUDA]) as session:
            calls(call, CALLS)
        closed = time.perf_counter()
        session.profiler.kineto_results.events()
        sessions.append(closed - began)
        reading.append(time.perf_counter() - closed)
    began = time.perf_counter()
    with profile(activities=[ProfilerActivity.CUDA]) as shared:
        for _ in range(ARTIFACTS):
            calls(call, CALLS)
    closed = time.perf_counter()
    shared.profiler.kineto_results.events()
    read = time.perf_counter() - closed
    ms = lambda values: f"{statistics.median(values) * 1e3:.2f} ms"  # noqa: E731
    print(torch.__version__, torch.cuda.get_device_name())
    print(f"{CALLS} calls alone: {ms(alone)}; in a session of their own: {ms(sessions)}, its events read {ms(reading)}")
    one = (closed - began) * 1e3
    print(f"{ARTIFACTS} x {CALLS} calls in one session: {one:.1f} ms, its events read {read * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
