"""A standalone check, with no harness code, of what the cost tables of 3c865ca show (bench/results/issue60): a
training cell's comparison of a 1,739-float add waited 1-2 s for the GPU (compare stage 2 s, CPU 0.2 s), 14 cell
processes on each GPU, while 14 processes doing the same small steps alone wait 12 ms a step (probe_contention.py).
What, running beside them, makes a small step wait? Each condition runs 14 "steppers" on GPU 0 (a fresh tensor, a
forward and backward of small kernels, the gradient copied to the host) for SECONDS, beside one kind of background:

    none    nothing
    churn   4 loops, each starting a fresh Python that starts CUDA and exits (cell processes, loaders, scripts)
    bench   2 processes benchmarking a kernel with triton.testing.do_bench's defaults (a repro script autotuning)
    cpu     twice as many busy processes as cores (compile workers saturating the host)
    free    4 processes allocating 1 GiB and emptying the cache (cudaMalloc / cudaFree)

    python bench/gpu/probe_waits.py [CONDITION ...]   # each printed: a step's wall median, 90th percentile, longest
"""

import os
import statistics
import subprocess
import sys
import time

SECONDS = 12.0
STEPPERS = 14


def stepper() -> None:
    import torch

    x = torch.randn(1739, device="cuda", requires_grad=True)
    torch.cuda.synchronize()
    print("ready", flush=True)
    sys.stdin.readline()
    walls, end = [], time.monotonic() + SECONDS
    while time.monotonic() < end:
        began = time.perf_counter()
        y = torch.randn(1739, device="cuda")
        (x * y).sin().sum().backward()
        x.grad.cpu()
        x.grad = None
        walls.append(time.perf_counter() - began)
    print(" ".join(f"{w:.5f}" for w in walls), flush=True)


def background(kind: str) -> None:
    end = time.monotonic() + SECONDS + 5
    if kind == "churn":
        while time.monotonic() < end:
            subprocess.run([sys.executable, "-c", "import torch; torch.zeros(1, device='cuda')"], check=False)
    elif kind == "bench":
        import torch
        import triton.testing

        a = torch.randn(1 << 24, device="cuda")
        while time.monotonic() < end:
            triton.testing.do_bench(lambda: a * 2)
    elif kind == "cpu":
        while time.monotonic() < end:
            pass
    elif kind == "free":
        import torch

        while time.monotonic() < end:
            block = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
            del block
            torch.cuda.empty_cache()


COUNTS = {"none": 0, "churn": 4, "bench": 2, "cpu": 2 * (os.cpu_count() or 1), "free": 4}


def condition(kind: str) -> str:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "0"}
    steppers = [
        subprocess.Popen(
            [sys.executable, __file__, "--step"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        for _ in range(STEPPERS)
    ]
    for child in steppers:
        child.stdout.readline()
    others = [subprocess.Popen([sys.executable, __file__, "--background", kind], env=env) for _ in range(COUNTS[kind])]
    time.sleep(3 if kind in ("bench", "free") else 0.5)  # their CUDA started
    for child in steppers:
        child.stdin.write("go\n")
        child.stdin.flush()
    walls = sorted(float(w) for child in steppers for w in child.communicate()[0].split())
    for child in others:
        child.kill()
        child.wait()
    p90 = walls[int(0.9 * (len(walls) - 1))]
    return (
        f"{kind:6s} {len(walls):6d} steps: median {statistics.median(walls) * 1e3:8.2f} ms, 90th {p90 * 1e3:8.2f} ms, "
        f"longest {walls[-1] * 1e3:8.1f} ms"
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--step"]:
        stepper()
    elif sys.argv[1:2] == ["--background"]:
        background(sys.argv[2])
    else:
        for name in sys.argv[1:] or list(COUNTS):
            print(condition(name), flush=True)
