"""The launch-bound device time by the GPU's own durations: at a cell's own size each call's device time is the sum
of the durations of the GPU activities it ran, from one profiler session of flush, marker, call, marker per sample;
the calls are told apart by their markers; where the profiler cannot be used the events method times the cell and
says why; a record says which method measured it (one without reads as events). On CPU, with fake timers and a fake
profiler: the GPU's numbers come from the lead's GPU run."""

from __future__ import annotations

import random
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from torch.autograd import DeviceType

from harness.cell import timing as cell_timing
from harness.cell.timing import (
    Activity,
    Profile,
    Profiled,
    Unsplittable,
    kernel_names,
    sample,
    short_name,
    split_artifacts,
    split_calls,
)
from harness.errors import InputError
from harness.records.record import Record
from harness.spec import Outcome, Timing, TimingMethod, TimingState
from tests.conftest import cell_spec
from tests.fakes import FakeTimer, without_cost

US = 1e-6
SPIN = "at::cuda::(anonymous namespace)::spin_kernel(long)"  # torch.cuda._sleep's kernel, as CUPTI names it
COPY = (
    "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::"
    "TensorListMetadata<2>, at::native::(anonymous namespace)::UnaryOpFunctor<float, 2, 1, 1>, "
    "at::native::(anonymous namespace)::Copy<float, float> >(at::native::(anonymous namespace)::TensorListMetadata<2>, "
    "at::native::(anonymous namespace)::UnaryOpFunctor<float, 2, 1, 1>, at::native::(anonymous namespace)::Copy<float, "
    "float>)"
)
ADD = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >"
    "(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)"
)


def test_the_launch_bound_device_time_is_the_median_of_each_call_s_kernel_durations():
    """Events would read 10 µs a call (their floor and the kernels); the kernels' durations add up to 1.6 µs."""
    calls = [[("add_k", a * US), ("Memset (Device)", 0.5 * US)] for a in (1.0, 1.1, 1.2)]
    timer = FakeTimer([10e-6], kernels=calls)
    timing = sample(lambda: None, 24, timer, kernels=True)
    assert without_cost(timing) == Timing(
        TimingState.TIMED, median_us=1.6, iqr_us=0.2, dispersion=0.125, samples=30, host_us=2.0, bytes_moved=24,
        method=TimingMethod.KERNELS, kernels=2, kernel_names=("add_k", "Memset (Device)"), call_mb=3.0,
    )  # fmt: skip
    assert timing.cost_s is not None and timer.covers == [] and timer.profiled == 30
    events = sample(lambda: None, 24, FakeTimer([10e-6], memory=5 * 2**20 + 2**19))  # CUDA events behind a cover
    assert (events.median_us, events.method, events.kernels, events.cover_us) == (10.0, TimingMethod.EVENTS, None, 54.0)
    assert events.call_mb == 5.5  # one warm call's peak of GPU memory, in either method


def timeline(calls: list[list[tuple[str, int]]], flush: list[str] = ("Memset (Device)",)) -> list[Activity]:
    """What a profiler session of ``calls`` records: per call, the flush, a marker, its activities, a marker (each
    activity 100 ns after the last one ended), shuffled (the profiler's order is not the GPU's)."""
    clock, out = 0, []

    def run(name: str, ns: int) -> None:
        nonlocal clock
        out.append(Activity(name, clock, ns))
        clock += ns + 100

    for call in calls:
        for name in flush:
            run(name, 85_000)
        run(SPIN, 700)
        for name, ns in call:
            run(name, ns)
        run(SPIN, 700)
    random.Random(0).shuffle(out)
    return out


