"""The typed values that cross the process boundary: a cell's id, spec (made once, when the matrix loads) and
the outcome its cell process sends back, with the status and stage vocabularies. A record
(harness/records/record.py) is born from exactly these."""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass, field
from typing import NamedTuple

OMIT = {"omit": True}  # field metadata: a record's JSON leaves the field out while it holds its default
SIGNED = {"signed": True}  # field metadata: a number that may be negative (read from a file, others may not)


class Status(enum.StrEnum):
    """A cell's verdict (a plain string in JSON); a new one is one line here and one row of ``STATUS_TABLE``."""

    PASS = "pass"  # ran, and every output (and gradient) matched the reference
    # right numbers, but on a compile-type path the style's kernel ran outside the compiled graph (Dynamo broke
    # the graph around it): neither a pass nor a failure
    GRAPH_BREAK = "graph_break"
    WRONG = "wrong"  # ran without an error, but an output or a gradient differs: silent wrong numbers
    # right numbers, but a PyTorch subsystem did not see the kernel (FlopCounterMode counted 0): deterministic, so
    # never re-run
    BLIND = "blind"
    ERROR = "error"  # raised an exception
    CRASH = "crash"  # a process died
    TIMEOUT = "timeout"  # no result within the path's timeout
    SKIP = "skip"  # cannot run on this machine

    @property
    def rule(self) -> StatusRule:
        """What the harness does with a cell that got this status (its row of ``STATUS_TABLE``)."""
        return STATUS_TABLE[self]


class Rerun(enum.StrEnum):
    """When a cell is run again within its run (matrix.toml [run] reruns) for the status it ended with."""

    ALWAYS = "always"  # its attempts may differ whatever the baseline says
    UNEXPECTED = "unexpected"  # only when the baseline expected another status
    NEVER = "never"


@dataclass(frozen=True)
class StatusRule:
    """One status's row: its chart mark, how severe it is, and how the run, --reuse and the chart's goals treat
    it."""

    symbol: str  # its mark in the chart
    severity: int  # a flaky cell's attempts are listed most severe first; 0: none to list (a pass)
    failure: bool  # the cell failed (a graph break and a skip are neither a pass nor a failure)
    rerun: Rerun
    reusable: bool  # a deterministic verdict: --reuse keeps it while the cell's key is unchanged
    against_style: bool  # a goal's style is not even a near miss for it (a graph break is a near miss at worst)
    letter: str | None  # pytest's short letter for it; None: pytest's own (pass, skip)


# never reused: wrong, crash and timeout are re-measured every run; blind and graph_break are deterministic verdicts
STATUS_TABLE: dict[Status, StatusRule] = {
    # status: StatusRule(symbol, severity, failure, rerun, reusable, against_style, letter)
    Status.PASS: StatusRule("✅", 0, False, Rerun.UNEXPECTED, True, False, None),
    Status.GRAPH_BREAK: StatusRule("✂️", 2, False, Rerun.UNEXPECTED, True, False, "G"),
    Status.WRONG: StatusRule("❗WRONG", 7, True, Rerun.ALWAYS, False, True, "W"),
    Status.BLIND: StatusRule("🔇", 6, True, Rerun.UNEXPECTED, True, True, "B"),
    Status.ERROR: StatusRule("❌", 3, True, Rerun.UNEXPECTED, True, True, "E"),
    Status.CRASH: StatusRule("💥", 5, True, Rerun.UNEXPECTED, False, True, "C"),
    Status.TIMEOUT: StatusRule("⏱️", 4, True, Rerun.UNEXPECTED, False, True, "T"),
    Status.SKIP: StatusRule("➖", 1, False, Rerun.NEVER, True, True, None),
}


@dataclass(frozen=True)
class RunLocations:
    """What the cells of one run share, handed to each cell process in its request (never through environment
    variables, which the code under test would see): the run's standalone server (harness/cell/standalone.py;
    None: the cell starts its own) and the folder of AOTInductor packages aoti_strict and aoti_standalone share
    (None: nothing shared)."""

    standalone: str | None = None
    packages: str | None = None


class Stage(enum.StrEnum):
    """Where in a path a cell failed (``Cell.stage`` when the exception was raised)."""

    BUILD = "build"
    TRACE = "trace"
    COMPILE = "compile"
    RUN = "run"
    COMPARE = "compare"


