"""No-harness probe of where an AOTInductor compile's seconds go (the aoti paths are half of a full run's
cell-seconds): a triton_op add exported and compiled to a package, three times one after another in one process
(the first asks Inductor's CPU-ISA probes and builds the precompiled header), each at its own size so that no cache
serves another's program. Prints per compile its wall and CPU seconds and Inductor's own timers
(``compilation_time_metrics``) above 0.05 s.

Usage: python bench/gpu/probe_aoti.py
"""

import os
import resource
import tempfile
import time

import torch
import triton
import triton.language as tl
from torch.library import triton_op, wrap_triton


@triton.jit
def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out + offsets, tl.load(x + offsets, mask=mask) + tl.load(y + offsets, mask=mask), mask=mask)


@triton_op("probe::add", mutates_args={})
def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    wrap_triton(add_kernel)[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out


class Model(torch.nn.Module):
    def forward(self, x, y):
        return add(x, y)


def cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def compile_once(tag: str, size: int, folder: str) -> None:
    x = torch.randn(size, device="cuda")
    start, cpu_start = time.perf_counter(), cpu()
    program = torch.export.export(Model(), (x, x))
    exported = time.perf_counter()
    torch._dynamo.utils.compilation_time_metrics.clear()
    package = torch._inductor.aoti_compile_and_package(program, package_path=f"{folder}/{tag}.pt2")
    done = time.perf_counter()
    runner = torch._inductor.aoti_load_package(package)
    torch.testing.assert_close(runner(x, x), x + x)
    timers = {k: sum(v) for k, v in torch._dynamo.utils.compilation_time_metrics.items() if sum(v) > 0.05}
    shown = ", ".join(f"{k} {v:.2f}" for k, v in sorted(timers.items(), key=lambda kv: -kv[1])[:12])
    print(f"{tag}: export {exported - start:.2f} s, compile {done - exported:.2f} s wall, "
          f"{cpu() - cpu_start:.2f} s CPU (with export), load+run {time.perf_counter() - done:.2f} s; {shown}",
          flush=True)  # fmt: skip


def main() -> None:
    folder = tempfile.mkdtemp()
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", f"{folder}/inductor")
    print(torch.__version__, triton.__version__, torch.cuda.get_device_name(), os.cpu_count(), "cores", flush=True)
    for n in range(3):
        compile_once(f"alone{n}", 3001 + n, folder)


if __name__ == "__main__":
    main()