def test_calls_are_split_between_their_markers_the_flush_outside_every_call():
    calls = [[("add_k", 1250)], [(COPY, 1630), ("add_k", 1250)], [], [("Memcpy DtoD (Device -> Device)", 900)]]
    assert split_calls(timeline(calls), 4) == [
        [("add_k", 1.25e-6)],
        [(COPY, 1.63e-6), ("add_k", 1.25e-6)],  # the input copy of a CUDA graph's call, then its kernel
        [],  # nothing ran on the GPU
        [("Memcpy DtoD (Device -> Device)", 0.9e-6)],
    ]
    two_kernel_flush = timeline([[("k", 10)], [("k", 20)]], flush=["fill", "fill"])
    assert split_calls(two_kernel_flush, 2) == [[("k", 1e-8)], [("k", 2e-8)]]


@pytest.mark.parametrize(
    ("activities", "why"),
    [
        ([], "0 marker kernels for 2 calls, not 4"),  # the profiler saw nothing
        (timeline([[("k", 10)]]), "2 marker kernels for 2 calls, not 4"),  # one call's activities lost
        (timeline([[("k", 10), (SPIN, 700)], [("k", 10)]]), "5 marker kernels for 2 calls, not 4"),  # its own spin
        ([*timeline([[("k", 10)], [("k", 10)]]), Activity("late", 10**9, 5)], "[1] before a call, 1 after"),
        (  # a kernel of the first call on another stream, started after its closing marker
            [*timeline([[("k", 10)], [("k", 10)]]), Activity("side", 86_750, 5)],
            "activities outside the calls' markers: [1, 2] before a call",
        ),
    ],
)
def test_activities_that_cannot_be_told_apart_call_by_call_are_refused(activities: list[Activity], why: str):
    with pytest.raises(Unsplittable, match=why.replace("[", r"\[")):
        split_calls(activities, 2)


class FakeEvent:
    """One of the profiler's events (``torch._C._autograd._KinetoEvent``)."""

    def __init__(self, name: str, start: int, ns: int, device: DeviceType, annotation: bool = False) -> None:
        self._name, self._start, self._ns, self._device, self._annotation = name, start, ns, device, annotation

    def name(self) -> str:
        return self._name

    def start_ns(self) -> int:
        return self._start

    def duration_ns(self) -> int:
        return self._ns

    def device_type(self) -> DeviceType:
        return self._device

    def is_user_annotation(self) -> bool:
        return self._annotation


class FakeGpu:
    """A GPU's timeline as the profiler records it, and the CUDA calls a ``CudaTimer`` makes, without CUDA: each
    marker, flush and kernel runs when launched, 100 ns after the last; a compiled region's annotation spans its
    kernels, and each launch has a host event."""

    def __init__(self) -> None:
        self.clock, self.events, self.recording, self.sessions = 0, [], False, []
        self.allocated = self.peak = 2**30  # held before a call: its inputs

    def reset_peak(self) -> None:
        self.peak = self.allocated

    def run(self, name: str, ns: int) -> None:
        if self.recording:
            self.events.append(FakeEvent(name, self.clock, ns, DeviceType.CUDA))
            self.events.append(FakeEvent("cudaLaunchKernel", self.clock, 3000, DeviceType.CPU))
        self.clock += ns + 100

    def call(self) -> None:
        self.peak = max(self.peak, self.allocated + 2 * 2**20)  # its output and workspace, freed at its end
        region = self.clock
        self.run(COPY, 1630)
        self.run("add_k", 1250)
        if self.recording:
            span = self.clock - region
            self.events.append(FakeEvent("Torch-Compiled Region: 0/0", region, span, DeviceType.CUDA, True))

    def profile(self, activities: list[Any]) -> Any:
        gpu = self

        class Session:
            def __enter__(self) -> Any:
                gpu.sessions.append(activities)
                gpu.events, gpu.recording = [], True
                return SimpleNamespace(
                    profiler=SimpleNamespace(kineto_results=SimpleNamespace(events=lambda: gpu.events[::-1]))
                )

            def __exit__(self, *exc: object) -> None:
                gpu.recording = False

        return Session()


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> FakeGpu:
    fake = FakeGpu()
    monkeypatch.setattr(cell_timing, "profile", fake.profile)
    monkeypatch.setattr(torch.cuda, "_sleep", lambda cycles: fake.run(SPIN, 700))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    # a reading of the bytes allocated taken before a collection freed 1 GiB of an earlier timing's tensors
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda: fake.allocated + 2**30)
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", fake.reset_peak)
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda: fake.peak)
    monkeypatch.setattr(cell_timing, "SAMPLING_BUDGET_S", 1e6)
    return fake


