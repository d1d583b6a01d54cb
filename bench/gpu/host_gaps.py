"""Does a CUDA-event time hold the host's launch gaps (issue 42)? No harness code: a 16M-float add compiled with
dynamic=True and a plain eager add, each timed as triton.testing.do_bench times one call (L2 flushed, events
around the call) and again behind a sleep kernel that keeps the GPU busy while the host launches. Run on a GPU
nothing else uses: python3 bench/gpu/host_gaps.py"""

import statistics
import time

import torch

x, y = (torch.randn(1 << 24, device="cuda") for _ in range(2))
flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
dynamic = torch.compile(lambda a, b: torch.relu(a * 2 + b), dynamic=True)
eager = lambda a, b: torch.relu(a * 2 + b)  # noqa: E731
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
start.record(); torch.cuda._sleep(1_000_000); end.record(); end.synchronize()  # noqa: E702
cycles_per_us = 1_000_000 / (start.elapsed_time(end) * 1e3)
for name, fn in (("eager", eager), ("compiled dynamic", dynamic)):
    for _ in range(5):
        fn(x, y)
    torch.cuda.synchronize()
    host = []
    for _ in range(30):
        t = time.perf_counter(); fn(x, y); host.append(time.perf_counter() - t); torch.cuda.synchronize()  # noqa: E702
    for cover_us in (0, 2 * max(host) * 1e6 + 50):
        times = []
        for _ in range(30):
            torch.cuda._sleep(int(cover_us * cycles_per_us)); flush.zero_(); start.record()  # noqa: E702
            fn(x, y); end.record(); end.synchronize(); times.append(start.elapsed_time(end) * 1e3)  # noqa: E702
        q = statistics.quantiles(times, n=4)
        print(f"{name}: host {statistics.median(host) * 1e6:.1f} us; cover {cover_us:.0f} us: device median "
              f"{q[1]:.1f} us, IQR {q[2] - q[0]:.1f} us, min {min(times):.1f}, max {max(times):.1f}")
