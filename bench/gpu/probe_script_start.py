"""Where a short eager repro script's 4-7 s go when many run at once (one H200 at fa2064f: 94 of 128 scripts ran after
the last cell, 14-16 at a time, an eager one 5.6 s, and the timing phase waited for them), no harness code: N
children at once, forked from a parent that imported torch and triton (as the scripts' fork server does) or each a
fresh Python, each timing its steps: import torch and triton (fresh only), CUDA's start (its first tensor), a small
@triton.jit kernel's first launch (compiled, or loaded from a shared Triton cache that a first child filled), a
second launch, and the GPU waited for. Prints the median and largest of each step per (mode, N).

Usage: python bench/gpu/probe_script_start.py [N ...]     (default: 1 14)
"""

import itertools
import json
import os
import runpy
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import json, sys, time
marks = [("start", time.perf_counter())]
import torch, triton, triton.language as tl
marks.append(("import torch and triton", time.perf_counter()))
x = torch.randn(3001, device="cuda")
marks.append(("CUDA start (first tensor)", time.perf_counter()))

@triton.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)

out = torch.empty_like(x)
add[(triton.cdiv(3001, 1024),)](x, x, out, 3001, BLOCK=1024)
marks.append(("first launch (compile or cache)", time.perf_counter()))
add[(triton.cdiv(3001, 1024),)](x, x, out, 3001, BLOCK=1024)
torch.cuda.synchronize()
marks.append(("second launch, synchronized", time.perf_counter()))
print(json.dumps(marks))
"""


def steps(marks: list) -> dict[str, float]:
    return {name: end - begin for (_, begin), (name, end) in itertools.pairwise(marks)}


SCRIPT = os.path.join(tempfile.mkdtemp(prefix="probe-script-"), "script.py")  # @triton.jit reads its source file


def fresh(count: int, env: dict[str, str]) -> list[dict[str, float]]:
    children = [
        subprocess.Popen([sys.executable, SCRIPT], stdout=subprocess.PIPE, env=env, text=True) for _ in range(count)
    ]
    return [steps(json.loads(child.communicate()[0])) for child in children]


def forked(count: int) -> list[dict[str, float]]:
    import torch  # noqa: F401  (imported before the fork, CUDA not started: the fork server's state)
    import triton  # noqa: F401

    pipes = []
    for _ in range(count):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            sys.stdout = os.fdopen(write, "w")
            runpy.run_path(SCRIPT, run_name="__main__")  # its imports find torch and triton imported
            sys.stdout.flush()
            os._exit(0)
        os.close(write)
        pipes.append((pid, read))
    found = []
    for pid, read in pipes:
        with os.fdopen(read) as stream:
            found.append(steps(json.loads(stream.read())))
        os.waitpid(pid, 0)
    return found


def summary(mode: str, count: int, runs: list[dict[str, float]], wall: float) -> None:
    print(f"{mode}, {count} at once: {wall:.1f} s wall")
    for name in runs[0]:
        values = [run[name] for run in runs]
        print(f"  {name}: median {statistics.median(values):.2f} s, largest {max(values):.2f} s", flush=True)


def main() -> None:
    counts = [int(arg) for arg in sys.argv[1:]] or [1, 14]
    with open(SCRIPT, "w") as script:
        script.write(CHILD)
    env = {**os.environ, "TRITON_CACHE_DIR": tempfile.mkdtemp(prefix="probe-triton-")}
    os.environ["TRITON_CACHE_DIR"] = env["TRITON_CACHE_DIR"]
    started = time.perf_counter()
    summary("fresh, cold Triton cache", 1, fresh(1, env), time.perf_counter() - started)
    for count in counts:
        started = time.perf_counter()
        summary("fresh", count, fresh(count, env), time.perf_counter() - started)
    for count in counts:
        started = time.perf_counter()
        summary("forked", count, forked(count), time.perf_counter() - started)


if __name__ == "__main__":
    main()