def cuda_timer(gpu: FakeGpu) -> cell_timing.CudaTimer:
    timer = object.__new__(cell_timing.CudaTimer)  # no CUDA here: its flush is the fake GPU's memset
    timer.flush = SimpleNamespace(zero_=lambda: gpu.run("Memset (Device)", 85_000))
    return timer


def test_the_cuda_timer_profiles_flush_marker_call_marker_in_one_session(gpu: FakeGpu):
    """Host events and the profiler's annotation of a compiled region are not the GPU's work: left out."""
    [profile] = cuda_timer(gpu).kernel_samples([Profiled(gpu.call, 3)])
    assert profile.calls == [[(COPY, 1.63e-6), ("add_k", 1.25e-6)]] * 3
    assert gpu.sessions == [[torch.profiler.ProfilerActivity.CUDA]]
    timing = sample(gpu.call, None, cuda_timer(gpu), kernels=True)
    assert (timing.median_us, timing.samples, timing.method, timing.kernels) == (2.88, 30, TimingMethod.KERNELS, 2)
    assert timing.kernel_names == ("at::native::multi_tensor_apply_kernel", "add_k") and len(gpu.sessions) == 2
    assert timing.call_mb == 2.0  # the call's peak above what was allocated before it, never below 0


def test_one_session_holds_every_artifact_each_readied_before_its_calls(gpu: FakeGpu):
    """Each artifact's own calls, after its ``ready`` (its autotuners' picks) and one call not counted."""
    readied: list[str] = []

    def other() -> None:
        gpu.run("mul_k", 900)

    artifacts = [
        Profiled(gpu.call, 3, lambda: readied.append("add")),
        Profiled(other, 2, lambda: readied.append("mul")),
    ]
    add, mul = cuda_timer(gpu).kernel_samples(artifacts)
    assert add.calls == [[(COPY, 1.63e-6), ("add_k", 1.25e-6)]] * 3 and mul.calls == [[("mul_k", 0.9e-6)]] * 2
    assert len(gpu.sessions) == 1 and readied == ["add", "mul"]


def test_an_artifact_whose_activities_cannot_be_told_apart_is_refused_alone():
    """The first artifact's kernel on another stream starts after each of its calls' closing markers, its last
    call's before the second artifact's first marker: its calls are refused, the second's are found; markers that
    do not add up refuse the session."""
    first = timeline([[("k", 10)], [("k", 10)], [("k", 10)]], flush=[])
    closing = sorted(first, key=lambda activity: activity.start_ns)[2::3]
    late = [Activity("side", activity.start_ns + 1, 5) for activity in closing]
    second = [activity._replace(start_ns=activity.start_ns + 10**6) for activity in timeline([[("m", 20)]] * 2, [])]
    refused, found = split_artifacts([*first, *late, *second], [3, 2])
    assert str(refused) == "activities outside the calls' markers: [0, 1] before a call, 1 after"
    assert found == [[("m", 2e-8)]] * 2
    assert split_artifacts([*first, *second], [3, 2]) == [[[("k", 1e-8)]] * 3, [[("m", 2e-8)]] * 2]
    with pytest.raises(Unsplittable, match="10 marker kernels for 6 calls, not 12"):
        split_artifacts([*first, *second], [3, 3])


