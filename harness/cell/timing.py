"""Timing, in the cell process, the artifacts its passing cells built and checked. A cell that passes on a timed path
keeps its artifact (the callable and inputs its check called: the model, the compiled module, the exported module,
the loaded AOTInductor package, a training step) in this process (``KEPT``); once no cell of any worker runs, and
holding the GPU alone (harness/plugin/timing.py), the worker asks this process to time them all, in two turns.
In the first (``host_kept``) each is called ``WARMUP`` times, then up to ``HOST_SAMPLES`` times with a host clock
around each call and the GPU waited for after it (host time: launching the call), before any profiler session in
the process. Between the turns every process starts the profiler at once (``prime_profiler``). In the second
(``time_kept``), its device time, what the GPU spends on the call, never the host's launch gaps (which the host time
measures), by one of two methods:

- at the cell's own size (the case's first: launch-bound), the GPU's own durations: one call, then up to ``SAMPLES``
  calls of each artifact, the process's artifacts one after the other in one profiler session (``torch.profiler``,
  CUPTI: a session of its own costs several times the calls of a small kernel), each call between two marker kernels
  (``torch.cuda._sleep``), the L2 cache not flushed (a call this small reads inputs that fit in L2, as a model's small
  op reads what the op before it wrote), and per call the sum of the durations of the GPU activities between its
  markers (kernels, copies, memsets; ``split_artifacts``). A call this small takes a few µs on the GPU, and CUDA
  events around it add a floor of their own of about that much (the add case's 3,001 floats: 3.5 µs by events, 0.87 µs
  by its kernel's duration), so events would time mostly themselves. Where the profiler cannot be used (it raises, its
  markers are missing or more than the calls', or an activity lies outside every call's markers), the events method
  below, and the timing's ``fallback`` says why;
- at the case's ``bandwidth_size`` (bandwidth-bound), CUDA events around each call, the GPU kept busy first (a
  sleep kernel, then the L2 cache flush) for longer than the call takes to launch, so that its kernels run back to
  back: there a call takes tens of µs or more, and the events' floor is within its noise.

Where the case declares a ``bandwidth_size`` and the artifact takes it (``AtSize``, harness/cell/bandwidth.py), the
cell's end also checks its output there against the reference (``keep``), and the timing at that size goes into
the timing's ``bandwidth``: never for an artifact whose numbers differ."""

from __future__ import annotations

import dataclasses
import re
import statistics
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import torch
import torch.compiler.config
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

from harness.case import Case, Inputs, copy_inputs
from harness.kernel.compare import Mismatch
from harness.kernel.interpreter import triton_interpreted
from harness.spec import CUDA_FAULT_MARKERS, Timing, TimingMethod, TimingState, own_words, says_out_of_gpu_memory
from harness.timing import quartiles, summarize

WARMUP = 5  # calls before the samples (the dashboard: 5 warm-ups, the median of 30)
SAMPLES = 30
HOST_SAMPLES = 10  # host samples: their median, and the cover the device samples get
MIN_SAMPLES = 5
SAMPLING_BUDGET_S = 0.25  # seconds each kind of a cell's samples may take: a slow artifact gets fewer (>= MIN_SAMPLES)
COVER_FACTOR, COVER_MARGIN_S = 2.0, 50e-6  # the GPU kept busy for twice the call's upper-quartile host time, + 50 µs
MAX_COVER_S = 0.02  # ... at most: past it, a call's device time may hold its launch gaps (its host time says so)
L2_FLUSH_BYTES = 256 * 2**20  # written before each sample, as triton.testing.do_bench does
COPY_BYTES = 256 * 2**20  # the copy that measures the GPU's bandwidth
COPIES = 10
RECOMPILE_LIMITS = ("recompile_limit", "accumulated_recompile_limit")  # per code object, and in all
MARKER_CYCLES = 1000  # the marker kernel's spin (``torch.cuda._sleep``) before and after each profiled call
MARKER = "spin_kernel"  # ... its name holds this: ``at::cuda::(anonymous namespace)::spin_kernel(long)``
MAX_NAMES, MAX_NAME_CHARS = 6, 80  # a timing's ``kernel_names``: at most this many, each at most this long
NOT_AT = "not timed at the bandwidth size"
FAULTED = "the GPU faulted at the bandwidth size, after the cell's verdict"


class DeviceTimer(Protocol):
    """How one call is timed: ``CudaTimer`` on a GPU; a test's fake on CPU."""

    def device_seconds(self, call: Callable[[], object], cover: float) -> float: ...  # see CudaTimer

    # each artifact's calls profiled, all in one session: per artifact, per call, each GPU activity it ran (its
    # name, seconds) in launch order, or why its calls cannot be told apart, and the seconds its calls took; raises
    # where the profiler cannot be used, or the session's calls cannot be told apart artifact by artifact
    def kernel_samples(self, artifacts: Sequence[Profiled]) -> list[Profile]: ...

    def host_seconds(self, call: Callable[[], object]) -> float: ...  # one call's host side, not waiting

    def synchronize(self) -> None: ...

    def copy_gbps(self) -> float | None: ...  # the device's copy bandwidth (read + write), GB/s

    def call_bytes(self, call: Callable[[], object]) -> int: ...  # one call's peak of allocated device memory


