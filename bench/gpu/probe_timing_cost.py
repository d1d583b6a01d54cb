"""Where a worker's turn in the timing phase goes (one H200 at 54f8db5: 1.7-5.6 s a worker, 50 s in all, one after
another, while its cells' own timing cost 0.9-2.5 s): the harness's timer (harness/cell/timing.py) on N small
artifacts (a torch add of 3,001 floats, as the cases' own size), step by step, twice in one process: the timer's
set-up, the host sides, the profiler session (its first in the process, of one call, then all the calls), its
events read back, the events method at the bandwidth size, the copy bandwidth; and a launch's host time before any
profiler session and after each turn's (a session's CUPTI left subscribed would slow every launch after it).
Prints one line per step.

Usage: python bench/gpu/probe_timing_cost.py [N]     (N artifacts, default 80: one worker's share)
"""

import sys
import time

import torch

from harness.cell import timing


def clock(label: str, step):
    start = time.perf_counter()
    result = step()
    torch.cuda.synchronize()
    print(f"  {label}: {time.perf_counter() - start:.3f} s", flush=True)
    return result


def turn(count: int) -> None:
    timer = clock("CudaTimer() (flush buffer, sleep rate, flush time)", timing.CudaTimer)
    x, y = torch.randn(3001, device="cuda"), torch.randn(3001, device="cuda")
    calls = [lambda: torch.add(x, y) for _ in range(count)]
    sides = clock(f"host_side x {count}", lambda: [timing.host_side(call, 24_000, timer) for call in calls])
    clock("a profiler session of one call", lambda: timer.kernel_samples([timing.Profiled(calls[0], 1)]))
    profiled = [timing.Profiled(side.call, side.count) for side in sides]
    start = time.perf_counter()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as session:
        for artifact in profiled:
            for _ in range(artifact.count + 1):
                torch.cuda._sleep(timing.MARKER_CYCLES)
                artifact.call()
                torch.cuda._sleep(timing.MARKER_CYCLES)
        torch.cuda.synchronize()
        inside = time.perf_counter()
    stopped = time.perf_counter()
    events = session.profiler.kineto_results.events()
    read = time.perf_counter()
    activities = timing.gpu_activities(events)
    parsed = time.perf_counter()
    timing.split_artifacts(activities, [artifact.count + 1 for artifact in profiled])
    print(f"  profiler session: calls {inside - start:.3f} s, stop {stopped - inside:.3f} s, events() "
          f"{read - stopped:.3f} s ({len(events)} events), gpu_activities {parsed - read:.3f} s, split "
          f"{time.perf_counter() - parsed:.3f} s", flush=True)  # fmt: skip
    ready = [(side, timing._ready) for side in sides]
    clock("by_kernels (the harness's call, all artifacts)", lambda: timing.by_kernels(ready, timer))
    big_x, big_y = torch.randn(16 * 2**20, device="cuda"), torch.randn(16 * 2**20, device="cuda")
    big = timing.host_side(lambda: torch.add(big_x, big_y), 3 * 64 * 2**20, timer)
    clock("by_events at 16M floats (one artifact)", lambda: timing.by_events(big, timer))
    clock("copy_gbps", timer.copy_gbps)


def launch_us() -> str:
    """A torch add's host time to launch (the GPU idle before each), median and quartiles of 2,000, in µs."""
    x, y = torch.randn(3001, device="cuda"), torch.randn(3001, device="cuda")
    times = []
    for _ in range(2000):
        torch.cuda.synchronize()
        start = time.perf_counter()
        torch.add(x, y)
        times.append((time.perf_counter() - start) * 1e6)
    times.sort()
    return f"{times[1000]:.2f} µs (quartiles {times[500]:.2f}-{times[1500]:.2f})"


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 80
    print(torch.__version__, torch.cuda.get_device_name(), flush=True)
    torch.randn(1, device="cuda")
    print(f"launch before any profiler session: {launch_us()}", flush=True)
    for n in (1, 2):
        print(f"turn {n}:", flush=True)
        turn(count)
        print(f"launch after turn {n}'s sessions: {launch_us()}", flush=True)


if __name__ == "__main__":
    main()
