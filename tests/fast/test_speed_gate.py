"""The gate's speed check (issue 42 item 4): time per regime. A planted 10% slowdown of a bandwidth-bound time
beyond the dispersion fails and names the cell with both medians and dispersions; same-commit noise passes; a
launch-bound pair as far apart as two runs of one commit read on an H100 (4.1 vs 104 µs) is reported, not failed,
unless --max-launch-slowdown; compile time and GPU memory have limits of their own; each limit is an option; a file
without timings (an older one) gates as before."""

import json
import random
from pathlib import Path

import pytest

from harness.cli import rerun
from harness.execution.machine import versions
from harness.records.record import Record
from harness.report.speedgate import EXCUSED, LAUNCH_TIME, Limits, Slowdown
from harness.spec import Measurements, Timing, TimingMethod, TimingState
from tests.conftest import make_record
from tests.fast.test_gate import results_file, run_gate

CELLS = [("add", "triton_op", "eager"), ("add", "custom_op", "compile"), ("sin", "raw_jit", "aoti_strict")]


LAUNCH_US = 4.1  # every cell's launch-bound time, unless a test gives its own


def timed(
    median: float,
    dispersion: float,
    bandwidth: Timing | None = None,
    method: TimingMethod = TimingMethod.EVENTS,
    call_mb: float | None = None,
    picked: tuple[str, ...] = (),
) -> Timing:
    return Timing(
        TimingState.TIMED, median_us=median, iqr_us=median * dispersion, dispersion=dispersion, samples=30,
        bandwidth=bandwidth, method=method, call_mb=call_mb, picked=picked,
    )  # fmt: skip


def run(
    path: Path,
    medians: dict[str, float],
    dispersion: float = 0.01,
    env: dict | None = None,
    launch: dict[str, float] | None = None,
    method: TimingMethod = TimingMethod.EVENTS,
    call_mb: tuple[float, float] | None = None,
    picked: dict[str, tuple[str, ...]] | None = None,
    picked_at_size: dict[str, tuple[str, ...]] | None = None,
    **measured,
) -> Path:
    """A results file of ``CELLS``, all passing, each with its bandwidth-bound median (µs; None: not timed at a
    bandwidth size), its launch-bound one (``launch``, default ``LAUNCH_US``, measured by ``method``), a warm call's
    GPU memory at each size (``call_mb``: bandwidth-bound, launch-bound), its autotuners' picks (``picked``; at the
    bandwidth size ``picked_at_size``) and ``measured`` measurements."""
    cells = []
    memory = call_mb or (None, None)
    for cell in CELLS:
        name = "-".join(cell)
        at_size = (picked_at_size or {}).get(name, ())
        bandwidth = None
        if medians.get(name) is not None:
            bandwidth = timed(medians[name], dispersion, call_mb=memory[0], picked=at_size)
        picks = (picked or {}).get(name, ())
        timing = timed((launch or {}).get(name, LAUNCH_US), 0.01, bandwidth, method, call_mb=memory[1], picked=picks)
        cells.append(make_record(*cell, status="pass", timing=timing, measurements=Measurements(**measured)))
    return results_file(path, cells, **(env or {}))


BASE = {"add-triton_op-eager": 40.0, "add-custom_op-compile": 130.0, "sin-raw_jit-aoti_strict": 1000.0}


def gate(tmp_path: Path, baseline: Path, current: Path, *options: str) -> tuple[int, str]:
    out = tmp_path / "gate.md"
    done = run_gate("--baseline", str(baseline), "--current", str(current), "--out", str(out), "--speed", *options)
    return done.returncode, out.read_text() if out.exists() else done.stderr


def test_a_planted_ten_percent_slowdown_beyond_the_dispersion_fails_and_names_the_cell(tmp_path: Path):
    baseline = run(tmp_path / "old.json", BASE)
    current = run(tmp_path / "new.json", {**BASE, "sin-raw_jit-aoti_strict": 1100.0})
    code, text = gate(tmp_path, baseline, current)
    assert code == 1 and "# Upgrade gate: FAIL" in text and "1 slower" in text
    rows = [line for line in text.splitlines() if line.startswith("| sin-")]
    assert [[part.strip() for part in row.strip("|").split("|")] for row in rows] == [
        ["sin-raw_jit-aoti_strict", "time (bandwidth-bound)", "1000 µs ±1.0%", "1100 µs ±1.0%", "+10.0%"]
    ]
    assert gate(tmp_path, baseline, current, "--max-slowdown", "0.12")[0] == 0  # the limit is an option
    rule = "- Bandwidth-bound time (each case's bandwidth size; 3 cells timed there in both runs): fails past +5%"
    assert rule in text


