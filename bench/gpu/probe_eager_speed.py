"""A standalone check, with no harness code, of the chart's eager timings of case add (3001 float32): the plain
launcher, triton_op + wrap_triton, and triton_op over an autotuned kernel, each timed as the timing phase does
(CUDA events around a call after a 256 MiB L2 flush) and with triton.testing.do_bench, plus host time per call."""

import statistics
import time

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


tuned = triton.autotune(
    [triton.Config({"BLOCK_SIZE": 256}), triton.Config({"BLOCK_SIZE": 1024}, num_warps=8)], key=["n"]
)(add_kernel)


def launch(kernel, x, y, **meta):
    out = torch.empty_like(x)
    kernel[lambda m: (triton.cdiv(x.numel(), m["BLOCK_SIZE"]),)](x, y, out, x.numel(), **meta)
    return out


@torch.library.triton_op("probe::add", mutates_args=())
def add_op(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return launch(torch.library.wrap_triton(add_kernel), x, y, BLOCK_SIZE=256)


@torch.library.triton_op("probe::add_tuned", mutates_args=())
def add_tuned_op(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return launch(torch.library.wrap_triton(tuned), x, y)


def events(call, flush):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    flush.zero_()
    start.record()
    call()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3


def host(call):
    torch.cuda.synchronize()
    began = time.perf_counter()
    call()
    took = time.perf_counter() - began
    torch.cuda.synchronize()
    return took * 1e6


x, y = torch.randn(3001, device="cuda"), torch.randn(3001, device="cuda")
flush = torch.empty(256 * 2**20, dtype=torch.int8, device="cuda")
for name, call in [
    ("launcher", lambda: launch(add_kernel, x, y, BLOCK_SIZE=256)),
    ("triton_op", lambda: torch.ops.probe.add(x, y)),
    ("triton_op_autotune", lambda: torch.ops.probe.add_tuned(x, y)),
    ("torch.add", lambda: torch.add(x, y)),
]:
    for _ in range(5):
        call()
    device = statistics.median(events(call, flush) for _ in range(30))
    bench = triton.testing.do_bench(call, warmup=5, rep=30) * 1e3
    per_call = statistics.median(host(call) for _ in range(30))
    print(f"{name:20s} events {device:8.1f} µs   do_bench {bench:8.1f} µs   host {per_call:8.1f} µs")
