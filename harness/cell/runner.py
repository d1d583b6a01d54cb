"""Running one cell in this process: build the style around the case, send it down the path (on the case's
first size, then on inputs hypothesis draws), and classify what happened into an ``Outcome``."""

from __future__ import annotations

import resource
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import torch

from harness.case import Case
from harness.cell.context import Cell, CellCrash, CellSkip
from harness.cell.paths import PATHS
from harness.kernel.compare import Mismatch
from harness.kernel.interpreter import triton_interpreted
from harness.kernel.styles import Wrapped, build_style
from harness.spec import CellSpec, Outcome

CUDA_FAULT_MARKERS = ("illegal memory access", "device-side assert", "unspecified launch failure", "CUDA error")


def build(case: Case, style: str, cache: dict[tuple[str, str], Wrapped]) -> Wrapped:
    """Build a style once per process (torch.library ops can be registered only once)."""
    key = (case.id, style)
    if key not in cache:
        cache[key] = build_style(style, case)
    return cache[key]


def run_cell(
    case: Case,
    spec: CellSpec,
    workdir: Path,
    cache: dict[tuple[str, str], Wrapped],
    device: str | None = None,
) -> Outcome:
    """Run one cell in this process (never raises for the cell's own failures). ``device`` overrides the
    path's (the harness's own tests run CUDA paths on CPU tensors); under Triton's interpreter
    (``TRITON_INTERPRET=1``: ``python -m harness run --interpret``) a CUDA path runs on CPU tensors."""
    device = device or spec.path.device
    if device == "cuda" and triton_interpreted():
        device = "cpu"
    cell = Cell(
        case=case, style=spec.style, device=device, tolerance=spec.tolerance, workdir=workdir, share=spec.attempt == 1
    )
    outcome = Outcome()
    start, cpu_start = time.perf_counter(), cpu_seconds()
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    if device == "cuda" and torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    torch.manual_seed(0)
    try:
        if device == "cuda" and not torch.cuda.is_available():
            raise CellSkip("no CUDA device")
        cell.wrapped = build(case, spec.style, cache)
        run_examples(cell, PATHS[spec.path.id], spec.path.examples)
    except CellSkip as skip:
        outcome = Outcome(status="skip", reason=str(skip))
    except Exception as error:  # the cell's own failure is the measurement
        outcome = classify(error, cell.stage)
    cell.diagnostics.update(memory(device), cpu_seconds=round(cpu_seconds() - cpu_start, 3))
    breaks = sum(torch._dynamo.utils.counters["graph_break"].values())
    if breaks:
        cell.diagnostics["graph_breaks"] = breaks
    outcome.diagnostics = cell.diagnostics
    outcome.seconds = round(time.perf_counter() - start, 3)
    return outcome


def run_examples(cell: Cell, runner: Callable[[Cell], None], examples: int) -> None:
    """Run the path on the case's first size, then on ``examples - 1`` more (size, seed) drawn by hypothesis
    within the case's ``size_bounds``, derandomized so every run draws the same ones. A failing drawn example
    is shrunk; the one the error comes from is left in ``cell.example`` (and the record)."""
    if examples <= 1:
        runner(cell)
        return
    from hypothesis import HealthCheck, Phase, example, given, settings
    from hypothesis import strategies as st

    low, high = cell.case.bounds

    @settings(
        max_examples=examples - 1,
        derandomize=True,
        database=None,
        deadline=None,
        phases=(Phase.explicit, Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
    )
    @given(size=st.integers(low, high), seed=st.integers(0, 2**16))
    @example(size=cell.case.sizes[0], seed=0)
    def check(size: int, seed: int) -> None:
        cell.example = (size, seed)
        torch._dynamo.reset()
        runner(cell)

    try:
        check()
    except BaseExceptionGroup as group:  # hypothesis's report of a flaky failure: the first error is the cell's
        first = group.exceptions[0]
        cell.diagnostics["flaky_example"] = True
        raise first from None
    finally:
        if cell.example is not None:
            cell.diagnostics["example"] = {"size": cell.example[0], "seed": cell.example[1]}


def classify(error: BaseException, stage: str) -> Outcome:
    """The outcome of a failed cell: ``wrong`` for a mismatch, ``crash`` for a dead process, else ``error``."""
    message = str(error).strip() or repr(error)
    if isinstance(error, Mismatch):
        status = "wrong"
    elif isinstance(error, CellCrash):
        status = "crash"
    else:
        status = "error"
        stage = _refine_stage(error, stage)
    return Outcome(
        status=status,
        error_type=type(error).__name__,
        error=message,
        stage=stage,
        traceback="".join(traceback.format_exception(error)[-6:]) if status == "error" else None,
        cuda_fault=any(marker in message for marker in CUDA_FAULT_MARKERS)
        or isinstance(error, torch.cuda.OutOfMemoryError),
    )


def _refine_stage(error: BaseException, stage: str) -> str:
    import torch._dynamo.exc as dynamo_exc

    if isinstance(error, dynamo_exc.BackendCompilerFailed):
        return "compile"
    if isinstance(error, dynamo_exc.TorchDynamoException | dynamo_exc.UserError):
        return "trace" if stage in ("trace", "compile") else stage
    return stage


def device_name() -> str:
    """The GPU's name, or "cpu" where there is no CUDA device."""
    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"


def cpu_seconds() -> float:
    """CPU seconds (user and system) this process and the children it waited for have used: against a cell's
    seconds, what it spent waiting (GPU, locks, disk, a busy machine) rather than computing."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def memory(device: str) -> dict[str, float]:
    """The cell process's resident memory now and at its peak so far, and the cell's peak GPU memory (MiB):
    a series over a worker's cells shows growth from cell to cell."""
    with open("/proc/self/statm") as statm:
        rss_pages = int(statm.read().split()[1])
    rss = rss_pages * resource.getpagesize() / 2**20
    peak = max(rss, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)  # the kernel updates maxrss lazily
    usage = {"rss_mb": round(rss, 1), "peak_rss_mb": round(peak, 1)}
    if device == "cuda" and torch.cuda.is_available():
        usage["gpu_peak_mb"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    return usage
