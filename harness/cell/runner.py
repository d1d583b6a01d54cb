"""Running one cell in this process: build the style around the case, send it down the path (on the case's
first size, then on inputs hypothesis draws), and classify what happened into an ``Outcome``."""

from __future__ import annotations

import functools
import gc
import hashlib
import importlib.util
import os
import resource
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import torch
from triton.runtime.autotuner import Autotuner

from harness.case import Case, exit_words
from harness.cell.autotuners import benchmark_with, reachable_autotuners, run_benchmark
from harness.cell.bandwidth import bandwidth_regime
from harness.cell.context import Cell, CellCrash, CellSkip
from harness.cell.paths import PATHS
from harness.cell.program import judge, program_digest, run_program
from harness.cell.scripted import cell_program, readable, run_script
from harness.cell.timing import faulted_at_size, keep
from harness.cell.verdict import MISMATCH, SUBSYSTEM_MISMATCH
from harness.kernel.compare import Mismatch, dtype_name
from harness.kernel.compat import forget_interpreted_kernels, store_autotuning
from harness.kernel.interpreter import interpreter_fault, triton_interpreted
from harness.kernel.styles import CONTROL, NotApplicable, Wrapped, build_style
from harness.spec import (
    CUDA_FAULT_MARKERS,
    TIMED_PATHS,
    CellSpec,
    Outcome,
    RunLocations,
    Stage,
    Status,
    Timing,
    own_words,
)

FRESH_AUTOTUNE_TAG = "harness-fresh-autotune"  # torch.compiler.config.cache_key_tag's start (``cache_tag``)


AUTOTUNERS: dict[tuple[str, str], list[Autotuner]] = {}  # (case, style) built here -> the autotuners it can launch


def build(case: Case, style: str, cache: dict[tuple[str, str], Wrapped]) -> Wrapped:
    """Build a style once per process (torch.library ops can be registered only once); the autotuners it can
    launch join ``AUTOTUNERS``, their caches emptied (``fresh_autotune``), each given the run's benchmark unless it
    names its own (``benchmark_with``)."""
    key = (case.id, style)
    if key not in cache:
        cache[key] = build_style(style, case)
        AUTOTUNERS[key] = reachable_autotuners(cache[key])
        benchmark_with(AUTOTUNERS[key], run_benchmark())
        for tuner in AUTOTUNERS[key]:
            tuner.cache.clear()
    return cache[key]


def run_cell(
    case: Case,
    spec: CellSpec,
    workdir: Path,
    cache: dict[tuple[str, str], Wrapped],
    device: str | None = None,
    locations: RunLocations | None = None,
) -> Outcome:
    """Run one cell in this process (never raises for the cell's own failures). ``device`` overrides the
    path's (the harness's own tests run CUDA paths on CPU tensors); under Triton's interpreter
    (``TRITON_INTERPRET=1``: ``python -m harness run --interpret``) a CUDA path runs on CPU tensors."""
    device = device or spec.path.device
    if device == "cuda" and triton_interpreted():
        device = "cpu"
    cell = Cell(
        case=case,
        style=spec.style,
        device=device,
        tolerance=spec.tolerance,
        workdir=workdir,
        share=spec.attempt == 1,
        locations=locations or RunLocations(),
    )
    outcome: Outcome | None = None  # the outcome of a cell that did not run to its end (a verdict's otherwise)
    mismatch: str | None = None
    start, cpu_start = time.perf_counter(), cpu_seconds()
    fresh_autotune(cache_tag(spec))
    torch._dynamo.reset()
    held = settle_gpu_memory() if device == "cuda" and torch.cuda.is_available() else 0
    cell.lap("setup")
    try:
        run_path(cell, spec, cache)
    except (CellSkip, NotApplicable) as skip:
        outcome = Outcome(status=Status.SKIP, reason=str(skip))
    except Mismatch as error:  # a number unlike the reference: the verdict's fact
        mismatch = str(error).strip() or repr(error)
    except Exception as error:  # the cell's own failure is the measurement
        outcome = classify(error, cell.stage)
    except SystemExit as error:  # the case's code exited: the cell's failure, not the end of its process
        outcome = Outcome(status=Status.ERROR, error_type="SystemExit", error=exit_words(error), stage=cell.stage)
    cell.lap()
    fault = end_of_cell_fault()
    if fault is not None:  # this cell's kernels faulted: charged here, not to the next cell of the process
        outcome = faulted(fault, outcome, mismatch)
    for name, value in memory(device, held).items():
        setattr(cell.measurements, name, value)
    outcome = outcome or judged(cell, mismatch)
    outcome.capture, outcome.measurements = cell.capture, cell.measurements
    outcome = readable(outcome, cell)
    if outcome.status == Status.PASS and spec.path.id in TIMED_PATHS and spec.attempt == 1:
        outcome.timing = (
            keep(
                spec.id,
                spec.path.id,
                device,
                cell.timed_call,
                cell.bytes_moved,
                bandwidth_regime(cell, spec.path.id),
                cell.autotuners or AUTOTUNERS.get((case.id, spec.style), ()),
            )
            if spec.timed
            else Timing.not_timed("the run was given --no-timing")
        )
        outcome.poisoned = faulted_at_size(outcome.timing)
    cell.measurements.cpu_seconds = round(max(0.0, cpu_seconds() - cpu_start), 3)  # the check at the size too
    cell.lap("end")
    cell.measurements.stage_seconds = {stage: round(seconds, 3) for stage, seconds in cell.clock.items()}
    outcome.seconds = round(time.perf_counter() - start, 3)
    return outcome