def test_a_bimodal_launch_bound_pair_is_reported_not_failed_unless_its_own_limit_is_given(tmp_path: Path):
    """Two runs of one commit on an H100: add-triton_op-eager read 4.1 µs, then 104 µs (docs/speed.md)."""
    baseline = run(tmp_path / "old.json", BASE)
    current = run(tmp_path / "new.json", BASE, launch={"add-triton_op-eager": 104.0})
    code, text = gate(tmp_path, baseline, current)
    assert code == 0 and "# Upgrade gate: PASS" in text and "slower" not in text.splitlines()[4]
    assert "- Launch-bound time (each cell's own size, the case's first): reported past +5% beyond both " in text
    reported = text[text.index("## Slower at the launch-bound size or in compile time (not gated") :]
    assert "| add-triton_op-eager | time (launch-bound) | 4.1 µs ±1.0% | 104 µs ±1.0% | +2436.6% |" in reported
    code, text = gate(tmp_path, baseline, current, "--max-launch-slowdown", "1.0")  # gated: fails past 2x
    assert code == 1 and "1 slower" in text and "launch-bound time +100%" in text
    assert gate(tmp_path, baseline, current, "--max-launch-slowdown", "30")[0] == 0  # 25x is inside 31x


def test_cells_without_a_bandwidth_timing_are_compared_launch_bound_only(tmp_path: Path):
    """A case that declares no bandwidth size (or a file from before the regimes): its launch-bound time is all
    there is, reported, not failed, under the defaults."""
    none = dict.fromkeys(BASE)
    baseline = run(tmp_path / "old.json", none)
    current = run(tmp_path / "new.json", none, launch={name: 1.1 * LAUNCH_US + 5 for name in BASE})
    code, text = gate(tmp_path, baseline, current)
    assert code == 0 and "0 cells timed there in both runs" in text and "3 measurements slower, not gated" in text
    assert gate(tmp_path, baseline, current, "--max-launch-slowdown", "0.05")[0] == 1


def test_launch_bound_times_measured_by_different_methods_are_not_compared(tmp_path: Path):
    """A baseline timed by CUDA events (3.5 µs: their floor included), a run timed by the kernels' durations: neither
    a slowdown nor a speed-up, whatever the limits; the gate says how many cells it left out."""
    baseline = run(tmp_path / "old.json", BASE, launch=dict.fromkeys(BASE, 3.5))
    kernels = {name: 10.0 for name in BASE}
    current = run(tmp_path / "new.json", BASE, launch=kernels, method=TimingMethod.KERNELS)
    code, text = gate(tmp_path, baseline, current, "--max-launch-slowdown", "0.05", "--rerun", "0")
    assert code == 0 and "# Upgrade gate: PASS" in text and "Slower" not in text
    assert "- Time measured by different methods in the two runs (3 cells: CUDA events around a call, or " in text
    same = run(tmp_path / "same.json", BASE, launch=dict.fromkeys(BASE, 3.5), method=TimingMethod.KERNELS)
    code, text = gate(tmp_path, same, current, "--max-launch-slowdown", "0.05", "--rerun", "0")  # one method: gated
    assert code == 1 and "3 slower" in text and "different methods" not in text


def test_a_launch_bound_time_timed_again_by_another_method_is_not_excused():
    before = Record.from_dict(make_record("add", "triton_op", "eager", status="pass", timing=timed(
        3.5, 0.01, method=TimingMethod.KERNELS)))  # fmt: skip
    again = Record.from_dict(make_record("add", "triton_op", "eager", status="pass", timing=timed(3.5, 0.01)))
    slow = Slowdown("add-triton_op-eager", LAUNCH_TIME, "3.5 µs", "10.0 µs", 1.86)
    limits = Limits(launch=0.05)
    assert rerun._measured_again(slow, before, before, again, limits) == slow
    kernels_again = Record.from_dict(make_record("add", "triton_op", "eager", status="pass", timing=timed(
        3.5, 0.01, method=TimingMethod.KERNELS)))  # fmt: skip
    assert rerun._measured_again(slow, before, before, kernels_again, limits).excused


