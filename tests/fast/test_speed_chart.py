"""The chart's speed section and ``which --fastest`` (issue 42 items 3 and 5): styles ranked per path, the slower
ones flagged beyond the dispersion, each cell's speedup against its own eager and ratio to the control, GB/s
against the GPU's copy bandwidth, the bandwidth-bound and the launch-bound regimes kept apart (the launch-bound
with its host time), and why nothing was timed on a CPU run."""

import dataclasses
import json
from pathlib import Path

from harness.records.results import Results
from harness.report import speed
from harness.report.chart import render
from harness.spec import Timing, TimingState
from tests.conftest import harness_main, make_record, typed

# the probe of issue 42: RMSNorm-like numbers, custom_op slow under compile, triton_op near the control
MEDIANS = {
    ("add", "raw_jit", "eager"): 57.0,
    ("add", "triton_op", "eager"): 118.0,
    ("add", "custom_op", "eager"): 120.0,
    ("add", "control", "eager"): 20.0,
    ("add", "triton_op", "compile"): 39.5,
    ("add", "custom_op", "compile"): 129.0,
    ("add", "raw_jit", "compile"): 40.0,
    ("add", "control", "compile"): 30.0,
}


def timing(median: float, dispersion: float = 0.02, bytes_moved: int | None = None) -> Timing:
    return Timing(
        TimingState.TIMED, median_us=median, dispersion=dispersion, samples=30, host_us=5.0, bytes_moved=bytes_moved
    )


def records(extra: list[dict] | None = None) -> list[dict]:
    cells = [
        make_record(*cell, status="pass", timing=timing(median, bytes_moved=3 * 4096 * 4))
        for cell, median in MEDIANS.items()
    ]
    return cells + (extra or [])


def results(cells: list[dict], **env) -> Results:
    return typed({"schema": 3, "environment": {"device": "NVIDIA H200", **env}, "cells": cells})


def test_styles_are_ranked_per_path_and_the_slow_ones_flagged():
    timings = speed.timed(results(records()).cells)
    ranks = speed.ranking(timings, "compile")
    assert [(r.style, round(r.relative, 3), r.slower, round(r.vs_control or 0, 3)) for r in ranks] == [
        ("control", 1.0, 0, 1.0),
        ("triton_op", round(39.5 / 30, 3), 1, round(39.5 / 30, 3)),
        ("raw_jit", round(40 / 30, 3), 1, round(40 / 30, 3)),
        ("custom_op", 4.3, 1, 4.3),
    ]
    assert [r.style for r in speed.ranking(timings, "compile", styles={"triton_op", "custom_op"})] == [
        "triton_op",
        "custom_op",
    ]


def test_a_difference_inside_the_dispersion_is_not_flagged():
    timings = speed.timed(results(records()).cells)
    timings[("add", "raw_jit", "compile")] = timing(40.0, dispersion=0.2)
    timings[("add", "triton_op", "compile")] = timing(39.5, dispersion=0.2)
    timings.pop(("add", "control", "compile"))
    row = speed.cell_row(("add", "raw_jit", "compile"), timings, None)
    assert row[-1] == ""  # 1.3% slower than triton_op, inside 20% + 20%


def test_a_cells_row_has_its_speedup_against_eager_its_ratio_to_the_control_and_gbps():
    timings = speed.timed(results(records()).cells)
    row = speed.cell_row(("add", "triton_op", "compile"), timings, copy_gbps=3000.0)
    gbps = 3 * 4096 * 4 / 39.5e-6 / 1e9
    assert row == [
        "add-triton_op-compile",
        "39.5 µs ±2.0%",
        "5",
        f"{118 / 39.5:.2f}×",
        f"{39.5 / 30:.2f}×",
        f"{gbps:.1f} ({100 * gbps / 3000:.0f}%)",
        speed.SLOW,
    ]


def test_the_chart_has_the_speed_section():
    chart = render(results(records(), copy_gbps=3000.0))
    text = chart[chart.index("## Speed") :]
    assert "GPU copy bandwidth (read + write), measured in this run: 3000 GB/s." in text
    compile_table = text[text.index("### compile") : text.index("### compile") + 600]
    assert compile_table.index("`control`") < compile_table.index("`triton_op`") < compile_table.index("`custom_op`")
    assert "| add-custom_op-compile" in text and "8 cells timed" in text


