"""How fast a passing cell's artifact runs (issue 42): the statistics, the artifact a cell keeps, the timing phase's
exclusivity (no two processes time at once, nothing times while a cell runs), and the reasons a cell is not timed.
On CPU with fake timers: the GPU's numbers come from bench/gpu/speed.sh."""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import random
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from harness.case import load_case
from harness.cell import timing as cell_timing
from harness.cell.runner import run_cell
from harness.plugin import options
from harness.plugin import timing as phase
from harness.plugin.processes import TIMING_INPUT, TIMING_OUTPUT, CellProcesses, host_cores, processes_key
from harness.plugin.timing import FileCoordination, timing_phase
from harness.records.record import Record
from harness.records.schema import to_json
from harness.spec import CellSpec, Outcome, Timing, TimingMethod, TimingState
from harness.timing import slower, summarize
from tests.conftest import REPO, cell_spec, harness_main
from tests.fakes import FakeCells, FakeTimer, fake_config, without_cost


def test_the_median_and_dispersion_are_of_the_samples_left_after_outliers():
    us = 1e-6
    samples = [10 * us] * 10 + [11 * us] * 10 + [12 * us] * 9 + [100 * us]  # one launch stalled
    timing = summarize(samples, [3 * us, 5 * us, 4 * us], bytes_moved=12)
    assert (timing.state, timing.median_us, timing.iqr_us, timing.samples, timing.outliers) == (
        TimingState.TIMED,
        11.0,
        2.0,
        29,
        1,
    )
    assert timing.dispersion == round(2 / 11, 4) and timing.host_us == 4.0 and timing.bytes_moved == 12
    assert summarize([5 * us], []).median_us == 5.0 and summarize([], []).state is TimingState.NOT_TIMED


def timed(median: float, dispersion: float) -> Timing:
    return Timing(TimingState.TIMED, median_us=median, dispersion=dispersion, samples=30)


@pytest.mark.parametrize(
    ("current", "threshold", "expected"),
    [
        (timed(110.0, 0.01), 0.05, 0.10),  # 10% slower, beyond 5% and beyond the noise (1% + 1%)
        (timed(103.0, 0.01), 0.0, 0.03),  # 3% slower, the noise 2%
        (timed(103.0, 0.03), 0.0, None),  # 3% slower, inside the noise (3% + 1%)
        (timed(110.0, 0.15), 0.05, None),  # a launch-bound timing's noise hides 10%
        (timed(104.0, 0.0), 0.05, None),  # under the threshold
        (Timing.not_timed("x"), 0.0, None),
    ],
)
def test_slower_is_past_the_threshold_and_past_both_dispersions(current: Timing, threshold: float, expected):
    change = slower(current, timed(100.0, 0.01), threshold)
    assert (round(change, 6) if change is not None else None) == expected


def run(case: str, style: str, path: str, tmp_path: Path, built: dict) -> Any:
    """The cell on CPU, its case without a bandwidth size (that regime: tests/fast/test_bandwidth_timing.py)."""
    spec = cell_spec(case, style, path=path)
    loaded = dataclasses.replace(load_case(spec.module, spec.case), bandwidth_size=None)
    return run_cell(loaded, spec, tmp_path, built, device="cpu")


def test_on_cpu_a_passing_cell_is_not_timed_and_its_record_says_why(tmp_path: Path):
    outcome = run("sin", "control", "eager", tmp_path, {})
    assert outcome.status == "pass"
    assert outcome.timing == Timing.not_timed("on CPU: timing needs a CUDA GPU")
    assert Record.of(cell_spec("sin", "control", "eager"), outcome).to_dict()["timing"] == {
        "state": "not_timed",
        "reason": "on CPU: timing needs a CUDA GPU",
    }
    assert run("sin", "control", "cpu_fallback", tmp_path, {}).timing is None  # not a timed path