def settle_gpu_memory() -> int:
    """The GPU memory allocated before a cell (what earlier cells keep for the timing phase), its peak mark reset:
    what earlier cells left in reference cycles is collected first, not freed inside this cell's peak, and what
    survives is frozen (kept artifacts, built styles), so the next cell's collection walks only what is new."""
    gc.collect()
    gc.freeze()
    torch.cuda.reset_peak_memory_stats()
    return torch.cuda.memory_allocated()


def end_of_cell_fault() -> Exception | None:
    """Wait for the GPU at the cell's end, whether it raised or not: an asynchronous fault of its kernels (an
    illegal memory access found after the launch returned) surfaces here, while the cell is still the one
    running."""
    if not torch.cuda.is_initialized():
        return None
    try:
        torch.cuda.synchronize()
    except Exception as fault:
        return fault
    return None


def faulted(fault: Exception, outcome: Outcome | None, mismatch: str | None) -> Outcome:
    """The outcome of a cell whose GPU faulted at its end (a CUDA fault: its process is replaced), naming what
    the cell had said before it (its own error, or a mismatch)."""
    if outcome is not None and outcome.cuda_fault:  # the cell's own error was the fault already
        return outcome
    found = classify(fault, Stage.RUN)
    before = mismatch or (f"{outcome.error_type}: {outcome.error}" if outcome and outcome.error else None)
    if before:
        found.error = f"{found.error} (found at the cell's end, after: {before.splitlines()[0][:300]})"
    found.cuda_fault = True
    return found


def run_path(cell: Cell, spec: CellSpec, cache: dict[tuple[str, str], Wrapped]) -> None:
    """Build the style and run the cell's path on its examples, the kernels it launches observed."""
    if cell.device == "cuda" and not torch.cuda.is_available():
        raise CellSkip("no CUDA device")
    fault = interpreter_fault(dtype_name(cell.case.dtype)) if triton_interpreted() and spec.style != CONTROL else None
    if fault:
        raise CellSkip(fault)
    program = cell_program(cell, spec)
    if program is not None:
        cell.program = program
        run_program(cell, lambda cell: run_script(cell, spec, program, run_examples))
        return
    cell.measurements.program = digest(spec)
    cell.wrapped = build(cell.case, spec.style, cache)
    cell.measurements.wrapped_as = cell.wrapped.wrapped_as
    run_program(cell, lambda cell: run_examples(cell, PATHS[spec.path.id], spec.path.examples))