def _ready() -> None:
    """Nothing to do before an artifact's calls."""


class Profiled(NamedTuple):
    """One artifact's share of a profiler session: ``ready`` first (its autotuners' picks given back), then one call
    not counted (the GPU's caches hold its inputs again, after other artifacts' calls) and ``count`` calls."""

    call: Callable[[], object]
    count: int
    ready: Callable[[], None] = _ready


Calls = list[list[tuple[str, float]]]  # per call, each GPU activity it ran: (name, seconds)


class Profile(NamedTuple):
    """What a profiler session saw of one artifact: per call, its activities (or why they cannot be told apart)."""

    calls: Calls | Unsplittable
    seconds: float  # its calls' wall time, the GPU waited for after them


class CudaTimer:
    """The GPU's activities per call from the profiler, or CUDA events around each call, the L2 cache flushed before
    it; a host clock for the host side."""

    def __init__(self) -> None:
        self.flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.int8, device="cuda")
        self.cycles_per_s = self.sleep_rate()
        self.flush_s = 0.0  # the flush's own time, which covers the launch as the spin does
        self.flush_s = min(self.device_seconds(self.flush.zero_, 0.0) for _ in range(3))

    @staticmethod
    def sleep_rate() -> float:
        """How many of ``torch.cuda._sleep``'s cycles the GPU spins per second (measured: its clock varies)."""
        cycles = 2_000_000
        torch.cuda._sleep(cycles)  # the first launch loads the kernel
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(cycles)
        end.record()
        end.synchronize()
        return cycles / (start.elapsed_time(end) / 1e3)

    def device_seconds(self, call: Callable[[], object], cover: float) -> float:
        """One call's device time: the GPU busy for ``cover`` seconds first (while the host launches the call's
        kernels behind it), spinning, then flushing the L2 cache; CUDA events around the call."""
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        spin = cover - self.flush_s
        if spin > 0:
            torch.cuda._sleep(int(spin * self.cycles_per_s))
        self.flush.zero_()
        start.record()
        call()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3

    def kernel_samples(self, artifacts: Sequence[Profiled]) -> list[Profile]:
        """Each artifact's calls in one profiler session (a session costs several times the calls of a small
        kernel), the GPU waited for before each artifact's: after ``ready``, one call and then ``count`` calls, each
        between two marker kernels (the L2 cache not flushed); per artifact, per counted call, the GPU activities
        between its markers (``split_artifacts``)."""
        torch.cuda.synchronize()
        seconds = []
        with profile(activities=[ProfilerActivity.CUDA]) as session:
            for artifact in artifacts:
                began = time.perf_counter()
                artifact.ready()
                for _ in range(artifact.count + 1):
                    torch.cuda._sleep(MARKER_CYCLES)
                    artifact.call()
                    torch.cuda._sleep(MARKER_CYCLES)
                torch.cuda.synchronize()
                seconds.append(time.perf_counter() - began)
        activities = gpu_activities(session.profiler.kineto_results.events())
        split = split_artifacts(activities, [artifact.count + 1 for artifact in artifacts])
        return [Profile(calls if isinstance(calls, Unsplittable) else calls[1:], took)
                for calls, took in zip(split, seconds, strict=True)]  # fmt: skip

    def host_seconds(self, call: Callable[[], object]) -> float:
        start = time.perf_counter()
        call()
        return time.perf_counter() - start

    def synchronize(self) -> None:
        torch.cuda.synchronize()

    def call_bytes(self, call: Callable[[], object]) -> int:
        """The device memory one call allocates at its peak above what was allocated before it (its output and
        workspace: the caching allocator's bytes allocated, not those it reserved). Before it is the peak just
        reset, read from the same counter: a collection that frees tensors between two readings (a reference
        cycle that held an earlier timing's inputs) cannot make it negative."""
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.max_memory_allocated()
        call()
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - before

    def copy_gbps(self) -> float | None:
        source = torch.empty(COPY_BYTES, dtype=torch.int8, device="cuda")
        target = torch.empty_like(source)
        target.copy_(source)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(COPIES):
            target.copy_(source)
        end.record()
        end.synchronize()
        return round(2 * COPY_BYTES * COPIES / (start.elapsed_time(end) / 1e3) / 1e9, 1)


class Activity(NamedTuple):
    """One activity the profiler saw on the GPU: its name, when it started and how long it ran (ns)."""

    name: str
    start_ns: int
    duration_ns: int


class Unsplittable(ValueError):
    """The profiled activities cannot be told apart call by call."""