def test_under_the_interpreter_timing_is_skipped_with_the_reason(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert cell_timing.timer_for("cuda") == "under Triton's interpreter: kernels run on the CPU"
    assert cell_timing.time_kept(["a-b-eager"], "cuda") == (
        {"a-b-eager": Timing.not_timed("under Triton's interpreter: kernels run on the CPU")},
        None,
    )


def test_a_passing_cell_keeps_the_artifact_it_checked_and_the_phase_times_it(fake_timer: FakeTimer, tmp_path: Path):
    built: dict = {}
    paths = ("eager", "compile", "train_eager", "export_strict")
    outcomes = {path: run("sin", "control", path, tmp_path, built) for path in paths}
    assert {path: (o.status, o.timing) for path, o in outcomes.items()} == {
        path: ("pass", Timing(TimingState.PENDING)) for path in paths
    }
    kept = cell_timing.KEPT
    assert sorted(kept) == sorted(f"sin-control-{path}" for path in paths)
    x = load_case("cases.sin", "sin").make_inputs(3001, "cpu", 0)[0]
    torch.testing.assert_close(kept["sin-control-eager"].call(), torch.sin(x))  # its inputs: the cell's
    assert kept["sin-control-eager"].bytes_moved == 2 * 3001 * 4  # the case's bytes_moved
    assert kept["sin-control-train_eager"].bytes_moved is None
    with torch._dynamo.config.patch(recompile_limit=8, accumulated_recompile_limit=256):  # lifted in there
        cell_timing.warm_kept()  # the compiled module again after later cells reset Dynamo
    assert {cell: one.failed for cell, one in kept.items()} == dict.fromkeys(kept)
    timings, gbps = cell_timing.time_kept([*kept, "sin-control-dynamic"], "cuda")
    samples = cell_timing.SAMPLES
    assert without_cost(timings["sin-control-eager"]) == Timing(
        TimingState.TIMED, median_us=1.25, iqr_us=1.0, dispersion=0.8, samples=samples, host_us=2.0,
        bytes_moved=24008, method=TimingMethod.KERNELS, kernels=1, kernel_names=("add_k",), call_mb=3.0,
    )  # fmt: skip
    assert fake_timer.covers == [] and fake_timer.profiled == len(paths) * samples  # by its kernels, not by events
    assert timings["sin-control-dynamic"].reason == "its artifact was not in the cell process at the timing phase"
    assert gbps == 3000.0 and fake_timer.calls == len(paths) * samples and cell_timing.KEPT == {}


def test_a_failing_cell_keeps_nothing_and_no_timing(fake_timer: FakeTimer, tmp_path: Path):
    outcome = run("tests.fixtures.wrong", "triton_op", "eager", tmp_path, {})
    assert outcome.status == "wrong" and outcome.timing is None and cell_timing.KEPT == {}


class Phase:
    """What the workers of a test do, on one clock: cells run, and timings, each as (start, end)."""

    def __init__(self) -> None:
        self.cells: list[tuple[float, float]] = []
        self.timings: list[tuple[float, float]] = []  # the turns with the GPU alone: host samples, device samples
        self.hosts: list[tuple[float, float]] = []
        self.primes: list[tuple[float, float]] = []
        self.devices: list[tuple[float, float]] = []
        self.lock = threading.Lock()

    def span(self, into: list[tuple[float, float]], seconds: float) -> None:
        start = time.monotonic()
        time.sleep(seconds)
        with self.lock:
            into.append((start, time.monotonic()))


class TimedFake:
    """A cell process that keeps artifacts and times them by sleeping (``CellProcess.ask``)."""

    def __init__(self, phase: Phase, pid: int = 7) -> None:
        self.phase, self.pid, self.asked = phase, pid, []

    def ask(self, request: tuple[Any, ...], timeout: float) -> Any:
        self.asked.append(request[0])
        if request[0] == "warm":
            return "warm"
        if request[0] == "prime":
            self.phase.span(self.phase.primes, 0.02)
            return "primed"
        turns = self.phase.hosts if request[0] == "host" else self.phase.devices
        self.phase.span(turns, 0.03)
        self.phase.timings.append(turns[-1])
        return "host" if request[0] == "host" else ({cell: timed(10.0, 0.01) for cell in request[1]}, 2900.0)


def worker(phase: Phase, coordination: Any, name: str, results: dict) -> None:
    for _ in range(random.randint(1, 4)):
        phase.span(phase.cells, random.uniform(0.005, 0.05))
    results[name] = timing_phase({f"c{name}-s-eager": 7}, TimedFake(phase), coordination, name)


def run_workers(coordination: Callable[[], Any], count: int = 4) -> tuple[Phase, dict]:
    phase, results = Phase(), {}
    threads = [threading.Thread(target=worker, args=(phase, coordination(), f"w{n}", results)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return phase, results


def overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def test_no_two_workers_time_at_once_and_none_times_while_a_cell_runs(tmp_path: Path):
    random.seed(4)
    phase, results = run_workers(lambda: FileCoordination(tmp_path, 4))
    assert sorted(results) == ["w0", "w1", "w2", "w3"]
    assert all(timings[f"c{name}-s-eager"].timed for name, (timings, _) in results.items())
    assert len(phase.timings) == 8
    assert not [(a, b) for i, a in enumerate(phase.timings) for b in phase.timings[i + 1 :] if overlap(a, b)]
    assert min(start for start, _ in phase.timings) >= max(end for _, end in phase.cells)


def test_every_process_starts_the_profiler_after_every_host_sample_and_before_any_device_sample(tmp_path: Path):
    """A process's first profiler session raises a launch's host time, and costs seconds: every worker takes its
    host samples, then all start the profiler at once, then each takes its device samples."""
    random.seed(5)
    phase, results = run_workers(lambda: FileCoordination(tmp_path, 4))
    assert len(results) == 4 and len(phase.hosts) == len(phase.primes) == len(phase.devices) == 4
    assert max(end for _, end in phase.hosts) <= min(start for start, _ in phase.primes)
    assert max(end for _, end in phase.primes) <= min(start for start, _ in phase.devices)
    assert any(overlap(a, b) for i, a in enumerate(phase.primes) for b in phase.primes[i + 1 :])  # at once


def test_a_worker_whose_timing_raised_holds_no_other_worker_at_a_barrier(tmp_path: Path):
    class Unreadable(TimedFake):
        def ask(self, request: tuple[Any, ...], timeout: float) -> Any:
            if request[0] == "host":
                raise ValueError("an answer that cannot be read")
            return super().ask(request, timeout)

    def broken() -> None:
        with contextlib.suppress(ValueError):
            timing_phase({"a-b-eager": 7}, Unreadable(Phase()), FileCoordination(tmp_path, 2), "w1")

    thread = threading.Thread(target=broken)
    thread.start()
    began = time.monotonic()
    timings, _ = timing_phase({"c-d-eager": 7}, TimedFake(Phase()), FileCoordination(tmp_path, 2), "w0")
    thread.join(10)
    assert timings["c-d-eager"].timed and time.monotonic() - began < 5


class NoBarrier(FileCoordination):
    """What the test above must catch: a coordination whose workers time at once, without waiting."""

    def wait_all(self, timeout: float, step: str = "") -> str | None:
        return None

    def exclusive(self) -> AbstractContextManager[None]:
        return contextlib.nullcontext()


def test_the_exclusivity_test_fails_without_the_barrier_and_the_lock(tmp_path: Path):
    random.seed(4)
    phase, _ = run_workers(lambda: NoBarrier(tmp_path, 4))
    overlapping = [(a, b) for i, a in enumerate(phase.timings) for b in phase.timings[i + 1 :] if overlap(a, b)]
    assert overlapping or min(start for start, _ in phase.timings) < max(end for _, end in phase.cells)


@pytest.mark.parametrize(("gpus", "gpu"), [((), None), (("0", "1"), "1")])
def test_an_early_repro_script_holding_the_lock_shared_holds_the_timing_back(gpus, gpu, tmp_path: Path):
    """On several GPUs, a script holds every GPU's lock: a worker timing on GPU 1 waits for it too."""
    coordination, phase = FileCoordination(tmp_path, 1, gpu), Phase()
    results: dict = {}
    with coordination.shared(gpus):
        pending = {"a-b-eager": 7}
        thread = threading.Thread(
            target=lambda: results.update(done=timing_phase(pending, TimedFake(phase), coordination, "w0"))
        )
        thread.start()
        time.sleep(0.2)
        assert phase.timings == [] and thread.is_alive()
    thread.join(10)
    assert results["done"][0]["a-b-eager"].timed


def test_each_gpu_times_one_worker_at_a_time_and_the_gpus_at_once(tmp_path: Path):
    """Where each worker sees one of several GPUs, its timing holds that GPU's lock: while a worker times on GPU 0,
    one on GPU 1 times too, and another on GPU 0 waits. Where the workers see every GPU, one lock for all."""
    assert (phase.lock_name(None), phase.lock_name("0"), phase.lock_name("GPU-1a/2")) == (
        "gpu.lock", "gpu-0.lock", "gpu-GPU-1a_2.lock"
    )  # fmt: skip
    timings: dict = {}

    def times(worker: str, gpu: str) -> threading.Thread:
        def run() -> None:
            pending = {f"c{worker}-s-eager": 7}
            timings[worker] = timing_phase(pending, TimedFake(Phase()), FileCoordination(tmp_path, 1, gpu), worker)

        thread = threading.Thread(target=run)
        thread.start()
        return thread

    with FileCoordination(tmp_path, 1, "0").exclusive():  # a worker timing on GPU 0
        other = times("w1", "1")
        other.join(10)
        assert not other.is_alive() and timings["w1"][0]["cw1-s-eager"].timed
        same = times("w2", "0")
        time.sleep(0.2)
        assert same.is_alive() and "w2" not in timings
    same.join(10)
    assert timings["w2"][0]["cw2-s-eager"].timed


def locked(folder: Path) -> list[str]:
    """The lock files in ``folder`` that someone holds (an exclusive ``flock`` on them cannot be had now)."""
    held = []
    for file in sorted(folder.glob("*.lock")):
        with open(file) as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                held.append(file.name)
    return held


def test_a_workers_timing_phase_holds_the_lock_of_the_gpu_it_sees(tmp_path: Path):
    config = fake_config(tmp_path, (), gpus=("4", "6"), workerid="gw3")  # gw3 sees GPU 6
    folder = tmp_path / "timing"
    for arrivals in ("arrived", "arrived-hosts", "arrived-primed"):  # the other worker is through its timing
        (folder / arrivals).mkdir(parents=True)
        (folder / arrivals / "gw0").touch()
    config.workerinput[TIMING_INPUT], config.workeroutput = str(folder), {}
    processes = CellProcesses(config)
    holding: list[list[str]] = []

    class Holds(TimedFake):
        def ask(self, request: tuple[Any, ...], timeout: float) -> Any:
            holding.append(locked(folder))
            return super().ask(request, timeout)

    processes.process, processes.pending = Holds(Phase()), {"a-b-eager": 7}
    loop = processes.pytest_runtestloop(SimpleNamespace(shouldfail=False, shouldstop=False))
    next(loop)
    with pytest.raises(StopIteration):
        loop.send(True)
    assert holding == [[], ["gpu-6.lock"], [], ["gpu-6.lock"]]  # warm-up, host samples, profiler's start, device
    assert config.workeroutput[TIMING_OUTPUT]["timings"]["a-b-eager"]["state"] == "timed"


def test_a_workers_timing_the_controller_cannot_read_leaves_that_cell_not_timed_and_the_run_going_on():
    from harness.plugin.writer import received

    good = to_json(timed(11.0, 0.01))
    assert received("a-b-eager", good).timed
    for bad in ({**good, "call_mb": -1153.0}, {**good, "median_us": float("nan")}, "timed"):
        timing = received("a-b-eager", bad)
        assert timing.state is TimingState.NOT_TIMED and "timing could not be read" in (timing.reason or "")
        assert "a-b-eager" in (timing.reason or "")


def test_an_early_script_of_a_run_on_several_gpus_runs_on_one_and_holds_only_its_lock(tmp_path: Path, monkeypatch):
    """Two scripts at once on two GPUs: one on each, each holding its own GPU's lock shared (the other GPU's
    workers may time meanwhile); a third, once the first has ended, on the GPU it left."""
    from harness.plugin.confirming import Confirmer

    config = fake_config(tmp_path, (), gpus=("3", "5"))
    config.stash[processes_key] = SimpleNamespace(timing_folder=tmp_path / "timing")
    confirmer, holding = Confirmer(config), []
    second_started, first_may_end = threading.Event(), threading.Event()

    def run(script: Path, limit: float, gpu: str | None = None) -> None:
        holding.append((script.name, gpu, locked(tmp_path / "timing")))
        if script.name == "0.py":
            second_started.wait(5)
        else:
            second_started.set()
            first_may_end.wait(5)

    monkeypatch.setattr(confirmer.scripts, "run", run)
    first = threading.Thread(target=confirmer._run_early, args=(tmp_path / "0.py", 1.0))
    first.start()
    while not holding:
        time.sleep(0.01)
    second = threading.Thread(target=confirmer._run_early, args=(tmp_path / "1.py", 1.0))
    second.start()
    first.join(5)
    confirmer._run_early(tmp_path / "2.py", 1.0)
    first_may_end.set()
    second.join(5)
    assert holding == [("0.py", "3", ["gpu-3.lock"]), ("1.py", "5", ["gpu-3.lock", "gpu-5.lock"]),
                       ("2.py", "3", ["gpu-3.lock", "gpu-5.lock"])]


def test_a_script_of_a_run_on_one_gpu_or_every_gpu_runs_as_the_run_was_started(tmp_path: Path, monkeypatch):
    from harness.plugin.confirming import Confirmer

    config = fake_config(tmp_path, (), gpus=())
    config.stash[processes_key] = SimpleNamespace(timing_folder=tmp_path / "timing")
    confirmer, holding = Confirmer(config), []
    monkeypatch.setattr(confirmer.scripts, "run",
                        lambda script, limit, gpu=None: holding.append((gpu, locked(tmp_path / "timing"))))
    confirmer._run_early(tmp_path / "0.py", 1.0)
    assert holding == [(None, ["gpu.lock"])]


def test_early_scripts_run_a_few_at_a_time_and_as_many_as_workers_once_the_cells_have_ended():
    """While cells run, early scripts take one slot per four workers; once every cell has its record the queue
    drains as wide as the workers, beside their warm-ups, before the timing phase that waits for it."""
    from harness.plugin.scriptqueue import Width

    width = Width(1)
    started, release, threads = held_scripts(width, "abc")
    time.sleep(0.2)
    assert len(started) == 1  # one slot while cells run
    width.widen(3)  # the cells have ended
    time.sleep(0.2)
    assert sorted(started) == ["a", "b", "c"]
    released(release, threads)
    assert width.running == 0


def held_scripts(width: Any, names: str) -> tuple[list[str], threading.Event, list[threading.Thread]]:
    """A script per name, each holding a place of ``width`` until released; the names of those started."""
    started: list[str] = []
    release = threading.Event()

    def script(name: str) -> None:
        with width.slot():
            started.append(name)
            release.wait(20)

    threads = [threading.Thread(target=script, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    return started, release, threads


def released(release: threading.Event, threads: list[threading.Thread]) -> None:
    release.set()
    for thread in threads:
        thread.join(20)


def started_within(started: list[str], count: int, samples: int) -> int:
    """How many have started once ``count`` have or ``samples`` readings of the idle cores have passed."""
    from harness.plugin import scriptqueue

    deadline = time.monotonic() + samples * scriptqueue.IDLE_SAMPLE + 5
    while len(started) < count and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.3)
    return len(started)


def test_once_the_cells_have_ended_idle_cores_let_scripts_past_the_workers_up_to_twice_them():
    """After the last cell the queue takes the workers' width at once, and one more script per reading of idle
    cores up to ``AFTER_CELLS_MOST`` times the workers (scripts waiting on the GPU's driver leave cores idle): the
    confirmer's own queue, whose threads must not bound them first (at 58c9682 its workers' threads did: 14 at
    once on one H200 while 10 of 16 cores were idle)."""
    from harness.execution.confirm import ScriptRun
    from harness.plugin.confirming import AFTER_CELLS_MOST, Confirmer
    from harness.plugin.scriptqueue import Width

    idle = [0.0]
    confirmer = Confirmer.__new__(Confirmer)
    confirmer.width, confirmer.queue = Width(1, most=1, idle=lambda: idle[0]), None
    confirmer.config = SimpleNamespace(option=SimpleNamespace(dist="load", tx=["popen"] * 2))
    started: list[str] = []
    release = threading.Event()

    def run(script: Path, limit: float) -> ScriptRun:
        started.append(script.name)
        release.wait(20)
        return ScriptRun.of(0, "", 0.0)

    confirmer._run_early = run
    futures = [confirmer.script_queue().submit(Path(name), 60.0, "eager", 1.0) for name in "abcdef"]
    time.sleep(0.3)
    assert len(started) == 1
    confirmer.cells_ended()
    time.sleep(0.3)
    assert len(started) == 2  # the workers' width, the host busy
    idle[0] = 2.0
    assert started_within(started, 2 * AFTER_CELLS_MOST, 4) == 2 * AFTER_CELLS_MOST  # never beyond
    release.set()
    assert all(future.result(20).returncode == 0 for future in futures)
    confirmer.queue.shutdown()


def test_a_worker_that_never_finishes_leaves_the_others_not_timed_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(phase, "BARRIER_TIMEOUT", 0.2)
    process = TimedFake(Phase())
    timings, gbps = timing_phase({"a-b-eager": 7}, process, FileCoordination(tmp_path, 2), "w0")
    assert timings == {"a-b-eager": Timing.not_timed("1 worker(s) still ran cells after 0.2 s")}
    assert gbps is None and process.asked == ["warm"]
    assert {folder.name for folder in tmp_path.iterdir()} == {"arrived", "arrived-hosts", "arrived-primed"}


def test_a_cell_whose_process_was_replaced_is_not_timed_and_says_so(tmp_path: Path):
    process = TimedFake(Phase(), pid=8)
    timings, gbps = timing_phase({"a-b-eager": 7, "c-d-eager": 8}, process, FileCoordination(tmp_path, 1), "w0")
    assert timings["a-b-eager"] == Timing.not_timed("its cell process was replaced before the timing phase")
    assert timings["c-d-eager"].timed and gbps == 2900.0 and process.asked == ["warm", "host", "prime", "time"]
    assert (tmp_path / "arrived" / "w0").exists()


def test_the_warm_up_s_peak_of_gpu_memory_is_kept_in_the_workers_phase_clock(tmp_path: Path):
    """Each worker holds its kept artifacts and the inputs at the bandwidth size its warm-up makes while other workers
    still run cells: the largest peak its cell processes report is the clock's ``warm_gpu_peak_mb``."""

    class Peaked(TimedFake):
        def __init__(self, pid: int, peak: float) -> None:
            super().__init__(Phase(), pid)
            self.peak = peak

        def ask(self, request: tuple[Any, ...], timeout: float) -> Any:
            answer = super().ask(request, timeout)
            return {"gpu_peak_mb": self.peak} if request[0] == "warm" else answer

    clock: dict[str, float] = {}
    timing_phase({"a-b-eager": 7, "c-d-eager": 8}, Peaked(8, 512.5), FileCoordination(tmp_path, 1), "w0",
                 (Peaked(7, 900.0),), clock)  # fmt: skip
    assert clock["warm_gpu_peak_mb"] == 900.0 and clock["warm"] <= clock["arrived"] <= clock["done"]


def test_a_process_set_aside_for_a_re_run_times_what_it_kept(tmp_path: Path):
    """A re-run needs a fresh cell process; the one it replaces, keeping artifacts, stays alive and times them."""
    retired, current = TimedFake(Phase(), pid=7), TimedFake(Phase(), pid=8)
    timings, gbps = timing_phase(
        {"a-b-eager": 7, "c-d-eager": 8, "e-f-eager": 9}, current, FileCoordination(tmp_path, 1), "w0", (retired,)
    )
    assert timings["a-b-eager"].timed and timings["c-d-eager"].timed and gbps == 2900.0
    assert timings["e-f-eager"] == Timing.not_timed("its cell process was replaced before the timing phase")
    assert retired.asked == current.asked == ["warm", "host", "prime", "time"]


def test_compiled_artifacts_sharing_one_forward_all_stay_compiled_after_the_warm_up(monkeypatch: pytest.MonkeyPatch):
    """A case's own module class is one ``forward`` for all its compiled cells: past Dynamo's recompile limit (8)
    the rest would run eagerly, and be timed so."""
    monkeypatch.setattr(cell_timing, "KEPT", {})
    compiled_calls = []

    def backend() -> Callable[..., Any]:  # one per cell, as each cell's Cell.backend
        def compile_graph(gm: torch.fx.GraphModule, example_inputs: Any) -> Callable[..., Any]:
            def run(*args: Any) -> Any:
                compiled_calls.append(1)
                return gm.forward(*args)

            return run

        return compile_graph

    class Shared(torch.nn.Module):
        def __init__(self, scale: float) -> None:
            super().__init__()
            self.scale = scale

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * self.scale

    for n in range(12):
        model = torch.compile(Shared(float(n)), backend=backend())
        cell_timing.KEPT[f"c{n}-s-compile"] = cell_timing.Kept(cell_timing.inference_call(model, (torch.ones(4),)))
    torch._dynamo.reset()  # as the next cell's start does
    with torch._dynamo.config.patch(recompile_limit=8, accumulated_recompile_limit=256):  # the defaults
        cell_timing.warm_kept()
        compiled_calls.clear()
        for kept in cell_timing.KEPT.values():
            kept.call()
    assert len(compiled_calls) == 12
    torch._dynamo.reset()


def test_no_timing_keeps_nothing_and_says_so(fake_timer: FakeTimer, tmp_path: Path):
    spec = dataclasses.replace(cell_spec("sin", "control", path="eager"), timed=False)
    outcome = run_cell(load_case(spec.module, spec.case), spec, tmp_path, {}, device="cpu")
    assert outcome.status == "pass" and outcome.timing == Timing.not_timed("the run was given --no-timing")
    assert cell_timing.KEPT == {}


def test_the_no_timing_option_reaches_every_cell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    specs: list[CellSpec] = []
    cells = FakeCells()
    monkeypatch.setattr(cells, "answer", lambda spec: specs.append(spec) or Outcome(status="pass"))
    monkeypatch.setattr(CellProcesses, "make_process", cells)
    spec = cell_spec("sin", "control", path="eager")
    for timing in (True, False):
        config = fake_config(tmp_path, (spec,))
        config.stash[options.options_key] = dataclasses.replace(options.options(config), timing=timing)
        CellProcesses(config).run(spec)
    assert [one.timed for one in specs] == [True, False]


def test_repro_timed_writes_a_timing_script_beside_each_named_cells_repro(tmp_path: Path):
    results = REPO / "reports" / "results.json"
    made = harness_main("repro", "add-triton_op-eager", "--results", str(results), "--out", str(tmp_path), "--timed")
    assert made.returncode == 0, made.stderr
    assert sorted(p.name for p in tmp_path.glob("*.py")) == ["add-triton_op-eager.py", "add-triton_op-eager.timed.py"]
    timed = (tmp_path / "add-triton_op-eager.timed.py").read_text()
    compile(timed, "timed.py", "exec")
    assert "SCRIPT = Path(__file__).with_name('add-triton_op-eager.py')" in timed
    refused = harness_main("repro", "--results", str(results), "--out", str(tmp_path), "--timed")
    assert refused.returncode == 2 and "name the cells to time" in refused.stderr


def test_the_cover_outlasts_the_call_s_launch_and_is_bounded():
    assert cell_timing.cover_for([10e-6] * 9 + [1.0]) == pytest.approx(2 * 10e-6 + 50e-6)  # one stall: not the cover
    assert cell_timing.cover_for([100e-6, 200e-6, 300e-6, 400e-6, 500e-6]) == pytest.approx(2 * 400e-6 + 50e-6)
    assert cell_timing.cover_for([1.0] * 5) == cell_timing.MAX_COVER_S


def test_a_slow_artifact_gets_fewer_samples_within_the_budget(fake_timer: FakeTimer, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(cell_timing, "SAMPLING_BUDGET_S", 0.05)
    timing = cell_timing.sample(lambda: time.sleep(0.02), None, fake_timer)
    assert timing.samples == cell_timing.MIN_SAMPLES and fake_timer.calls == cell_timing.MIN_SAMPLES
    timing = cell_timing.sample(lambda: None, None, fake_timer)
    assert timing.samples == cell_timing.SAMPLES


def test_the_early_script_expected_to_run_longest_goes_next():
    """First come first served, a script whose cell failed early waited behind shorter ones and ended long after the
    last cell. One place: a first script holds it; the others go by their cell's seconds times what scripts took
    over their cells so far, or, once a script of their path has run, by what those took."""
    from harness.execution.confirm import ScriptRun
    from harness.plugin.scriptqueue import ScriptQueue, Width

    ran, release = [], threading.Event()
    took = {"first": 1.0, "mid": 5.0, "slow-a": 100.0, "slow-b": 90.0, "quick": 2.0, "small": 1.0}

    def run(script: Path, limit: float) -> ScriptRun:
        if script.name == "first":
            release.wait(10)
        ran.append(script.name)
        return ScriptRun.of(1, "", took[script.name])

    queue = ScriptQueue(Width(1), 4, run)
    futures = [queue.submit(Path("first"), 60.0, "eager", 0.1)]
    time.sleep(0.1)
    jobs = [("quick", "export", 0.3), ("slow-a", "aoti", 0.35), ("mid", "compile", 0.5), ("slow-b", "aoti", 0.1),
            ("small", "vmap", 0.2)]  # fmt: skip
    futures += [queue.submit(Path(name), 60.0, path, seconds) for name, path, seconds in jobs]
    release.set()
    assert [future.result(10).seconds for future in futures] == [1.0, 2.0, 100.0, 5.0, 90.0, 1.0]
    queue.shutdown()
    assert ran == ["first", "mid", "slow-a", "slow-b", "quick", "small"]  # slow-b once slow-a showed aoti's cost


def test_a_script_out_of_gpu_memory_queues_once_more_beside_the_others():
    """One H100 at 6315b99: three early scripts ran out of the GPU's memory beside the cell processes and ran again
    one at a time after every other script, 43 s of the run's end. Such a run queues once more at once; its future
    holds the second run (out of memory again: the confirmer's one-at-a-time re-run takes it)."""
    from harness.execution.confirm import ScriptRun
    from harness.plugin.scriptqueue import ScriptQueue, Width

    ran: list[str] = []
    outputs = {"once": ["CUDA out of memory", "ok"], "twice": ["CUDA out of memory"] * 3, "fine": ["ok"]}

    def run(script: Path, limit: float) -> ScriptRun:
        ran.append(script.name)
        return ScriptRun.of(1, outputs[script.name][ran.count(script.name) - 1], 1.0)

    def crowded(run: ScriptRun) -> bool:
        return "out of memory" in run.output

    queue = ScriptQueue(Width(2), 4, run)
    futures = {name: queue.submit(Path(name), 60.0, "eager", 1.0, again=crowded) for name in outputs}
    assert {name: future.result(10).output for name, future in futures.items()} == {
        "once": "ok", "twice": "CUDA out of memory", "fine": "ok"
    }
    queue.shutdown()
    assert sorted(ran) == ["fine", "once", "once", "twice", "twice"]


def test_an_early_script_may_start_beyond_the_width_while_cores_are_idle(tmp_path: Path):
    """Cells waiting for the GPU leave cores idle: one more script starts per reading of two idle cores, up to the
    workers; none beyond the width while the host is busy."""
    from harness.plugin import scriptqueue
    from harness.plugin.scriptqueue import IdleCores, Width

    idle = [0.0]
    width = Width(1, most=3, idle=lambda: idle[0])
    started, release, threads = held_scripts(width, "abcd")
    time.sleep(0.3)
    assert len(started) == 1  # busy: the width alone
    idle[0] = 2.0
    assert started_within(started, 3, 3) == 3  # idle cores: up to ``most``, never beyond
    released(release, threads)
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 100 800 0 0 0 0 0 0\n")
    cores = IdleCores(str(stat))
    assert cores() is None  # no new sample yet
    stat.write_text("cpu  200 0 200 1400 0 0 0 0 0 0\n")
    cores.taken -= scriptqueue.IDLE_SAMPLE
    assert cores() == pytest.approx(host_cores() * 600 / 800)


def test_a_script_beyond_the_first_starts_only_while_the_gpu_has_the_memory_it_needs(monkeypatch: pytest.MonkeyPatch):
    """An 80 GB H100 beside 14 cell processes: scripts that started anyway ran out of memory and ran again, one at a
    time, after the timing phase. The first always starts (nothing else would free the memory); each start takes
    ``SCRIPT_GPU_MB`` off the reading until the next one."""
    from harness.plugin import scriptqueue
    from harness.plugin.scriptqueue import GpuMemory, Width

    monkeypatch.setattr(scriptqueue, "IDLE_SAMPLE", 0.2)
    readings = [scriptqueue.SCRIPT_GPU_MB / 2, 2.5 * scriptqueue.SCRIPT_GPU_MB]  # then none free

    def free() -> float:
        return readings.pop(0) if readings else 0.0

    width = Width(4, memory=GpuMemory(free))
    started, release, threads = held_scripts(width, "abcd")
    time.sleep(1.0)
    assert len(started) == 3  # the first alone, then two more on the reading with room for two
    readings.append(100 * scriptqueue.SCRIPT_GPU_MB)
    time.sleep(0.6)
    assert len(started) == 4
    released(release, threads)
    unknown = GpuMemory(lambda: None)
    assert unknown.room() and (unknown.take() or unknown.room())  # nvidia-smi cannot tell: nothing held back
    assert width.memory is not None and width.memory.short and not unknown.short  # a reading had no room
    alone = Width(1, memory=GpuMemory(lambda: 0.0))
    with alone.slot():  # the first script starts whatever the memory, which is read all the same
        assert alone.memory is not None and alone.memory.short


def test_scripts_wait_for_the_timing_turns_only_on_a_gpu_that_has_run_short_of_memory(monkeypatch: pytest.MonkeyPatch):
    """With memory to spare the scripts go first (they run beside the warm-ups); on a GPU that ran short, the timing
    goes first: its end frees the cell processes' memory."""
    from harness.plugin import scriptqueue
    from harness.plugin.scriptqueue import GpuMemory, Width

    monkeypatch.setattr(scriptqueue, "IDLE_SAMPLE", 0.0)
    free, timing = [100 * scriptqueue.SCRIPT_GPU_MB], [True]
    width = Width(4, memory=GpuMemory(lambda: free[0]), timing=lambda: timing[0])
    assert width._free()
    free[0] = 0.0
    assert not width._free()
    free[0] = 100 * scriptqueue.SCRIPT_GPU_MB
    assert not width._free()  # once short, through the turns
    timing[0] = False
    assert width._free()
    assert Width(4, timing=lambda: True)._free()  # no GPU memory to read


def test_the_scripts_places_are_recorded_with_what_held_a_script_back(monkeypatch: pytest.MonkeyPatch):
    """One H200 at 790df7f: after the last cell 14-15 scripts ran while 52 waited and 6-9 of 16 cores were idle, and
    nothing said whether the places, the GPU's memory or the timing turns held them back."""
    from harness.plugin import scriptqueue
    from harness.plugin.scriptqueue import GpuMemory, Width

    monkeypatch.setattr(scriptqueue, "IDLE_SAMPLE", 0.0)
    free, timing, idle = [100 * scriptqueue.SCRIPT_GPU_MB], [False], [8.0]
    width = Width(2, most=4, idle=lambda: idle[0], memory=GpuMemory(lambda: free[0]), timing=lambda: timing[0])
    width.running = 1
    assert width._free()
    free[0] = 100.0
    assert not width._free()
    timing[0] = True
    assert not width._free()
    said = [(one.running, one.places, one.idle_cores, one.gpu_free_mb, one.held) for one in width.readings]
    assert said == [(1, 3, 8.0, 409600, None), (1, 3, 8.0, 100, "memory"), (1, 3, 8.0, 100, "timing")]
    assert all(one.at > 1.7e9 for one in width.readings)


def test_the_gpus_free_memory_is_the_least_of_those_cuda_sees(monkeypatch: pytest.MonkeyPatch):
    import subprocess

    from harness.plugin.scriptqueue import free_gpu_mb

    table = "0, GPU-aaa, 70000\n1, GPU-bbb, 1200\n2, GPU-ccc, 30000\n"

    def smi(stdout: str, code: int = 0) -> Any:
        return lambda *args, **kwargs: subprocess.CompletedProcess(args, code, stdout, "")

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert free_gpu_mb(smi(table)) == 1200
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,2")
    assert free_gpu_mb(smi(table)) == 30000
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-aaa")
    assert free_gpu_mb(smi(table)) == 70000
    assert free_gpu_mb(smi(table, code=9)) is None
    assert free_gpu_mb(smi("No devices were found")) is None

    def missing(*args: Any, **kwargs: Any) -> Any:
        raise FileNotFoundError("nvidia-smi")

    assert free_gpu_mb(missing) is None


def test_no_early_script_starts_while_the_workers_are_in_their_timing_turns(tmp_path: Path):
    """From the first barrier to the last worker's device samples the GPU is wanted for timing (``wanting``): a
    script then starting would hold the lock shared, and one after another they held it 41-73 s (an 80 GB H100 at
    b3efeb5). Not before the barrier (the warm-ups leave the GPU to scripts), not once the timing has ended."""
    from harness.plugin.scriptqueue import SCRIPT_GPU_MB, GpuMemory, Width

    coordination = FileCoordination(tmp_path, 1, "1")
    seen: dict[str, bool] = {}

    class Watched(TimedFake):
        def ask(self, request: tuple[Any, ...], timeout: float) -> Any:
            seen[request[0]] = FileCoordination(tmp_path, 1).wanted(("0", "1"))
            return super().ask(request, timeout)

    timings, _ = timing_phase({"a-b-eager": 7}, Watched(Phase()), coordination, "w0")
    assert timings["a-b-eager"].timed
    assert seen == {"warm": False, "host": True, "prime": True, "time": True}
    assert not FileCoordination(tmp_path, 1).wanted(("0", "1"))
    with coordination.wanting():
        assert FileCoordination(tmp_path, 1).wanted(("1",)) and not FileCoordination(tmp_path, 1).wanted(("0",))
        memory = GpuMemory(lambda: 100 * SCRIPT_GPU_MB)
        memory.short = True  # a reading earlier in the run had no room
        width = Width(4, memory=memory, timing=lambda: FileCoordination(tmp_path, 1).wanted(("1",)))
        started, release, threads = held_scripts(width, "ab")
        time.sleep(0.3)
        assert started == []
    assert started_within(started, 2, 2) == 2
    released(release, threads)


def test_places_idle_cores_opened_stay_open_while_short_scripts_come_and_go(monkeypatch: pytest.MonkeyPatch):
    """One H200 at 790df7f: after the last cell 14-15 scripts of 4-7 s ran at once on 14 places while 6-8 of 16 cores
    were idle: each reading of idle cores let one script start, and the place closed when that script ended. A
    reading with cores to spare opens a place that stays until a reading finds the host busy."""
    from harness.execution.confirm import ScriptRun
    from harness.plugin import scriptqueue
    from harness.plugin.scriptqueue import ScriptQueue, Width

    monkeypatch.setattr(scriptqueue, "IDLE_SAMPLE", 0.2)
    idle, taken = [7.0], [time.monotonic()]

    def reading() -> float | None:  # as IdleCores: a new sample once per IDLE_SAMPLE
        if time.monotonic() - taken[0] < scriptqueue.IDLE_SAMPLE:
            return None
        taken[0] = time.monotonic()
        return idle[0]

    running, peak, lock = [0], [0], threading.Lock()

    def run(script: Path, limit: float) -> ScriptRun:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(random.uniform(0.2, 0.4))
        with lock:
            running[0] -= 1
        return ScriptRun.of(1, "", 0.3)

    width = Width(4, most=12, idle=reading)
    queue = ScriptQueue(width, 12, run)
    futures = [queue.submit(Path(f"s{n}"), 60.0, "eager", 1.0) for n in range(150)]
    deadline = time.monotonic() + 5
    while peak[0] < 12 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert peak[0] == 12  # up to ``most``, never beyond
    idle[0] = 0.0  # the host busy: the places close again, one per reading
    time.sleep(3.0)
    assert width.extra == 0
    for future in futures:
        future.result(30)
    queue.shutdown()