# the error type of a cell that measured nothing because its cell process did not start, or could not import the
# case the run imported: the harness failed, not the cell
NOT_STARTED = "CellProcessFailed"
# the error type of a cell failed by its case's own code (make_inputs, or the reference) at inputs it drew, which the
# case's load check did not run: a bug of the case, not of the style (harness/cell/context.py)
CASE_BUG = "CaseBug"
# what a CaseBug's message says before the exception the case's code raised (``ValueError: ...``), its cause
CASE_BUG_CAUSE = " (its load check runs its first size on CPU only): "
INTERPRET_ENV = "TRITON_INTERPRET"  # "1": Triton runs kernels in its CPU interpreter (``run --interpret`` sets it)


def triton_interpreted() -> bool:
    """Whether Triton runs kernels in its interpreter here (read when a kernel is decorated: set it first); a
    cell process inherits it, and a run's environment records it (``triton_interpret``)."""
    return os.environ.get(INTERPRET_ENV) == "1"


AUTOTUNE_WARMUP_MS, AUTOTUNE_REP_MS = 2, 10  # the run's autotune benchmark on a device (Triton's default: 25, 100)


def autotune_benchmark() -> str:
    """How the run's cells benchmark the configs of every Triton autotuner that names no benchmark of its own
    (harness/cell/autotuners.py ``benchmark_with``): a run's environment records it (``autotune_benchmark``)."""
    if triton_interpreted():
        return "each config run once, the first kept (Triton's interpreter: no device to time on)"
    return (
        f"triton.testing.do_bench(warmup={AUTOTUNE_WARMUP_MS}, rep={AUTOTUNE_REP_MS}), set from outside the "
        "decorator (a user's process, and a repro script: Triton's default, warmup=25, rep=100)"
    )


STATUSES = tuple(Status)
FAILURES = tuple(status for status in Status if status.rule.failure)
# a flaky cell's failing attempts, most severe first (a pass is not listed)
SEVERITY = tuple(sorted((status for status in Status if status.rule.severity), key=lambda s: -s.rule.severity))


# what a CUDA fault's message holds (a kernel's bad access, an assert on the device): the cell's record says so, and a
# repro script that shows one reproduces a faulting cell
CUDA_FAULT_MARKERS = ("illegal memory access", "device-side assert", "unspecified launch failure", "CUDA error")
# the GPU's memory ran out: torch.OutOfMemoryError's words, and the driver's (an AcceleratorError's)
OUT_OF_GPU_MEMORY = ("CUDA out of memory", "CUDA error: out of memory")


def says_out_of_gpu_memory(text: str) -> bool:
    """Whether ``text`` (an error's message, a script's output, a cell's error) says the GPU's memory ran out."""
    return any(marker in text for marker in OUT_OF_GPU_MEMORY)

IN_A_SUBPROCESS = "SubprocException: An exception occurred in a subprocess:"  # Inductor's compile pool's wrapper


