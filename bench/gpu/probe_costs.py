"""No-harness probes of the fixed costs a cell or a confirmation script pays on a GPU machine: a full gc.collect in
a process holding torch and compiled code, Triton autotuning of a 2-config kernel per key, an AOTInductor package's
compile with and without precompiled headers, and starting a Python that imports torch (fresh, or forked from one
that already did). Prints one line per measurement."""

import gc
import os
import subprocess
import sys
import tempfile
import time

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x, y, out, n, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n
    tl.store(out + offsets, tl.load(x + offsets, mask=mask) + tl.load(y + offsets, mask=mask), mask=mask)


def clock(label, fn, repeat=1):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    print(f"{label}: {' '.join(f'{t:.3f}' for t in times)} s", flush=True)


def autotune_cost():
    configs = [triton.Config({"BLOCK_SIZE": 256}, num_warps=4), triton.Config({"BLOCK_SIZE": 1024}, num_warps=8)]
    tuned = triton.autotune(configs=configs, key=["n"])(add_kernel)
    for n in (3001, 9343, 20000):
        x = torch.randn(n, device="cuda")
        out = torch.empty_like(x)

        def call(x=x, out=out, n=n):
            tuned[(triton.cdiv(n, 256),)](x, x, out, n)
            torch.cuda.synchronize()

        clock(f"autotune first call n={n}", call)
        clock(f"autotuned second call n={n}", call)
        tuned.cache.clear()
        clock(f"autotune again after cache.clear n={n}", call)


def gc_cost():
    clock("gc.collect, torch imported", gc.collect, 3)
    kept = []
    for i in range(30):
        model = torch.compile(lambda x, i=i: torch.relu(x * (i + 1.0)) + 1.0)
        model(torch.ones(1000 + i, device="cuda"))
        kept.append(model)
    clock("gc.collect, 30 compiled functions kept", gc.collect, 3)
    for _ in range(30):
        ep = torch.export.export(torch.nn.Linear(8, 8).cuda(), (torch.ones(2, 8, device="cuda"),))
        kept.append(ep)
    clock("gc.collect, + 30 exported programs kept", gc.collect, 3)


def aoti_cost(precompile):
    code = f"""
import time, torch, torch._inductor.config as c
c.aot_inductor.precompile_headers = {precompile}
m = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU()).cuda()
ep = torch.export.export(m, (torch.ones(4, 16, device='cuda'),))
s = time.perf_counter()
p = torch._inductor.aoti_compile_and_package(ep)
print('aoti compile precompile_headers={precompile}:', round(time.perf_counter() - s, 2), 's', flush=True)
"""
    cache = tempfile.mkdtemp()
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache}
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        print((out.stdout + out.stderr[-600:] if out.returncode else out.stdout).strip(), flush=True)


def start_cost():
    for code in ("import torch", "import torch; torch.cuda.init()", "import torch, triton, torch._inductor.compile_fx"):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        print(f"fresh python -c {code!r}: {time.perf_counter() - start:.2f} s", flush=True)


if __name__ == "__main__":
    start_cost()
    torch.ones(1, device="cuda")
    autotune_cost()
    gc_cost()
    aoti_cost(False)
    aoti_cost(True)
