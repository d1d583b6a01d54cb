"""Triton's CPU interpreter (``TRITON_INTERPRET=1``, which ``python -m harness run --interpret`` sets for the run):
kernels then run on CPU tensors, so the CUDA paths run on CPU (harness/cell/runner.py) and the library ops register no
CPU kernel of their own (harness/kernel/wrappers.py), so that CPU tensors reach the Triton kernel; every
autotuner benchmarks its configs with ``once_each_bench`` (given by the runner: harness/cell/autotuners.py), and
a self-check flags the dtypes the interpreter computes wrong."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from harness.spec import INTERPRET_ENV as INTERPRET_ENV
from harness.spec import triton_interpreted as triton_interpreted

SELF_CHECK_SIZE = 8
SELF_CHECK_RTOL = 2**-6  # a few bfloat16 ulps: the check is for gross errors, not rounding


def once_each_bench(kernel_call: Callable[[], None], quantiles: Sequence[float]) -> list[float]:
    """The autotuner's benchmarker in the interpreter, where Triton's own asks the device's driver (and there is
    none: "0 active drivers"): each config runs once, so every config, its heuristics and the autotuner's hooks
    run on CPU tensors, and all tie, so the autotuner keeps its first config. The interpreter's wall clock says
    nothing about a GPU, and its noise between close configs made a cell and its repro script keep different
    ones: a bug of one config was a `wrong` cell whose script printed "no failure" (a harness suspect)."""
    kernel_call()
    return [1.0] * len(quantiles)


@functools.cache
def interpreter_fault(dtype_name: str) -> str | None:
    """Self-check of the interpreter in ``dtype_name``: a tiny kernel (``a * b + a`` over 8 elements) against
    PyTorch; what it got wrong, or ``None`` where it is right. Cells in a dtype it computes wrong are then skips
    for the styles that run Triton, so a wrong verdict is never charged to a style (cached: once per process)."""
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def multiply_add(a_ptr, b_ptr, out_ptr, N: tl.constexpr):
        offsets = tl.arange(0, N)
        a = tl.load(a_ptr + offsets)
        tl.store(out_ptr + offsets, a * tl.load(b_ptr + offsets) + a)

    dtype = getattr(torch, dtype_name)
    generator = torch.Generator().manual_seed(0)
    a, b = (torch.randn(SELF_CHECK_SIZE, generator=generator).to(dtype) for _ in range(2))
    out = torch.empty_like(a)
    multiply_add[(1,)](a, b, out, N=SELF_CHECK_SIZE)
    want = (a.double() * b.double() + a.double()).to(dtype).double()
    error = (out.double() - want).abs()
    worst = int(error.argmax())
    if error[worst] <= SELF_CHECK_RTOL * (1 + want[worst].abs()):
        return None
    return (
        f"Triton's interpreter computes {dtype_name} wrong here (self-check a*b+a over {SELF_CHECK_SIZE} "
        f"elements: {out[worst].item():.3g} where {want[worst].item():.3g})"
    )