def test_a_cpu_run_says_why_nothing_was_timed_and_an_older_file_has_no_section():
    reason = "on CPU: timing needs a CUDA GPU"
    cpu = [make_record("add", "control", "eager", status="pass", timing=Timing.not_timed(reason))]
    assert f"## Speed\n\nNot timed: {reason} (1 cells)." in render(results(cpu))
    assert "## Speed" not in render(results([make_record("add", "control", "eager", status="pass")]))


def test_which_fastest_ranks_the_styles_that_meet_the_goals(tmp_path: Path):
    file = tmp_path / "results.json"
    goals = {"compile it": ["compile"]}
    env = {"device": "NVIDIA H200", "goals": goals, "axes": {"cases": ["add"], "paths": ["eager", "compile"]}}
    file.write_text(json.dumps({"schema": 3, "environment": env, "cells": records()}))
    done = harness_main("which", "--results", str(file), "--goals", "compile it", "--fastest")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    head = "fastest on compile (launch-bound; × the fastest style of each case, geometric mean):"
    ranked = lines[lines.index(head) + 1 :]
    assert [line.split()[1] for line in ranked] == ["control", "triton_op", "raw_jit", "custom_op"]
    assert ranked[3] == (
        "  4. custom_op 4.30× (1 cases, slower than the fastest beyond the dispersion on 1; 4.30× control; host 5 µs "
        "per call)"
    )
    assert not any("bandwidth-bound" in line for line in lines)  # no case has a bandwidth size here


def with_bandwidth() -> list[dict]:
    """``records()`` where each add cell was also timed at a bandwidth size of 16M floats, in an order of its own:
    custom_op the fastest there, the launcher (raw_jit) the slowest."""
    at_size = {"custom_op": 70.0, "triton_op": 72.0, "raw_jit": 90.0, "control": 71.0}
    cells = []
    for (case, style, path), launch in MEDIANS.items():
        bandwidth = Timing(
            TimingState.TIMED, median_us=at_size[style], dispersion=0.01, samples=30, host_us=6.0,
            bytes_moved=3 * 4 * (1 << 24), size=1 << 24,
        )  # fmt: skip
        timed = dataclasses.replace(timing(launch, bytes_moved=3 * 4096 * 4), bandwidth=bandwidth)
        cells.append(make_record(case, style, path, status="pass", timing=timed))
    return cells


def test_the_chart_keeps_the_bandwidth_bound_and_the_launch_bound_regimes_apart():
    chart = render(results(with_bandwidth(), copy_gbps=3000.0))
    text = chart[chart.index("## Speed") :]
    bandwidth = text[text.index("### Bandwidth-bound: each case's bandwidth size") : text.index("### Launch-bound")]
    launch = text[text.index("### Launch-bound: each case's first size") :]
    ranked = bandwidth[bandwidth.index("#### compile (bandwidth-bound)") :]
    assert ranked.index("`custom_op`") < ranked.index("`control`") < ranked.index("`raw_jit`")
    assert "| add-custom_op-compile | 16777216 | 70.0 µs ±1.0% |" in bandwidth
    gbps = 3 * 4 * (1 << 24) / 70e-6 / 1e9
    assert f"{gbps:.1f} ({100 * gbps / 3000:.0f}%)" in bandwidth  # GB/s where the call is bandwidth-bound
    assert "the launch covered" in launch and "host µs" in launch.splitlines()[4 + 2]  # beside each
    ranked = launch[launch.index("#### compile (launch-bound)") :]
    assert ranked.index("`control`") < ranked.index("`triton_op`") < ranked.index("`custom_op`")
    assert "GB/s" not in launch and "8 cells timed (launch-bound)" in launch


def test_which_fastest_ranks_each_regime_apart(tmp_path: Path):
    file = tmp_path / "results.json"
    env = {"device": "NVIDIA H200", "goals": {"compile it": ["compile"]}, "axes": {"cases": ["add"]}}
    file.write_text(json.dumps({"schema": 3, "environment": env, "cells": with_bandwidth()}))
    done = harness_main("which", "--results", str(file), "--goals", "compile it", "--fastest")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    at = lines.index("fastest on compile (bandwidth-bound; × the fastest style of each case, geometric mean):")
    assert [line.split()[1] for line in lines[at + 1 : at + 5]] == ["custom_op", "control", "triton_op", "raw_jit"]
    assert "host" not in lines[at + 1]  # the host time is shown with the launch-bound regime
    at = lines.index("fastest on compile (launch-bound; × the fastest style of each case, geometric mean):")
    assert [line.split()[1] for line in lines[at + 1 : at + 5]] == ["control", "triton_op", "raw_jit", "custom_op"]