def gpu_activities(events: Iterable[Any]) -> list[Activity]:
    """The activities on the GPU among the profiler's events (kernels, copies, memsets), not its annotations of
    them (a ``record_function`` range the profiler draws over the kernels it holds, which would count them twice)."""
    return [
        Activity(event.name(), event.start_ns(), event.duration_ns())
        for event in events
        if event.device_type() == DeviceType.CUDA and not _annotation(event)
    ]


def _annotation(event: Any) -> bool:
    annotation = getattr(event, "is_user_annotation", None)
    kind = getattr(event, "activity_type", None)
    return bool(annotation and annotation()) or bool(kind and "annotation" in str(kind()))


def split_calls(activities: Sequence[Activity], count: int) -> list[list[tuple[str, float]]]:
    """Per call, the activities between its two markers (``MARKER``; by start: marker 2k, call k, marker 2k + 1),
    as (name, seconds); what runs between pairs (nothing, in ``CudaTimer``'s session) belongs to no call. Raises
    ``Unsplittable`` unless there are exactly two markers per call, the same number of activities before each call's
    first marker and none after the last marker: else some activity of a call lies outside its markers (another
    stream), or a call runs a marker of its own."""
    ordered = sorted(activities, key=lambda activity: activity.start_ns)
    marks = [index for index, activity in enumerate(ordered) if MARKER in activity.name]
    if len(marks) != 2 * count:
        raise Unsplittable(f"{len(marks)} marker kernels for {count} calls, not {2 * count}")
    gaps = [marks[0]] + [marks[2 * k + 2] - marks[2 * k + 1] - 1 for k in range(count - 1)]
    if len(set(gaps)) > 1 or marks[-1] != len(ordered) - 1:
        after = len(ordered) - 1 - marks[-1]
        raise Unsplittable(f"activities outside the calls' markers: {sorted(set(gaps))} before a call, {after} after")
    return [
        [(activity.name, activity.duration_ns / 1e9) for activity in ordered[marks[2 * k] + 1 : marks[2 * k + 1]]]
        for k in range(count)
    ]


def split_artifacts(activities: Sequence[Activity], counts: Sequence[int]) -> list[Calls | Unsplittable]:
    """Per artifact of a session whose artifacts made ``counts`` calls each, in turn: its calls (``split_calls`` on
    its activities: from its first marker, the first artifact's from the session's start, up to the next artifact's
    first marker, the last's up to the end, as in a session of its own), or why they cannot be told apart. Raises
    ``Unsplittable`` unless there are exactly two markers per call in all (then no artifact's calls can be found)."""
    ordered = sorted(activities, key=lambda activity: activity.start_ns)
    marks = [index for index, activity in enumerate(ordered) if MARKER in activity.name]
    if len(marks) != 2 * sum(counts):
        raise Unsplittable(f"{len(marks)} marker kernels for {sum(counts)} calls, not {2 * sum(counts)}")
    firsts = [marks[2 * sum(counts[:nth])] for nth in range(1, len(counts))]
    out: list[Calls | Unsplittable] = []
    for begin, end, count in zip([0, *firsts], [*firsts, len(ordered)], counts, strict=True):
        try:
            out.append(split_calls(ordered[begin:end], count))
        except Unsplittable as why:
            out.append(why)
    return out


def short_name(name: str) -> str:
    """A GPU activity's name as a person reads it: a kernel's demangled C++ name without ``void``, anonymous
    namespaces, template arguments and argument list (``void at::native::(anonymous namespace)::f<...>(...)``:
    ``at::native::f``), at most ``MAX_NAME_CHARS``; a copy's or memset's (``Memcpy HtoD (Pageable -> Device)``) as
    it is."""
    short = name.removeprefix("void ").replace("(anonymous namespace)::", "")
    for opening, closing in ("<>", "()"):
        short = _without_groups(short, opening, closing)
    short = re.sub(r"\s+", " ", short).strip() or name
    return short if len(short) <= MAX_NAME_CHARS else short[: MAX_NAME_CHARS - 1] + "…"


def _without_groups(text: str, opening: str, closing: str) -> str:
    """``text`` without its bracketed groups that follow a name directly (``f<a<b>>``, ``f(x)``; not ``a (b)``)."""
    out, depth = [], 0
    for index, char in enumerate(text):
        if char == opening and (depth or (index and not text[index - 1].isspace())):
            depth += 1
        elif char == closing and depth:
            depth -= 1
        elif not depth:
            out.append(char)
    return "".join(out)


def kernel_names(call: list[tuple[str, float]]) -> tuple[str, ...]:
    """The distinct names of one call's activities, shortened, in launch order: at most ``MAX_NAMES`` (past it, the
    first ``MAX_NAMES - 1`` and how many more)."""
    names = list(dict.fromkeys(short_name(name) for name, _ in call))
    if len(names) > MAX_NAMES:
        names = [*names[: MAX_NAMES - 1], f"+{len(names) - MAX_NAMES + 1} more"]
    return tuple(names)