def test_same_commit_noise_within_the_dispersion_passes(tmp_path: Path):
    rng = random.Random(0)
    baseline = run(tmp_path / "old.json", BASE, dispersion=0.04)
    for attempt in range(5):  # a second run of the same commit: each median moved within its noise
        jitter = {cell: median * (1 + rng.uniform(-0.04, 0.04)) for cell, median in BASE.items()}
        code, text = gate(tmp_path, baseline, run(tmp_path / f"again{attempt}.json", jitter, dispersion=0.04))
        assert code == 0 and "# Upgrade gate: PASS" in text and "Slower" not in text


def test_a_slowdown_inside_a_bandwidth_bound_cells_noise_passes(tmp_path: Path):
    baseline = run(tmp_path / "old.json", BASE, dispersion=0.2)
    current = run(tmp_path / "new.json", {**BASE, "add-triton_op-eager": 48.0}, dispersion=0.2)  # +20% < 40%
    assert gate(tmp_path, baseline, current)[0] == 0


@pytest.mark.parametrize(
    ("field", "was", "now", "option", "what"),
    [
        ("compile_seconds", 2.0, 2.4, "--max-compile-slowdown", "compile time"),  # +20% > 15%
        ("export_seconds", 2.0, 2.4, "--max-compile-slowdown", "export time"),
    ],
)
def test_compile_time_fails_past_its_own_limit(
    tmp_path: Path, field: str, was: float, now: float, option: str, what: str
):
    """Compile and export time are gated only when their limit is given (else reported: the run's cells share the
    compile caches)."""
    baseline = run(tmp_path / "old.json", BASE, **{field: was})
    code, text = gate(tmp_path, baseline, run(tmp_path / "new.json", BASE, **{field: now}), option, "0.15")
    assert code == 1 and f"| add-triton_op-eager     | {what}" in text
    assert gate(tmp_path, baseline, run(tmp_path / "new.json", BASE, **{field: now}), option, "0.3")[0] == 0
    small = run(tmp_path / "small.json", BASE, **{field: was * 1.1})  # +10%: inside the limit
    assert gate(tmp_path, baseline, small, option, "0.15")[0] == 0
    code, text = gate(tmp_path, baseline, run(tmp_path / "new.json", BASE, **{field: now}))
    reported = text[text.index("not gated: --max-launch-slowdown, --max-compile-slowdown") :]
    assert code == 0 and f"| add-triton_op-eager     | {what}" in reported
    assert "reported past +15%, never failing" in text


def test_a_warm_call_s_memory_is_gated_in_each_regime_and_the_cell_s_own_peak_is_not(tmp_path: Path):
    """A warm call's GPU memory fails past +20% at either size; the cell's own peak, which counts the 60 MiB flush
    buffer Inductor's benchmark allocates in whichever cell autotuned a kernel first, does not fail however it moves
    (two cold runs of one commit on an H200: 0.1 MiB and 60.1 MiB)."""
    baseline = run(tmp_path / "old.json", BASE, call_mb=(128.0, 1.5), gpu_peak_mb=0.1)
    autotuned_here = run(tmp_path / "cache.json", BASE, call_mb=(128.0, 1.5), gpu_peak_mb=60.1)
    code, text = gate(tmp_path, baseline, autotuned_here, "--rerun", "0")
    assert code == 0 and "| GPU memory" not in text and "no changes" in text
    assert "the cell's own peak, compiling and autotuning included, is not compared" in text
    for memory, what in (((160.0, 1.5), "bandwidth-bound"), ((128.0, 3.0), "launch-bound")):
        code, text = gate(tmp_path, baseline, run(tmp_path / "new.json", BASE, call_mb=memory), "--rerun", "0")
        assert code == 1 and f"| add-triton_op-eager     | GPU memory ({what})" in text
        code, text = gate(
            tmp_path, baseline, run(tmp_path / "new.json", BASE, call_mb=memory), "--max-memory-growth", "1.5"
        )
        assert code == 0
    inside = run(tmp_path / "small.json", BASE, call_mb=(140.0, 2.4))  # +9%, and +0.9 MiB: under the 1 MiB floor
    assert gate(tmp_path, baseline, inside, "--rerun", "0")[0] == 0