def own_words(message: str) -> str:
    """An error as its own raiser said it: Inductor's compile pool wraps a kernel's compile error in
    "SubprocException: An exception occurred in a subprocess: ... Traceback ..." where the same compile in-process
    says "RuntimeError: ..." (whether the pool had started decides which): the exception line of the wrapped
    traceback and what follows it."""
    if not message.startswith(IN_A_SUBPROCESS):
        return message
    lines = message.splitlines()
    starts = [index for index, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")]
    after = [index for index in range(starts[-1] + 1, len(lines)) if lines[index][:1].strip()] if starts else []
    return "\n".join(lines[after[0] :]).strip() if after else message


class CellId(NamedTuple):
    """A cell's id, ``case-style-path``: formatted and parsed here only. Case, style and path ids hold letters,
    digits and ``_`` (matrix.toml is checked for it), never ``-``."""

    case: str
    style: str
    path: str

    def __str__(self) -> str:
        return f"{self.case}-{self.style}-{self.path}"

    @classmethod
    def parse(cls, text: str) -> CellId:
        """``"add-triton_op-eager"`` -> ``CellId("add", "triton_op", "eager")``; ValueError for any other shape."""
        parts = text.split("-")
        if len(parts) != 3 or not all(parts):
            raise ValueError(f"not a cell id (case-style-path): {text!r}")
        return cls(*parts)


@dataclass(frozen=True)
class Tolerance:
    """How far an output may be from the reference (``torch.testing.assert_close``'s atol and rtol)."""

    atol: float
    rtol: float


@dataclass(frozen=True)
class PathSpec:
    """A path as matrix.toml declares it."""

    id: str
    device: str
    timeout: float
    examples: int = 1  # inputs per cell: the case's first size, then sizes hypothesis draws


@dataclass(frozen=True)
class CellSpec:
    """One cell of the matrix: which case (and the module defining it), which style, which path, and the
    tolerance its outputs are compared with."""

    case: str
    module: str
    style: str
    path: PathSpec
    tolerance: Tolerance
    attempt: int = 1  # a cell run again within the run (matrix.toml [run] reruns) is attempt 2, 3...
    timed: bool = True  # a pass on a timed path keeps its artifact for the timing phase (False: run --no-timing)

    @property
    def cell_id(self) -> CellId:
        return CellId(self.case, self.style, self.path.id)

    @property
    def id(self) -> str:
        return str(self.cell_id)


@dataclass(frozen=True)
class Capture:
    """What a cell's path saw of the kernel: what the compiled graphs held, what was launched, what a subsystem
    counted. The facts a verdict reads (harness/cell/verdict.py), filled by the cell as its path runs."""

    compiled: bool = field(default=False, metadata=OMIT)  # the path compiled the model through Inductor
    trained: bool = field(default=False, metadata=OMIT)  # ... and ran its backward
    graphs: int = field(default=0, metadata=OMIT)  # graphs Dynamo handed Inductor
    backward_graphs: int = field(default=0, metadata=OMIT)  # AOTAutograd's backward graphs
    # the user-kernel wrappers and harness library ops the forward (backward) graphs held
    captured: tuple[str, ...] = field(default=(), metadata=OMIT)
    captured_backward: tuple[str, ...] = field(default=(), metadata=OMIT)
    kernels_captured: tuple[str, ...] = field(default=(), metadata=OMIT)  # Triton kernels in a graph, by name
    kernels_launched: tuple[str, ...] = field(default=(), metadata=OMIT)  # Triton kernels the cell launched
    graph_breaks: int = field(default=0, metadata=OMIT)
    graph_break_reasons: tuple[str, ...] = field(default=(), metadata=OMIT)  # the most frequent first
    recompiles: int | None = field(default=None, metadata=OMIT)
    cudagraph_skips: int | None = field(default=None, metadata=OMIT)
    flops: int | None = field(default=None, metadata=OMIT)  # FlopCounterMode's count for the op
    declared_flops: int | None = field(default=None, metadata=OMIT)  # the case's formula, on the same call


@dataclass
class Measurements:
    """What a cell's record says beside its verdict facts and no verdict reads: how the op is wrapped, the example
    drawn, timings, memory, and which process and worker ran it (a run's timeline, its memory series)."""

    wrapped_as: str | None = field(default=None, metadata=OMIT)  # the op as shipped: how its library wraps it
    example: dict[str, int] | None = field(default=None, metadata=OMIT)  # {"size", "seed"} of a drawn failure
    flaky_example: bool = field(default=False, metadata=OMIT)
    as_close_as_reference: dict[str, str] | None = field(default=None, metadata=OMIT)  # gradient -> why it is
    package_built_by: str | None = field(default=None, metadata=OMIT)  # the cell whose AOTInductor package it ran
    calls: int | None = field(default=None, metadata=OMIT)  # outputs compared (by a script: each check it made)
    export_seconds: float | None = field(default=None, metadata=OMIT)
    compile_seconds: float | None = field(default=None, metadata=OMIT)
    run_seconds: float | None = field(default=None, metadata=OMIT)
    cpu_seconds: float | None = field(default=None, metadata=OMIT)
    rss_mb: float | None = field(default=None, metadata=OMIT)
    peak_rss_mb: float | None = field(default=None, metadata=OMIT)
    gpu_peak_mb: float | None = field(default=None, metadata=OMIT)
    gpu_held_mb: float | None = field(default=None, metadata=OMIT)  # its process's allocator reserve after it
    pid: int | None = field(default=None, metadata=OMIT)
    nth: int | None = field(default=None, metadata=OMIT)  # the how-many-th cell of its process
    gpu: str | None = field(default=None, metadata=OMIT)  # CUDA_VISIBLE_DEVICES of its process
    started: float | None = field(default=None, metadata=OMIT)  # seconds since the epoch
    ended: float | None = field(default=None, metadata=OMIT)  # the last attempt's end
    worker: str | None = field(default=None, metadata=OMIT)  # the pytest process: its lane on the timeline
    process_start: float | None = field(default=None, metadata=OMIT)  # seconds a fresh cell process took
    replaced_above_rss_mb: float | None = field(default=None, metadata=OMIT)
    program: str | None = field(default=None, metadata=OMIT)  # sha256 of the program text run (its repro holds it)
    # seconds the cell spent in each of its stages (setup, build, trace, compile, run, compare, end): the cost model
    stage_seconds: dict[str, float] | None = field(default=None, metadata=OMIT)


# the paths whose artifact a user calls again and again: the ones timed
TIMED_PATHS = frozenset(
    {
        "eager",
        "compile",
        "fullgraph",
        "dynamic",
        "cudagraphs",
        "export_strict",
        "export_nonstrict",
        "export_saveload",
        "export_dynamic_strict",
        "export_dynamic_nonstrict",
        "aoti_strict",
        "aoti_nonstrict",
        "aoti_dynamic",
        "aoti_standalone",
        "train_eager",
        "train_compile",
    }
)
# of those, the paths timed at the case's bandwidth size too: their artifact takes inputs of another size (eager,
# re-traced or dynamic); fullgraph and cudagraphs would too, but each bandwidth-size compile and CUDA graph costs
# the run (four cases x 14 styles x 7 paths took the timing phase of a full run past 150 s on an H100); the dynamic
# export paths do within the case's size_bounds
CUDAGRAPH_CALLS = 3  # the cudagraphs path's calls, each on fresh inputs
VMAP_BATCH = 3  # the input sets the vmap path batches
RESIZED_PATHS = frozenset({"eager", "compile", "dynamic", "train_eager", "train_compile"})
BOUNDED_PATHS = frozenset({"export_dynamic_strict", "export_dynamic_nonstrict", "aoti_dynamic"})
# of those, the paths whose cell keeps its artifact for the timing phase (aoti_standalone's process ends with it)
KEPT_PATHS = TIMED_PATHS - {"aoti_standalone"}
# the paths whose cells of one case and style load one AOTInductor package where they export the same program (the
# first cell to compile it builds it, harness/cell/paths/export.py ``shared_package``)
PACKAGE_PATHS = frozenset({"aoti_strict", "aoti_nonstrict", "aoti_standalone"})


class TimingState(enum.StrEnum):
    """Where a cell's timing stands."""

    TIMED = "timed"  # measured in the run's timing phase
    PENDING = "pending"  # passed on a timed path: its cell process keeps the artifact for the timing phase
    NOT_TIMED = "not_timed"  # ``reason`` says why


class TimingMethod(enum.StrEnum):
    """How a timing's device time was measured (harness/cell/timing.py)."""

    KERNELS = "kernels"  # the sum of the durations of the GPU activities each call ran, from the profiler (CUPTI)
    EVENTS = "events"  # CUDA events around each call, the GPU kept busy before it (a record without a method)


@dataclass(frozen=True)
class Timing:
    """How fast a cell's artifact ran (the callable and inputs its check called), timed once no cell ran on the
    GPU: device microseconds per call (median and IQR of the ``samples`` kept, ``outliers`` left out), the
    dispersion (IQR / median), the host microseconds per call (median, timed apart from the device's), the bytes
    the case declares the call moves, how long the GPU was kept busy before each device sample (``cover_us``:
    harness/cell/timing.py) and what the timing cost; or the ``reason`` it was not timed. A cell's timing is at its
    own size (the case's first: the launch-bound regime) and holds in ``bandwidth`` its timing at the case's
    ``bandwidth_size`` (the bandwidth-bound regime: timed, or why not; None where the case declares none), which
    gives its ``size``. ``method``: how the device time was measured: at the cell's own size, the durations of the
    GPU activities (kernels, copies, memsets) each call ran, from the profiler (``kernels``, how many each call ran,
    median; ``kernel_names``, those of one call, shortened), or CUDA events around each call where the profiler
    could not be used (``fallback`` says why); at the bandwidth size, CUDA events. ``call_mb``: the GPU memory one
    warm call allocates at its peak above what was allocated before it (MiB): what the gate compares, where the
    cell's own peak (``Measurements.gpu_peak_mb``) counts the benchmarking buffers only the cell that autotuned a
    kernel first allocated. ``picked``: the config each of its style's Triton autotuners had picked, per key, when
    the cell ended (``kernel (key): config``): the ones timed. ``warm_s``: the seconds its artifact's warm-up
    calls took after the worker's last cell (both sizes; an out-of-memory try beside the others included)."""

    state: TimingState
    reason: str | None = field(default=None, metadata=OMIT)
    median_us: float | None = field(default=None, metadata=OMIT)
    iqr_us: float | None = field(default=None, metadata=OMIT)
    dispersion: float | None = field(default=None, metadata=OMIT)
    samples: int = field(default=0, metadata=OMIT)
    outliers: int = field(default=0, metadata=OMIT)
    host_us: float | None = field(default=None, metadata=OMIT)
    bytes_moved: int | None = field(default=None, metadata=OMIT)
    size: int | None = field(default=None, metadata=OMIT)  # the size ``make_inputs`` was given (bandwidth only)
    cover_us: float | None = field(default=None, metadata=OMIT)  # the GPU kept busy this long before each sample
    cost_s: float | None = field(default=None, metadata=OMIT)  # seconds the timing took, warm-up included
    method: TimingMethod = field(default=TimingMethod.EVENTS, metadata=OMIT)
    kernels: int | None = field(default=None, metadata=OMIT)  # GPU activities per call (median; method kernels)
    kernel_names: tuple[str, ...] = field(default=(), metadata=OMIT)  # those of one call, in launch order
    fallback: str | None = field(default=None, metadata=OMIT)  # why the profiler was not used (method events)
    call_mb: float | None = field(default=None, metadata=OMIT)  # one warm call's peak GPU memory above before it
    picked: tuple[str, ...] = field(default=(), metadata=OMIT)  # the configs its Triton autotuners had picked
    warm_s: float | None = field(default=None, metadata=OMIT)  # its artifact's warm-up calls, before the timing
    bandwidth: Timing | None = field(default=None, metadata=OMIT)

    @classmethod
    def not_timed(cls, reason: str) -> Timing:
        return cls(TimingState.NOT_TIMED, reason=reason)

    @property
    def timed(self) -> bool:
        return self.state is TimingState.TIMED and self.median_us is not None

    def invalid(self) -> tuple[str, str] | None:
        """What a timing read from a file cannot be (its field, why), beyond each field's type: timed with no
        median, a median of 0 µs but from the profiler for a call that ran no GPU work, a host time of 0 µs."""
        if self.state is TimingState.TIMED and self.median_us is None:
            return "median_us", "missing: a timing in state timed has its median"
        if self.median_us == 0 and not (self.method is TimingMethod.KERNELS and self.kernels == 0):
            why = "0 is the profiler's only, for a call that ran no GPU work: method kernels, kernels 0"
            return "median_us", f"expected a time above 0 µs, got 0 ({why})"
        if self.host_us == 0:
            return "host_us", "expected a time above 0 µs, got 0 (no call takes no host time)"
        return None

    @property
    def text(self) -> str:
        """``12.3 µs ±1.2%`` or ``not timed (why)``."""
        if not self.timed:
            return f"not timed ({self.reason or self.state})"
        shown = f"{self.median_us:.1f}" if self.median_us < 100 else f"{self.median_us:.0f}"
        return f"{shown} µs ±{100 * (self.dispersion or 0.0):.1f}%"


@dataclass
class Outcome:
    """What running a cell gave: its status, the failure if any, what the path saw (``capture``) and measured,
    how long it took. ``outcomes`` holds the status of every attempt when the cell was run more than once (the
    first is ``status``)."""

    status: str = Status.PASS
    error_type: str | None = None
    error: str | None = None
    stage: str | None = None
    reason: str | None = None
    traceback: str | None = None
    cuda_fault: bool = False
    capture: Capture = field(default_factory=Capture)
    measurements: Measurements = field(default_factory=Measurements)
    seconds: float = 0.0
    outcomes: list[str] | None = None
    timing: Timing | None = None  # how fast its artifact ran (a pass on a timed path), or why it was not timed
    poisoned: bool = False  # the GPU faulted after the verdict (timing's check): the process is replaced, no record

    @property
    def failed(self) -> bool:
        return self.status in FAILURES