def untimed(device: str) -> str | None:
    """Why cells on ``device`` cannot be timed here (None: they can)."""
    if triton_interpreted():
        return "under Triton's interpreter: kernels run on the CPU"
    if device != "cuda" or not torch.cuda.is_available():
        return "on CPU: timing needs a CUDA GPU"
    return None


def timer_for(device: str) -> DeviceTimer | str:
    """The timer for cells on ``device``, or why they cannot be timed here."""
    return untimed(device) or CudaTimer()


@dataclass
class AtSize:
    """A kept artifact at the case's bandwidth size: what makes its inputs there (``made_at`` holds one set per
    ``key`` from the warm-up to the end of the timing), the check of its output there against the reference
    (raises ``Mismatch`` where it differs), its timed call on those inputs, the bytes that call moves; ``failed``:
    why the check failed (then it is not timed there)."""

    size: int
    inputs: Callable[[], Inputs]
    check: Callable[[Inputs], None]
    call: Callable[[Inputs], Callable[[], object]]
    bytes_moved: Callable[[Inputs], int | None]
    failed: str | None = None
    key: tuple[str, int, bool] = ("", 0, False)  # (case, size, training step): artifacts with one key share inputs


Configs = list[tuple[Any, dict[Any, Any]]]  # each of a style's Triton autotuners, with the config it picked per key


@dataclass
class Kept:
    """A passing cell's artifact, kept for the timing phase: ``call`` runs it once on its inputs; ``bandwidth``: the
    artifact at the case's bandwidth size, or why it is not timed there (None: the case declares no such size);
    ``configs``: its style's autotuners, each with the configs it had picked when the cell ran at its own size;
    ``configs_at_size``: those it picked when called at the bandwidth size (``keep``)."""

    call: Callable[[], object]
    bytes_moved: int | None = None
    failed: str | None = None  # why a warm-up call failed
    bandwidth: AtSize | str | None = None
    configs: Configs = dataclasses.field(default_factory=list)
    cache_tag: str = ""  # the compile caches' key tag its cell compiled under
    configs_at_size: Configs = dataclasses.field(default_factory=list)
    warm_s: float = 0.0  # its warm-up calls' seconds (``warm_one``)

    def restore(self, at_size: bool = False) -> None:
        """Give its style's Triton autotuners back the configs they had picked at its cell's own size (at the
        bandwidth size, ``at_size``; later cells autotune afresh): the phase times the configs the cell checked, and
        benchmarks none again. The cache key tag its cell compiled under is set again too: Dynamo's re-trace of a
        kept compiled artifact then finds its graph in the FX graph cache instead of compiling it anew."""
        torch.compiler.config.cache_key_tag = self.cache_tag
        for tuner, picked in self.configs_at_size if at_size else self.configs:
            tuner.cache.clear()
            tuner.cache.update(picked)


KEPT: dict[str, Kept] = {}  # cell id -> its artifact, in this cell process
# AtSize.key -> the inputs at the bandwidth size, made by the first check there (``check_at``) of a kept artifact of
# that case and size in this process, and shared by the later checks, the warm-up and the timing: making them
# (hundreds of MiB drawn on the CPU) took longer than timing the artifacts, and a second a training cell's check.
# Every use copies them (a training step as leaves of its own). Held until ``time_kept`` ends: up to one set per
# case in this process (the built-in cases' inputs there are 62-203 MiB a set; one set per kind of call held 44 GB
# in all of one H100 run's cell processes at 9500aa3, 16 GB of it twice), counted in the memory a cell finds held
MADE: dict[tuple[str, int], Inputs] = {}
SIDES: dict[str, HostSide | Timing] = {}  # cell id -> its host side, from the timing's first turn (``host_kept``)
COLD: list[str] = []  # the cells whose warm-up ran out of GPU memory beside the other processes (``warm_kept``)


def made_at(at: AtSize) -> Inputs:
    """The inputs at the bandwidth size for ``at``, made once for its key and shared by the artifacts of that key:
    each call works on copies of its own (``inference_call``; a training step on leaves copied from them,
    harness/cell/bandwidth.py), so an artifact that writes its inputs in place leaves them as made for the next."""
    if at.key not in MADE:
        MADE[at.key] = at.inputs()
    return MADE[at.key]


def inference_call(model: Callable[..., Any], inputs: Inputs) -> Callable[[], object]:
    """One call of ``model`` without grad on a copy of ``inputs`` (which the path copies before each call of its
    own: they stay as made), the copy made at the first call, not while the cell runs, and then reused (no copy
    inside a timed call)."""
    own: list[Inputs] = []

    def call() -> object:
        own[:] = own or [copy_inputs(inputs)]
        with torch.no_grad():
            return model(*own[0])

    return call


def bytes_moved(case: Case, inputs: Inputs) -> int | None:
    """The bytes the case declares one call on ``inputs`` moves (None without a declaration, or where it cannot
    say: a case's helper failing here must not fail its cell)."""
    if case.bytes_moved is None:
        return None
    try:
        return int(case.bytes_moved(*inputs))
    except Exception:
        return None


