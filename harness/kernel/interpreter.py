"""Triton's CPU interpreter (``TRITON_INTERPRET=1``, which ``python -m harness run --interpret`` sets for the run):
kernels then run on CPU tensors, so the CUDA paths run on CPU (harness/cell/runner.py) and the library ops register no
CPU kernel of their own (harness/kernel/wrappers.py), so that CPU tensors reach the Triton kernel; autotuned
stacks benchmark their configs with ``wall_clock_bench`` (harness/kernel/decorators.py)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence

INTERPRET_ENV = "TRITON_INTERPRET"


def triton_interpreted() -> bool:
    """Whether Triton runs kernels in its interpreter here (read when a kernel is decorated: set it first)."""
    return os.environ.get(INTERPRET_ENV) == "1"


def wall_clock_bench(kernel_call: Callable[[], None], quantiles: Sequence[float]) -> list[float]:
    """The autotuner's benchmarker in the interpreter, where Triton's own asks the device's driver (and there is
    none: "0 active drivers"): each config runs once, timed by the wall clock (ms), so every config, its
    heuristics and the autotuner's hooks run on CPU tensors; the pick is the config the interpreter ran
    fastest, which says nothing about a GPU."""
    start = time.perf_counter()
    kernel_call()
    return [(time.perf_counter() - start) * 1e3] * len(quantiles)