def test_the_phase_times_a_process_s_artifacts_in_one_session_and_alone_where_it_fails(monkeypatch: pytest.MonkeyPatch):
    """The same timings as each artifact alone would get; where a call fails under the profiler, each artifact in a
    session of its own: the others timed by their kernels, the failing one not timed, and saying why."""
    monkeypatch.setattr(cell_timing, "SAMPLING_BUDGET_S", 1e6)
    calls = {"b": 0}

    def failing_later() -> None:  # its warm-ups and host samples pass, its calls under the profiler fail
        calls["b"] += 1
        if calls["b"] > cell_timing.WARMUP + 1 + cell_timing.HOST_SAMPLES:
            raise RuntimeError("illegal memory access")

    for kept, sessions in (({"a": lambda: None, "c": lambda: None}, 1), ({"a": lambda: None, "b": failing_later}, 3)):
        timer = FakeTimer([10e-6])
        monkeypatch.setattr(cell_timing, "timer_for", lambda device, timer=timer: timer)
        monkeypatch.setattr(cell_timing, "KEPT", {f"{k}-s-eager": cell_timing.Kept(call) for k, call in kept.items()})
        timings, _ = cell_timing.time_kept([f"{k}-s-eager" for k in kept], "cuda")
        alone = without_cost(sample(lambda: None, None, FakeTimer([10e-6]), kernels=True))
        assert without_cost(timings["a-s-eager"]) == alone and timer.sessions == sessions
    assert timings["b-s-eager"] == Timing.not_timed("it failed while timed: RuntimeError: illegal memory access")


def test_names_are_shortened_for_a_person():
    assert short_name(COPY) == "at::native::multi_tensor_apply_kernel"
    assert short_name(ADD) == "at::native::vectorized_elementwise_kernel"
    assert short_name(SPIN) == "at::cuda::spin_kernel"
    assert short_name("triton_poi_fused_add_0") == "triton_poi_fused_add_0"
    assert short_name("Memcpy HtoD (Pageable -> Device)") == "Memcpy HtoD (Pageable -> Device)"
    assert short_name("void f<(anonymous namespace)::a<b>>(int)") == "f"
    assert short_name("k" * 100) == "k" * 79 + "…"
    many = [(f"kernel_{n % 9}", US) for n in range(20)]
    assert kernel_names(many) == ("kernel_0", "kernel_1", "kernel_2", "kernel_3", "kernel_4", "+4 more")
    assert kernel_names([(ADD, US), ("add_k", US), (ADD, US)]) == ("at::native::vectorized_elementwise_kernel", "add_k")


class Refusing(FakeTimer):
    """A timer whose profiler gives ``calls`` calls whatever it is asked for."""

    def __init__(self, calls: int) -> None:
        super().__init__([10e-6, 10.5e-6, 11e-6])
        self.given = calls

    def kernel_samples(self, artifacts: Sequence[Profiled]) -> list[Profile]:
        return super().kernel_samples([artifact._replace(count=self.given) for artifact in artifacts])


@pytest.mark.parametrize(
    ("timer", "why"),
    [
        (
            FakeTimer([10e-6, 10.5e-6, 11e-6], profiler=RuntimeError("CUPTI_ERROR_NOT_INITIALIZED")),
            "the profiler could not be used: RuntimeError: CUPTI_ERROR_NOT_INITIALIZED",
        ),
        (
            FakeTimer([10e-6, 10.5e-6, 11e-6], profiler=Unsplittable("0 marker kernels for 30 calls, not 60")),
            "the profiler could not be used: Unsplittable: 0 marker kernels for 30 calls, not 60",
        ),
        (Refusing(29), "the profiler gave 29 calls for 30"),
    ],
)
def test_where_the_profiler_cannot_be_used_the_events_method_times_the_cell_and_says_why(timer: FakeTimer, why: str):
    timing = sample(lambda: None, 24, timer, kernels=True)
    assert without_cost(timing) == Timing(
        TimingState.TIMED, median_us=10.5, iqr_us=1.0, dispersion=0.0952, samples=30, host_us=2.0, bytes_moved=24,
        cover_us=54.0, fallback=why, call_mb=3.0,
    )  # fmt: skip
    assert timing.method is TimingMethod.EVENTS and len(timer.covers) == 30