def keep(
    cell_id: str,
    path: str,
    device: str,
    call: Callable[[], object] | None,
    bytes_moved: int | None,
    bandwidth: AtSize | str | None = None,
    autotuners: Sequence[Any] = (),
) -> Timing:
    """A passing cell's timing so far: ``call`` kept for the timing phase (pending), with the artifact at the
    bandwidth size (or why not) and the configs ``autotuners`` picked, or why it will not be timed. The artifact is
    checked at the bandwidth size here, at the cell's end (``check_at``: compiling that shape too), while other
    workers still run cells, not in the warm-up after the last cell, which the timing phase waits for. Its
    autotuners pick afresh there, as in a model that calls the op at that size: where a kernel's autotuning key
    does not hold the size (rmsnorm's: its columns), the configs tie at the cell's small size and differ at the
    bandwidth size, so the config picked at the first would be a draw timed at the second."""
    timer = timer_for(device)
    if isinstance(timer, str):
        return Timing.not_timed(timer)
    if call is None:
        return Timing.not_timed(f"{path} keeps no artifact in the cell process")
    configs = at_size = [(tuner, dict(tuner.cache)) for tuner in autotuners]
    if isinstance(bandwidth, AtSize):
        for tuner in autotuners:
            tuner.cache.clear()
        check_at(bandwidth)
        if bandwidth.failed and any(marker in bandwidth.failed for marker in CUDA_FAULT_MARKERS):
            KEPT.clear()  # a faulted CUDA context: nothing kept here can be timed (the process is replaced)
            return Timing.not_timed(f"{FAULTED}: {bandwidth.failed}")
        at_size = [(tuner, dict(tuner.cache)) for tuner in autotuners]
    tag = torch.compiler.config.cache_key_tag
    KEPT[cell_id] = Kept(
        call, bytes_moved, bandwidth=bandwidth, configs=configs, cache_tag=tag, configs_at_size=at_size
    )
    return Timing(TimingState.PENDING)


def faulted_at_size(timing: Timing | None) -> bool:
    """Whether ``keep``'s check at the bandwidth size faulted the GPU (the cell process must then be replaced)."""
    return timing is not None and (timing.reason or "").startswith(FAULTED)


@contextmanager
def static_shapes() -> Iterator[None]:
    """While an artifact runs at the bandwidth size: a ``torch.compile`` model compiles that shape as one of its
    own (by default Dynamo would compile a dynamic-shape graph at a second size, which the launch-bound size then
    runs too), so that each regime times the code compiled for it."""
    with torch._dynamo.config.patch(automatic_dynamic_shapes=False):
        yield


def check_at(at: AtSize) -> None:
    """Call the artifact once at the bandwidth size and compare its output with the reference's: where it differs
    or fails, ``at.failed`` says so (it is not timed there: no wrong numbers timed)."""
    try:
        with static_shapes():
            at.check(made_at(at))
    except Mismatch as error:
        first = (str(error).strip().splitlines() or [""])[0][:200]
        at.failed = f"{NOT_AT} {at.size}: its output there differs from the reference ({first})"
    except Exception as error:  # the artifact of a passing cell: recorded, not raised
        at.failed = f"{NOT_AT} {at.size}: its call there failed: {in_own_words(error)}"


def warm_kept() -> None:
    """Call each kept artifact once, beside the other workers' last cells (not timed): Dynamo's caches, which
    each cell's reset emptied, are filled again from Inductor's caches (the same compiled code), CUDA graphs
    recorded again; an artifact that fails here is not timed, and says why. Dynamo's recompile limits are lifted
    first: the compiled modules of a case's own ``module`` class (or a shipped one) share its ``forward``, and past
    8 entries Dynamo would run the rest eagerly, unseen (a hit moves its entry to the front, so a timed call checks
    only its own guards). An artifact checked at the bandwidth size (``keep``) is called there first, then at its
    own size, each shape compiled as its own (``static_shapes``): Inductor's autotuners, loaded afresh, pick at
    their first call, so a graph compiled with dynamic shapes, which serves both sizes, is tuned at the bandwidth
    size, as in a model calling it there (at the cell's small size its configs may tie: a draw). An artifact whose
    warm-up ran out of GPU memory beside the other processes (an 80 GB H100 at 9500aa3: 101 of 1,431 timed cells)
    is warmed up again in the first timing turn, which has the GPU alone (``warm_alone``); what each call at the
    bandwidth size left in the caching allocator goes back to the driver (``give_back``), for the others' warm-ups
    and that second try."""
    for limit in RECOMPILE_LIMITS:
        if hasattr(torch._dynamo.config, limit):
            setattr(torch._dynamo.config, limit, max(getattr(torch._dynamo.config, limit), 100 * len(KEPT)))
    COLD.clear()
    for cell, kept in KEPT.items():
        if not warm_one(kept, beside_others=True):
            COLD.append(cell)
            give_back()  # what its calls had taken, for the next artifact's warm-up
    give_back()


