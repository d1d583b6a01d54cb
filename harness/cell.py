"""One cell: build a style for a case, send it down a path, compare, and classify the outcome."""

from __future__ import annotations

import functools
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from harness.case import Case, Inputs
from harness.compare import Mismatch, Tolerance, assert_match, tolerance_for
from harness.styles import Wrapped, build_style

STAGES = ("build", "trace", "compile", "run", "compare")
CUDA_FAULT_MARKERS = ("illegal memory access", "device-side assert", "unspecified launch failure", "CUDA error")


class CellSkip(Exception):
    """The cell cannot run on this machine (status ``skip``); the message is the reason."""


class CellCrash(Exception):
    """A process the cell started died by a signal (status ``crash``)."""


@dataclass
class Cell:
    """What a path works with: the case, the built style, where to run, and what it has seen so far."""

    case: Case
    style: str
    device: str
    tolerance: Tolerance
    workdir: Path
    wrapped: Wrapped | None = None
    stage: str = "build"
    diagnostics: dict[str, Any] = field(default_factory=dict)
    example: tuple[int, int] | None = None  # (size, seed) of the inputs now run; None: the case's first size

    @property
    def id(self) -> str:
        return f"{self.case.id}-{self.style}"

    def inputs(self, size: int | None = None, seed: int | None = None, requires_grad: bool = False) -> Inputs:
        example_size, example_seed = self.example or (self.case.sizes[0], 0)
        tensors = self.case.make_inputs(
            example_size if size is None else size, self.device, example_seed if seed is None else seed
        )
        if requires_grad:
            return tuple(t.detach().requires_grad_(t.is_floating_point()) for t in tensors)
        return tensors

    def model(self, train: bool = False) -> torch.nn.Module:
        assert self.wrapped is not None
        op = self.wrapped.trainable() if train else self.wrapped.op
        return self.case.build_module(op).to(self.device)

    def reference_model(self) -> torch.nn.Module:
        return self.case.build_module(self.case.reference).to(self.device)

    def expected(self, inputs: Inputs) -> torch.Tensor:
        with torch.no_grad():
            return self.reference_model()(*(t.detach().clone() for t in inputs))

    def synchronize(self) -> None:
        """Wait for the GPU, so that a fault of this cell's kernels surfaces here, at its stage."""
        if self.device == "cuda":
            torch.cuda.synchronize()

    def compare(self, what: str, actual: object, expected: torch.Tensor) -> None:
        self.stage = "compare"
        assert_match(what, actual, expected, self.tolerance)

    @contextmanager
    def timed(self, key: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.diagnostics[key] = round(self.diagnostics.get(key, 0.0) + time.perf_counter() - start, 3)

    def backend(self, **config_patches: Any) -> Callable[..., Any]:
        """Inductor, as ``torch.compile`` calls it, recording what the captured graph holds and when
        tracing ends, compiling starts and compiled code runs (so errors get the right stage)."""
        from torch._inductor.compile_fx import compile_fx

        def inductor(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
            self.stage = "compile"
            self.diagnostics["graphs"] = self.diagnostics.get("graphs", 0) + 1
            self.record_graph(gm)
            compiled = compile_fx(gm, example_inputs, config_patches=config_patches or None)

            @functools.wraps(compiled)
            def run(*args: Any, **kwargs: Any) -> Any:
                self.stage = "run"
                return compiled(*args, **kwargs)

            self.stage = "trace"
            return run

        return inductor

    def record_graph(self, gm: torch.fx.GraphModule) -> None:
        """Keep the graph's user-kernel wrappers and harness ops (or nothing: the kernel was not captured)."""
        captured = set(self.diagnostics.get("captured", []))
        for node in gm.graph.nodes:
            if node.op != "call_function":
                continue
            name = getattr(node.target, "__name__", str(node.target))
            qualified = str(node.target)
            if "triton_kernel_wrapper" in name or qualified.startswith("harness.") or "auto_functionalized" in name:
                captured.add(qualified if qualified.startswith("harness.") else name)
        self.diagnostics["captured"] = sorted(captured)


def build(case: Case, style: str, cache: dict[tuple[str, str], Wrapped]) -> Wrapped:
    """Build a style once per process (torch.library ops can be registered only once)."""
    key = (case.id, style)
    if key not in cache:
        cache[key] = build_style(style, case)
    return cache[key]


def run_cell(
    case: Case,
    style: str,
    path: str,
    device: str,
    tolerances: Mapping[str, Tolerance],
    workdir: Path,
    cache: dict[tuple[str, str], Wrapped],
    examples: int = 1,
) -> dict[str, Any]:
    """Run one cell in this process and return its record (never raises for the cell's own failures).
    With ``examples`` > 1 the path runs on the case's first size, then on inputs hypothesis draws."""
    from harness.paths import PATHS

    cell = Cell(case=case, style=style, device=device, tolerance=tolerance_for(case.dtype, tolerances), workdir=workdir)
    record: dict[str, Any] = {"status": "pass", "error_type": None, "error": None, "stage": None, "reason": None}
    start = time.perf_counter()
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    if device == "cuda" and torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    torch.manual_seed(0)
    try:
        if device == "cuda" and not torch.cuda.is_available():
            raise CellSkip("no CUDA device")
        cell.wrapped = build(case, style, cache)
        run_examples(cell, PATHS[path], examples)
    except CellSkip as skip:
        record.update(status="skip", reason=str(skip))
    except Exception as error:  # the cell's own failure is the measurement
        record.update(classify(error, cell.stage))
    cell.diagnostics.update(memory(device))
    breaks = sum(torch._dynamo.utils.counters["graph_break"].values())
    if breaks:
        cell.diagnostics["graph_breaks"] = breaks
    record["diagnostics"] = cell.diagnostics
    record["seconds"] = round(time.perf_counter() - start, 3)
    return record


def run_examples(cell: Cell, runner: Callable[[Cell], None], examples: int) -> None:
    """Run the path on the case's first size, then on ``examples - 1`` more (size, seed) drawn by hypothesis
    within the case's ``size_bounds``, derandomized so every run draws the same ones. A failing drawn example
    is shrunk; the one the error comes from is left in ``cell.example`` (and the record)."""
    if examples <= 1:
        runner(cell)
        return
    from hypothesis import HealthCheck, Phase, example, given, settings
    from hypothesis import strategies as st

    low, high = cell.case.size_bounds or (1, 2 * max(cell.case.sizes))

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


def classify(error: BaseException, stage: str) -> dict[str, Any]:
    """The status and error fields of a failed cell."""
    message = str(error).strip() or repr(error)
    if isinstance(error, Mismatch):
        status = "wrong"
    elif isinstance(error, CellCrash):
        status = "crash"
    else:
        status = "error"
        stage = _refine_stage(error, stage)
    record = {"status": status, "error_type": type(error).__name__, "error": message, "stage": stage}
    if status == "error":
        record["traceback"] = "".join(traceback.format_exception(error)[-6:])
    if any(marker in message for marker in CUDA_FAULT_MARKERS) or isinstance(error, torch.cuda.OutOfMemoryError):
        record["cuda_fault"] = True
    return record


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


def memory(device: str) -> dict[str, float]:
    """The cell process's resident memory now and at its peak so far, and the cell's peak GPU memory (MiB):
    a series over a worker's cells shows growth from cell to cell."""
    import resource

    with open("/proc/self/statm") as statm:
        rss_pages = int(statm.read().split()[1])
    rss = rss_pages * resource.getpagesize() / 2**20
    peak = max(rss, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)  # the kernel updates maxrss lazily
    usage = {"rss_mb": round(rss, 1), "peak_rss_mb": round(peak, 1)}
    if device == "cuda" and torch.cuda.is_available():
        usage["gpu_peak_mb"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    return usage