def digest(spec: CellSpec) -> str | None:
    """The digest of the program text the cell runs (its repro holds the same), or why it has none."""
    try:
        return program_digest(spec.module, spec.style, spec.path.id)
    except Exception as error:  # never the cell's failure: no source to read (a module built in memory), ...
        return f"none: {type(error).__name__}: {error}"[:200]


def judged(cell: Cell, mismatch: str | None) -> Outcome:
    """The outcome of a cell that ran to its end, or to an output unlike the reference: its verdict."""
    status, said = judge(cell, mismatch)
    if status == Status.WRONG:
        return Outcome(status=status, error_type=MISMATCH, error=said, stage=cell.stage)
    if status == Status.BLIND:
        return Outcome(status=status, error_type=SUBSYSTEM_MISMATCH, error=said, stage=Stage.COMPARE)
    return Outcome(status=status, reason=said)


def cache_tag(spec: CellSpec) -> str:
    """The compile caches' key tag of a cell: its own, naming the cell, the harness program it runs and its case
    module's source. The FX graph cache keys a user's Triton kernel by its source, constant arguments and configs,
    but Inductor writes more of its autotuner into the code it generates (``restore_value``, ``reset_to_zero``):
    under one tag, two cells whose kernels differ only there would load one compiled artifact, and which cell ran
    first would decide the verdict of the other. So no cell is served another cell's compiled graph (``compile``
    and ``fullgraph`` of one style compile the same graph each), while a cell's own later compiles (its drawn sizes,
    its re-runs, a later run of unchanged code with the cache kept) still hit."""
    sources = hashlib.sha256(f"{digest(spec)}\0{_source_digest(spec.module)}".encode()).hexdigest()[:16]
    return f"{FRESH_AUTOTUNE_TAG}:{spec.id}:{sources}"


@functools.cache
def _source_digest(module: str) -> str:
    """sha256 (16 hex) of the source file of the case module ``module``; "" for one without a file."""
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return ""
    origin = found.origin if found is not None else None
    if not origin or not Path(origin).is_file():
        return ""
    return hashlib.sha256(Path(origin).read_bytes()).hexdigest()[:16]


def fresh_autotune(tag: str = FRESH_AUTOTUNE_TAG) -> None:
    """Every cell autotunes as a fresh deployment does: no autotune result is stored for, or read from, another cell
    (Inductor's ``.best_config`` files beside a kernel in its cache, Triton's cached timings). With a stored result
    Inductor launches only the stored config and benchmarks nothing, so a kernel wrong whenever its configs are
    benchmarked (the in-place autotune-over-heuristics cells) was right once another cell had stored one: the
    verdict depended on cell order. Generated code bakes the setting in (``inductor_meta``) and the FX graph cache
    does not key on it, so the cache key ``tag`` (the cell's own: ``cache_tag``) keeps this code apart from code
    generated with stored results on. Inductor's in-memory caches are emptied too: a cell process that already
    loaded a compiled module (an earlier cell's identical graph) would hand back its kernels, autotuned already;
    loaded again from the disk cache, they autotune anew. So are the configs Triton's autotuners of the styles built
    here picked for earlier cells (harness/cell/autotuners.py), and the kernels Triton's interpreter rewrote for
    earlier cells: a compiled call that reaches a kernel's first launch traces its rewrite (which Dynamo does not
    trace: "Attempted to call function marked as skipped", as in a user's fresh process), one launched before traces
    on into the launch ("Unsupported method call": the error depended on the cells before it in the process). What
    the run's cells still share is Triton's kernel cache (a compiled kernel binary, keyed by its source, its
    constants and the compiler), so a cell's compile time depends on which cells ran before it (reported, not
    gated)."""
    import torch._inductor.config
    import torch._inductor.utils
    import torch.compiler.config

    torch._inductor.config.autotune_local_cache = False
    torch._inductor.config.autotune_remote_cache = False
    torch._inductor.config.bundled_autotune_remote_cache = False
    torch.compiler.config.cache_key_tag = tag
    store_autotuning(False)
    torch._inductor.utils.clear_inductor_caches()
    for tuners in AUTOTUNERS.values():
        for tuner in tuners:
            tuner.cache.clear()
    forget_interpreted_kernels()


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
        cell.measurements.flaky_example = True
        raise first from None
    finally:
        if cell.example is not None:
            cell.measurements.example = {"size": cell.example[0], "seed": cell.example[1]}