def give_back() -> None:
    """The caching allocator's free blocks back to the driver (where this process uses CUDA): a call at the bandwidth
    size frees hundreds of MiB of copies, outputs and gradients, which 14 processes warming up at once would
    otherwise each keep reserved."""
    if torch.cuda.is_initialized():
        torch.cuda.empty_cache()


def warm_one(kept: Kept, beside_others: bool = False) -> bool:
    """``kept``'s warm-up (``warm_kept``), its seconds added to ``kept.warm_s``: False where, ``beside_others``, it
    ran out of GPU memory (none of its calls is recorded failed; it is warmed up again alone); a call that fails
    otherwise is recorded failed."""
    began = time.perf_counter()
    try:
        return _warm_calls(kept, beside_others)
    finally:
        kept.warm_s += time.perf_counter() - began


def _warm_calls(kept: Kept, beside_others: bool) -> bool:
    at = kept.bandwidth
    if isinstance(at, AtSize) and not at.failed:
        kept.restore(at_size=True)
        try:
            with static_shapes():
                at.call(made_at(at))()
        except Exception as error:  # recorded, not raised
            if beside_others and out_of_memory(error):
                return False
            at.failed = f"{NOT_AT} {at.size}: its warm-up call there failed: {in_own_words(error)}"
        give_back()
    kept.restore()
    try:
        with static_shapes():
            kept.call()
    except Exception as error:  # the artifact of a cell that passed: recorded, not raised
        if beside_others and out_of_memory(error):
            return False
        kept.failed = f"its warm-up call failed: {in_own_words(error)}"
    return True


def out_of_memory(error: BaseException) -> bool:
    """Whether ``error`` says the GPU's memory ran out (torch's words or the driver's, wrapped or not)."""
    return isinstance(error, torch.cuda.OutOfMemoryError) or says_out_of_gpu_memory(str(error))


def warm_alone(ids: list[str]) -> None:
    """The warm-ups of ``ids`` that ran out of GPU memory beside the other processes (``COLD``), again, once this
    process has the GPU alone: a call that fails now is recorded failed."""
    for cell in [cell for cell in COLD if cell in ids and cell in KEPT]:
        COLD.remove(cell)
        warm_one(KEPT[cell])


def host_kept(ids: list[str], device: str) -> None:
    """The first of a timing's two turns with the GPU to this process alone: each kept artifact of ``ids`` called at
    its cell's size, its host samples taken (``host_side``), before any profiler session in this process (a
    process's first session starts CUPTI, and a launch's host time is higher after it); kept for ``time_kept``."""
    timer = timer_for(device)
    if isinstance(timer, str):
        return
    warm_alone(ids)
    SIDES.update(host_sides({cell: KEPT[cell] for cell in ids if cell in KEPT}, timer))


def prime_profiler(device: str) -> None:
    """The profiler started (one session of one marker kernel) between the two turns, every process at once and
    none measuring: a process's first session starts CUPTI (3.6-4.7 s in a fresh Python on one H200, 0.1 s in a
    cell process at 352ecb0), which the second turn, one process after another with the GPU alone, would pay in
    each. No timer is made for it: a ``CudaTimer`` allocates its L2-flush buffer and measures the GPU's clock."""
    if untimed(device) is None:
        with profile(activities=[ProfilerActivity.CUDA]):
            torch.cuda._sleep(MARKER_CYCLES)
            torch.cuda.synchronize()


def time_kept(ids: list[str], device: str) -> tuple[dict[str, Timing], float | None]:
    """The timing of each cell of ``ids`` (with the GPU to this process alone), from the host sides ``host_kept``
    took (taken now for a cell it did not), and the GPU's copy bandwidth."""
    timer = timer_for(device)
    if isinstance(timer, str):
        return {cell: Timing.not_timed(timer) for cell in ids}, None
    warm_alone(ids)
    kept = {cell: KEPT[cell] for cell in ids if cell in KEPT}
    measured = measure(kept, timer, {cell: SIDES[cell] for cell in kept if cell in SIDES})
    timings = {cell: measured.get(cell) or lost() for cell in ids}
    KEPT.clear()
    MADE.clear()
    SIDES.clear()
    COLD.clear()
    return timings, timer.copy_gbps()


def in_own_words(error: BaseException) -> str:
    """``Type: message`` of an error a timing records, at most 200 characters of its message; one Inductor's compile
    pool wrapped, by the wrapped exception's own line (``own_words``), as the cell's record says it."""
    said = str(error).strip()
    own = own_words(said)
    return own[:200] if own != said else f"{type(error).__name__}: {said[:200]}"


def lost() -> Timing:
    return Timing.not_timed("its artifact was not in the cell process at the timing phase")