def test_a_cell_whose_profiler_fails_is_still_timed_in_the_phase(monkeypatch: pytest.MonkeyPatch):
    timer = FakeTimer([10e-6], profiler=RuntimeError("CUPTI could not be loaded"))
    monkeypatch.setattr(cell_timing, "timer_for", lambda device: timer)
    monkeypatch.setattr(cell_timing, "SAMPLING_BUDGET_S", 1e6)
    monkeypatch.setattr(cell_timing, "KEPT", {"a-b-eager": cell_timing.Kept(lambda: None)})
    timings, _ = cell_timing.time_kept(["a-b-eager"], "cuda")
    timing = timings["a-b-eager"]
    assert timing.timed and timing.method is TimingMethod.EVENTS and timing.median_us == 10.0
    assert timing.fallback == "the profiler could not be used: RuntimeError: CUPTI could not be loaded"


def test_a_call_that_runs_nothing_on_the_gpu_reads_zero_kernels_and_zero_time():
    timing = sample(lambda: None, None, FakeTimer([10e-6], kernels=[[]]), kernels=True)
    assert (timing.timed, timing.median_us, timing.dispersion, timing.kernels, timing.kernel_names) == (
        True, 0.0, 0.0, 0, (),
    )  # fmt: skip
    assert Record.of(cell_spec("sin", "control"), Outcome(timing=timing)).to_dict()["timing"]["kernels"] == 0


def test_calls_of_different_kernel_counts_record_the_median_count_and_names_of_a_call_that_ran_it():
    """The markers tell the calls apart whatever each ran: a count that varies is no reason to fall back."""
    calls = [[("a", US)], [("a", US), ("b", US)], [("a", US), ("b", US)], [("a", US), ("c", US), ("d", US)]]
    timing = sample(lambda: None, None, FakeTimer([10e-6], kernels=calls), kernels=True)
    assert (timing.method, timing.kernels, timing.kernel_names, timing.median_us) == (
        TimingMethod.KERNELS, 2, ("a", "b"), 2.0,
    )  # fmt: skip


def test_a_record_says_how_its_time_was_measured_and_an_older_one_reads_as_events():
    kernels = Timing(
        TimingState.TIMED, median_us=1.25, dispersion=0.05, samples=30, method=TimingMethod.KERNELS, kernels=2,
        kernel_names=("at::native::multi_tensor_apply_kernel", "add_k"),
        bandwidth=Timing(TimingState.TIMED, median_us=60.0, samples=30, cover_us=54.0, size=20_000),
    )  # fmt: skip
    record = Record.of(cell_spec("sin", "control"), Outcome(timing=kernels)).to_dict()
    assert record["timing"] == {
        "state": "timed", "median_us": 1.25, "dispersion": 0.05, "samples": 30, "method": "kernels", "kernels": 2,
        "kernel_names": ["at::native::multi_tensor_apply_kernel", "add_k"],
        "bandwidth": {"state": "timed", "median_us": 60.0, "samples": 30, "size": 20_000, "cover_us": 54.0},
    }  # fmt: skip
    assert Record.from_dict(record).timing == kernels
    fell_back = Timing(TimingState.TIMED, median_us=3.5, samples=30, fallback="the profiler gave 29 calls for 30")
    written = Record.of(cell_spec("sin", "control"), Outcome(timing=fell_back)).to_dict()["timing"]
    assert written["fallback"] == "the profiler gave 29 calls for 30" and "method" not in written
    old = {**record, "timing": {"state": "timed", "median_us": 3.5, "samples": 30, "cover_us": 54.0}}
    assert Record.from_dict(old).timing.method is TimingMethod.EVENTS


def test_a_record_of_an_unknown_method_is_bad_input():
    record = Record.of(cell_spec("sin", "control"), Outcome(timing=Timing(TimingState.TIMED, median_us=1.0)))
    data = record.to_dict()
    data["timing"]["method"] = "stopwatch"
    with pytest.raises(InputError, match="unknown timingmethod 'stopwatch'"):
        Record.from_dict(data)