def classify(error: BaseException, stage: str) -> Outcome:
    """The outcome of a cell that raised (a mismatch of numbers aside: the verdict's): ``crash`` for a dead
    process, else ``error``."""
    said = str(error).strip() or repr(error)
    message = own_words(said)
    if isinstance(error, CellCrash):
        status = Status.CRASH
    else:
        status = Status.ERROR
        stage = _refine_stage(error, stage)
    return Outcome(
        status=status,
        error_type=type(error).__name__,
        error=message,
        stage=stage,
        traceback="".join(traceback.format_exception(error)[-6:]) if status == Status.ERROR else None,
        cuda_fault=any(marker in said for marker in CUDA_FAULT_MARKERS)
        or isinstance(error, torch.cuda.OutOfMemoryError),
    )


def _refine_stage(error: BaseException, stage: str) -> str:
    import torch._dynamo.exc as dynamo_exc

    if isinstance(error, dynamo_exc.BackendCompilerFailed):
        return "compile"
    if isinstance(error, dynamo_exc.TorchDynamoException | dynamo_exc.UserError):
        return "trace" if stage in ("trace", "compile") else stage
    return stage


def warm_compiler() -> None:
    """Compile and run one small pure-PyTorch function on the GPU, before a cell process's first cell: the
    process's one-time costs (CUDA's modules, Triton's backend, Inductor's compile workers) then fall in no cell's
    compile time, which would otherwise depend on whether the cell came first in its process (a cell measured
    again alone always does). No CUDA device, or Triton's interpreter: nothing to warm."""
    if not torch.cuda.is_available() or triton_interpreted():
        return
    try:
        compiled = torch.compile(lambda x: torch.relu(x * 2.0) + 1.0)
        compiled(torch.ones(1000, device="cuda"))
        torch.cuda.synchronize()
    except Exception:  # a broken compiler shows in the cells that use it, charged to them
        traceback.print_exc()
    torch._dynamo.reset()


def device_name() -> str:
    """The GPU's name, or "cpu" where there is no CUDA device."""
    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"


def cpu_seconds() -> float:
    """CPU seconds (user and system) this process, the children it waited for and the processes still running
    below it (``descendants_cpu``) have used: against a cell's seconds, what it spent waiting (GPU, locks, disk, a
    busy machine) rather than computing."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime + descendants_cpu()


def descendants_cpu() -> float:
    """CPU seconds of the processes running below this one, with those of the children they waited for:
    Inductor's compile workers, which live as long as the cell process, so that no rusage of it counts the kernels
    they compile for its cells (0 where the kernel lists no children: /proc/PID/task/TID/children)."""
    ticks, total, pending = os.sysconf("SC_CLK_TCK"), 0, [os.getpid()]
    while pending:
        pid = pending.pop()
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{pid}/task/{task}/children") as listed:
                    pending.extend(int(child) for child in listed.read().split())
            except OSError:
                continue
        if pid != os.getpid():
            try:
                with open(f"/proc/{pid}/stat") as stat:
                    fields = stat.read().rpartition(")")[2].split()
            except OSError:
                continue
            total += sum(int(value) for value in fields[11:15])  # utime, stime, cutime, cstime
    return total / ticks


def memory(device: str, held: int = 0) -> dict[str, float]:
    """The cell process's resident memory now and at its peak so far, and the cell's peak GPU memory (MiB) above
    the ``held`` bytes allocated before it: a series over a worker's cells shows growth from cell to cell."""
    with open("/proc/self/statm") as statm:
        rss_pages = int(statm.read().split()[1])
    rss = rss_pages * resource.getpagesize() / 2**20
    peak = max(rss, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)  # the kernel updates maxrss lazily
    usage = {"rss_mb": round(rss, 1), "peak_rss_mb": round(peak, 1)}
    if device == "cuda" and torch.cuda.is_available():
        usage["gpu_peak_mb"] = round((torch.cuda.max_memory_allocated() - held) / 2**20, 1)
    return usage