def test_files_without_timings_gate_as_before(tmp_path: Path):
    cells = [make_record(*cell, status="pass") for cell in CELLS]
    old = results_file(tmp_path / "old.json", cells)
    assert gate(tmp_path, old, run(tmp_path / "new.json", {cell: 9e9 for cell in BASE}))[0] == 0


def test_a_bad_limit_is_a_usage_error(tmp_path: Path):
    baseline = run(tmp_path / "old.json", BASE)
    code, text = gate(tmp_path, baseline, baseline, "--max-slowdown", "-1")
    assert code == 2 and "expected a fraction such as 0.05, got '-1'" in text


def test_a_slower_cell_timed_again_here_is_excused_when_it_is_fast_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Timed again in a run of its own up to ``--rerun`` times (default 2): a slowdown fails only when every re-run
    shows it. An autotuned cell's cold re-run may pick the baseline's config again (softmax: 54.7 or 66.0 µs)."""
    here = {"device": "cpu", "torch": versions()["torch"], "triton": versions()["triton"]}  # measured here
    baseline = run(tmp_path / "old.json", BASE, env=here)
    slow = {**BASE, "add-triton_op-eager": 44.0, "add-custom_op-compile": 143.0, "sin-raw_jit-aoti_strict": 1100.0}
    current = run(tmp_path / "new.json", slow, env=here)
    retimed = {  # per re-run: the first was noise; the second picked the slow config once, then the fast one
        "add-triton_op-eager": [40.2],
        "add-custom_op-compile": [143.5, 130.4],
        "sin-raw_jit-aoti_strict": [1102.0, 1099.0],
    }
    timed_again: list[list[str]] = []

    def run_cells(cells: list[str], results: object, matrix: str) -> dict[str, Record]:
        timed_again.append(cells)
        attempt = len(timed_again) - 1
        made = {
            cell: make_record(
                *cell.split("-"), status="pass", timing=timed(4.1, 0.01, timed(retimed[cell][attempt], 0.01))
            )
            for cell in cells
        }
        return {cell: Record.from_dict(record) for cell, record in made.items()}

    monkeypatch.setattr(rerun, "_run_cells", run_cells)
    code, text = gate(tmp_path, baseline, current)
    cells = ["add-triton_op-eager", "add-custom_op-compile", "sin-raw_jit-aoti_strict"]
    assert code == 1 and timed_again == [cells, cells[1:]]
    failing, excused = text.split(EXCUSED)
    what = "time (bandwidth-bound)"
    sin = f"| sin-raw_jit-aoti_strict | {what} | 1000 µs ±1.0% | 1100 µs ±1.0% | +10.0%   | 1102 µs ±1.0% / 1099 µs"
    assert sin in failing
    assert f"| add-triton_op-eager   | {what} | 40.0 µs ±1.0% | 44.0 µs ±1.0% | +10.0%   | 40.2 µs ±1.0%" in excused
    assert "| 144 µs ±1.0% / 130 µs ±1.0%" in excused and "add-custom_op-compile" not in failing
    assert "add-triton_op-eager" not in failing and "1 slower" in text
    timed_again.clear()
    code, text = gate(tmp_path, baseline, current, "--rerun", "1")  # timed again once: the picked one fails
    assert code == 1 and "add-custom_op-compile" in text.split(EXCUSED)[0] and timed_again == [cells]
    code, text = gate(tmp_path, baseline, current, "--rerun", "0")  # not timed again: all three fail
    assert code == 1 and EXCUSED not in text and "3 slower" in text and timed_again == [cells]


def test_speed_on_another_gpu_or_without_a_timing_phase_is_not_compared(tmp_path: Path):
    """A different GPU is not a slowdown; a baseline of an older harness (no timed cell) measured its compile time
    and memory otherwise: the gate says so and judges the verdicts alone."""
    baseline = run(tmp_path / "old.json", BASE, gpu_peak_mb=1.0)
    slower = {name: median * 2 for name, median in BASE.items()}
    elsewhere = run(tmp_path / "h100.json", slower, env={"device": "NVIDIA H100 80GB HBM3"}, gpu_peak_mb=256.0)
    code, text = gate(tmp_path, baseline, elsewhere)
    assert code == 0 and "Speed not compared: the baseline ran on NVIDIA H200, this run on NVIDIA H100" in text
    untimed = json.loads(baseline.read_text())
    for cell in untimed["cells"]:
        cell.pop("timing")
    (tmp_path / "untimed.json").write_text(json.dumps(untimed))
    code, text = gate(tmp_path, tmp_path / "untimed.json", run(tmp_path / "new.json", slower, gpu_peak_mb=256.0))
    assert code == 0 and "Speed not compared: the baseline run has no timed cell: an older harness, or --no" in text
    for name, env in (("cpu", {"device": "cpu"}), ("interpreted", {"device": "cpu", "triton_interpret": True})):
        both = [json.loads((tmp_path / "untimed.json").read_text()) for _ in range(2)]
        for index, data in enumerate(both):
            data["environment"].update(env)
            (tmp_path / f"{name}{index}.json").write_text(json.dumps(data))
        code, text = gate(tmp_path, tmp_path / f"{name}0.json", tmp_path / f"{name}1.json")
        why = "Triton's interpreter times nothing" if name == "interpreted" else "a CPU run times nothing"
        assert code == 0 and f"the baseline and current run has no timed cell: {why}" in text, text


def test_speed_is_gated_only_when_asked_for(tmp_path: Path):
    """Same-commit runs differ past their dispersions (a GPU run: 328 of 1,433 timed cells): off by default."""
    baseline = run(tmp_path / "old.json", BASE)
    current = run(tmp_path / "new.json", {**BASE, "sin-raw_jit-aoti_strict": 1100.0})
    out = tmp_path / "plain.md"
    done = run_gate("--baseline", str(baseline), "--current", str(current), "--out", str(out))
    assert done.returncode == 0 and "Speed not compared: not asked for (gate --speed)." in out.read_text()


@pytest.mark.parametrize("noisy", [False, True])
def test_a_compile_time_or_memory_growth_is_measured_again_here_before_it_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, noisy: bool
):
    here = {"device": "cpu", "torch": versions()["torch"], "triton": versions()["triton"], "cold_cache": True}
    baseline = run(tmp_path / "old.json", BASE, env=here, compile_seconds=1.2, call_mb=(10.0, 0.1))
    current = run(tmp_path / "new.json", BASE, env=here, compile_seconds=1.7, call_mb=(20.0, 0.1))
    again = {"add-triton_op-eager": (1.25, 20.0), "add-custom_op-compile": (1.7, 10.0)}  # else not re-run
    again.update({"sin-raw_jit-aoti_strict": (3.0, 20.0)} if noisy else {})
    asked: list[list[str]] = []

    def run_cells(cells: list[str], results: object, matrix: str) -> dict[str, Record]:
        asked.append(cells)
        made = {
            cell: make_record(
                *cell.split("-"),
                status="pass",
                timing=timed(4.1, 0.01, timed(BASE[cell], 0.01, call_mb=again[cell][1])),
                measurements=Measurements(compile_seconds=again[cell][0]),
            )
            for cell in cells
            if cell in again
        }
        return {cell: Record.from_dict(record) for cell, record in made.items()}

    monkeypatch.setattr(rerun, "_run_cells", run_cells)
    code, text = gate(tmp_path, baseline, current, "--max-compile-slowdown", "0.15", "--rerun", "1")  # once
    assert code == 1 and asked == [["add-triton_op-eager", "add-custom_op-compile", "sin-raw_jit-aoti_strict"]]
    failing, excused = (rows(part) for part in text.split(EXCUSED))
    assert ("add-triton_op-eager", "compile time", "1.2 s", "1.7 s", "+41.7%", "1.25 s") in excused
    assert ("add-triton_op-eager", "GPU memory (bandwidth-bound)", "10 MiB", "20 MiB", "+100.0%", "20 MiB") in failing
    assert ("add-custom_op-compile", "compile time", "1.2 s", "1.7 s", "+41.7%", "1.7 s") in failing
    assert ("add-custom_op-compile", "GPU memory (bandwidth-bound)", "10 MiB", "20 MiB", "+100.0%", "10 MiB") in excused
    if noisy:  # alone it compiled in 3.0 s: the run's two measurements lie 76% apart, the change is 41.7%
        assert ("sin-raw_jit-aoti_strict", "compile time", "1.2 s", "1.7 s", "+41.7%", "3 s") in excused
    else:  # its re-run measured nothing: it stands
        assert ("sin-raw_jit-aoti_strict", "compile time", "1.2 s", "1.7 s", "+41.7%", "—") in failing


def rows(markdown: str) -> list[tuple[str, ...]]:
    """The cells of each table row in ``markdown``, stripped."""
    return [tuple(cell.strip() for cell in line.strip("|").split("|")) for line in markdown.splitlines() if
            line.startswith("| ")]  # fmt: skip


def test_compile_times_from_a_cold_and_a_warm_cache_are_not_compared(tmp_path: Path):
    baseline = run(tmp_path / "old.json", BASE, env={"cold_cache": True}, compile_seconds=9.0)
    current = run(tmp_path / "new.json", BASE, env={"cold_cache": False}, compile_seconds=0.5)
    code, text = gate(tmp_path, current, baseline, "--rerun", "0")  # warm, then cold: 18x slower to compile
    assert code == 0 and "the baseline's caches were warm, this run's cold (an empty cache folder)" in text
    code, text = gate(tmp_path, baseline, run(tmp_path / "cold.json", BASE, env={"cold_cache": True},
                                              compile_seconds=18.0), "--rerun", "0",
                      "--max-compile-slowdown", "0.15")  # fmt: skip
    assert code == 1 and "compile time" in text


def test_a_slower_cell_whose_autotuner_picked_another_config_says_so(tmp_path: Path):
    """Autotuned kernels picked their config by a benchmark at the case's first size (7af17dc and before), where
    configs tie: between two cold runs of one commit a softmax read 54.7 or 66.0 µs at its bandwidth size. The gate
    still fails the cell, and names the configs each run timed, so that a reader tells a pick from a slower kernel."""
    was, now = (
        ("softmax_kernel (1000, 'torch.float32'): num_warps: 4",),
        ("softmax_kernel (1000, 'torch.float32'): num_warps: 8",),
    )
    baseline = run(tmp_path / "old.json", BASE, picked={"add-triton_op-eager": was, "sin-raw_jit-aoti_strict": was})
    slow = {**BASE, "add-triton_op-eager": 48.0, "sin-raw_jit-aoti_strict": 1100.0}
    current = run(tmp_path / "new.json", slow, picked={"add-triton_op-eager": now, "sin-raw_jit-aoti_strict": was})
    code, text = gate(tmp_path, baseline, current, "--rerun", "0")
    assert code == 1 and "2 slower" in text
    assert "1 of them ran configs their autotuners picked otherwise than in the baseline:" in text
    assert f"- `add-triton_op-eager`: {now[0]} (baseline: {was[0]})" in text
    assert "- `sin-raw_jit-aoti_strict`" not in text  # the same pick: a slower kernel


def test_a_bandwidth_bound_slowdown_names_the_configs_picked_at_that_size(tmp_path: Path):
    """Since the autotuners pick again at the bandwidth size, a timing there names its own picks: those are the
    ones the gate shows for a slower bandwidth-bound time, not the cell's own size's (a baseline of 7af17dc or
    before recorded one set, which stands for both)."""
    small = ("rmsnorm_kernel (1000, 'torch.float32'): num_warps: 4",)
    was, now = (
        ("rmsnorm_kernel (1000, 'torch.float32'): num_warps: 8",),
        ("rmsnorm_kernel (1000, 'torch.float32'): num_warps: 2",),
    )
    baseline = run(tmp_path / "old.json", BASE, picked={"add-triton_op-eager": small},
                   picked_at_size={"add-triton_op-eager": was})  # fmt: skip
    slow = {**BASE, "add-triton_op-eager": 48.0}
    current = run(tmp_path / "new.json", slow, picked={"add-triton_op-eager": small},
                  picked_at_size={"add-triton_op-eager": now})  # fmt: skip
    code, text = gate(tmp_path, baseline, current, "--rerun", "0")
    assert code == 1 and f"- `add-triton_op-eager`: {now[0]} (baseline: {was[0]})" in text
    older = run(tmp_path / "older.json", BASE, picked={"add-triton_op-eager": was})
    code, text = gate(tmp_path, older, current, "--rerun", "0")
    assert code == 1 and f"- `add-triton_op-eager`: {now[0]} (baseline: {was[0]})" in text