def host_sides(kept: dict[str, Kept], timer: DeviceTimer) -> dict[str, HostSide | Timing]:
    """Each kept artifact's host side at its cell's size (readied first), or why it is not timed."""
    sides: dict[str, HostSide | Timing] = {}
    for cell, artifact in kept.items():
        if artifact.failed:
            sides[cell] = Timing.not_timed(artifact.failed)
            continue
        artifact.restore()
        sides[cell] = host_side(artifact.call, artifact.bytes_moved, timer)
    return sides


def measure(
    kept: dict[str, Kept], timer: DeviceTimer, sides: dict[str, HostSide | Timing] | None = None
) -> dict[str, Timing]:
    """Each kept artifact timed at its cell's size by its kernels' durations (its host side from ``sides``, or
    ``host_side`` now, then ``by_kernels`` of all in one profiler session), with its timing at the bandwidth size,
    or why it is not timed there, in ``bandwidth``."""
    sides = dict(sides or {})
    sides.update(host_sides({cell: one for cell, one in kept.items() if cell not in sides}, timer))
    timings = {cell: side for cell, side in sides.items() if isinstance(side, Timing)}
    ready = {cell: side for cell, side in sides.items() if isinstance(side, HostSide)}
    profiled = by_kernels([(side, kept[cell].restore) for cell, side in ready.items()], timer)
    timings.update(zip(ready, profiled, strict=True))
    for cell, artifact in kept.items():
        if artifact.failed:
            continue
        warm = round(artifact.warm_s, 3) or None
        timing = dataclasses.replace(timings[cell], picked=picked(artifact.configs), warm_s=warm)
        if artifact.bandwidth is not None:
            artifact.restore(at_size=True)
            at_size = at_bandwidth(artifact.bandwidth, timer)
            if at_size.timed:
                at_size = dataclasses.replace(at_size, picked=picked(artifact.configs_at_size))
            timing = dataclasses.replace(timing, bandwidth=at_size)
        timings[cell] = timing
    return timings


def picked(configs: Configs) -> tuple[str, ...]:
    """The config each of the style's Triton autotuners had picked for each key (the ones timed), as
    ``kernel (key): config``, sorted."""
    return tuple(sorted(f"{tuner.base_fn.__name__} {tuple(key)}: {config}" for tuner, by_key in configs
                        for key, config in by_key.items()))  # fmt: skip


def at_bandwidth(at: AtSize | str, timer: DeviceTimer) -> Timing:
    """The timing at the bandwidth size of an artifact whose output there matched the reference (on its key's
    inputs, ``made_at``, made by the warm-up), or why it is not timed there."""
    if isinstance(at, str):
        return Timing.not_timed(at)
    if at.failed:
        return dataclasses.replace(Timing.not_timed(at.failed), size=at.size)
    with static_shapes():
        try:
            inputs = made_at(at)
            call, moved = at.call(inputs), at.bytes_moved(inputs)
        except Exception as error:
            why = f"{NOT_AT} {at.size}: making its inputs failed: {in_own_words(error)}"
            return dataclasses.replace(Timing.not_timed(why), size=at.size)
        return dataclasses.replace(sample(call, moved, timer), size=at.size)


@dataclass
class HostSide:
    """An artifact's calls before its device samples: its call, the bytes it moves, its host samples (seconds), how
    many device samples fit ``SAMPLING_BUDGET_S``, its peak of GPU memory (MiB), and the seconds all that took."""

    call: Callable[[], object]
    moved: int | None
    host: list[float]
    count: int
    call_mb: float
    seconds: float


def host_side(call: Callable[[], object], moved: int | None, timer: DeviceTimer) -> HostSide | Timing:
    """``WARMUP`` calls, one more for its peak GPU memory (``call_mb``), then up to ``HOST_SAMPLES`` host samples;
    or, where a call fails, why it is not timed."""
    began = time.perf_counter()
    try:
        for _ in range(WARMUP):
            call()
        timer.synchronize()
        call_mb = round(timer.call_bytes(call) / 2**20, 1)
        sampling = time.perf_counter()
        host = repeat(lambda: host_sample(call, timer), HOST_SAMPLES)
    except Exception as error:  # a passing artifact failing now: recorded, not raised
        return failed_while_timed(error)
    each = (time.perf_counter() - sampling) / len(host)  # a call's wall time, the GPU waited for after it
    return HostSide(call, moved, host, fitting(each, SAMPLES), call_mb, time.perf_counter() - began)


def failed_while_timed(error: BaseException) -> Timing:
    return Timing.not_timed(f"it failed while timed: {in_own_words(error)}")


def sample(call: Callable[[], object], moved: int | None, timer: DeviceTimer, kernels: bool = False) -> Timing:
    """One artifact timed (``host_side``), then the device time of up to ``SAMPLES`` calls (fewer for a slow
    artifact: each kind within ``SAMPLING_BUDGET_S``): with ``kernels``, the sum of each call's GPU activities'
    durations (``by_kernels``), else, or where the profiler cannot be used, CUDA events around each call behind a
    cover of ``cover_for`` the host samples (``by_events``)."""
    side = host_side(call, moved, timer)
    if isinstance(side, Timing):
        return side
    return by_kernels([(side, _ready)], timer)[0] if kernels else by_events(side, timer)


def by_events(side: HostSide, timer: DeviceTimer, fallback: str | None = None) -> Timing:
    """The timing of up to ``SAMPLES`` calls by CUDA events, behind a cover of ``cover_for`` the host samples;
    ``fallback``: why the profiler was not used."""
    began = time.perf_counter()
    cover = cover_for(side.host)
    try:
        device = repeat(lambda: timer.device_seconds(side.call, cover), SAMPLES)
    except Exception as error:  # a passing artifact failing now: recorded, not raised
        return failed_while_timed(error)
    timing = summarize(device, side.host, side.moved)
    if timing.median_us == 0:  # events with nothing between them: no time a reader could compare
        return Timing.not_timed("no GPU time between its CUDA events: the call ran no GPU work")
    cost = round(side.seconds + time.perf_counter() - began, 3)
    return dataclasses.replace(
        timing, cover_us=round(cover * 1e6, 1), cost_s=cost, fallback=fallback, call_mb=side.call_mb
    )


def by_kernels(sides: list[tuple[HostSide, Callable[[], None]]], timer: DeviceTimer) -> list[Timing]:
    """The timing of each artifact (its host side, and what readies it for its calls) by the durations of the GPU
    activities its calls ran (``DeviceTimer.kernel_samples``, all in one session): their sums' statistics (a call
    that ran nothing on the GPU: 0 µs, ``kernels`` 0), how many activities a call ran (median) and their names in
    one call that ran that many. Where the shared session fails, each artifact in a session of its own; where the
    profiler cannot be used for one, the events method times it and its timing says why."""
    if not sides:
        return []
    try:
        profiles = timer.kernel_samples([Profiled(side.call, side.count, ready) for side, ready in sides])
    except Exception as error:  # the profiler, or a call under it: alone, each shows which
        if len(sides) > 1:
            return [timing for one in sides for timing in by_kernels([one], timer)]
        return [events_instead(*sides[0], timer, f"the profiler could not be used: {in_own_words(error)}")]
    return [kernel_timing(side, ready, found, timer) for (side, ready), found in zip(sides, profiles, strict=True)]


def events_instead(side: HostSide, ready: Callable[[], None], timer: DeviceTimer, why: str) -> Timing:
    """An artifact the profiler could not time (``why``), readied again (other artifacts' calls may have run since
    its host side) and timed by events."""
    ready()
    return by_events(side, timer, why)


def kernel_timing(side: HostSide, ready: Callable[[], None], found: Profile, timer: DeviceTimer) -> Timing:
    """One artifact's timing from what the profiler saw of its calls, or by events where that cannot tell them."""
    if isinstance(found.calls, Unsplittable):
        return events_instead(side, ready, timer, f"the profiler could not be used: {in_own_words(found.calls)}")
    if len(found.calls) != side.count:
        return events_instead(side, ready, timer, f"the profiler gave {len(found.calls)} calls for {side.count}")
    counts = [len(one) for one in found.calls]
    median = statistics.median_low(counts)
    names = kernel_names(found.calls[counts.index(median)])
    timing = summarize([sum(seconds for _, seconds in one) for one in found.calls], side.host, side.moved)
    cost = round(side.seconds + found.seconds, 3)
    return dataclasses.replace(
        timing, method=TimingMethod.KERNELS, kernels=median, kernel_names=names, cost_s=cost, call_mb=side.call_mb
    )


def host_sample(call: Callable[[], object], timer: DeviceTimer) -> float:
    """One call's host time, the GPU idle before it (a full launch queue would block the host) and waited for."""
    seconds = timer.host_seconds(call)
    timer.synchronize()
    return seconds


def repeat(sample: Callable[[], float], most: int) -> list[float]:
    """Up to ``most`` samples: as many as fit ``SAMPLING_BUDGET_S`` by the first's wall time (``fitting``)."""
    start = time.perf_counter()
    samples = [sample()]
    samples += [sample() for _ in range(fitting(time.perf_counter() - start, most) - 1)]
    return samples


def fitting(seconds: float, most: int) -> int:
    """How many samples of ``seconds`` each fit ``SAMPLING_BUDGET_S``: at most ``most``, at least ``MIN_SAMPLES``."""
    return max(MIN_SAMPLES, min(most, int(SAMPLING_BUDGET_S / max(seconds, 1e-9))))


def cover_for(host: list[float]) -> float:
    """How long the GPU is kept busy before each device sample: ``COVER_FACTOR`` times the host samples' upper
    quartile plus ``COVER_MARGIN_S``, so that the call's launches are all queued before its first kernel starts;
    at most ``MAX_COVER_S``."""
    return min(MAX_COVER_S, COVER_FACTOR * quartiles(host)[2] + COVER_MARGIN_S)
