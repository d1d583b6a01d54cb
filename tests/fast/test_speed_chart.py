"""The chart's speed section and ``which --fastest`` (issue 42 items 3 and 5): styles ranked per path, the slower
ones flagged beyond the dispersion, each cell's speedup against its own eager and ratio to the control, GB/s
against the GPU's copy bandwidth, and why nothing was timed on a CPU run."""

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
    ranked = lines[lines.index("fastest on compile (× the fastest style of each case, geometric mean):") + 1 :]
    assert [line.split()[1] for line in ranked] == ["control", "triton_op", "raw_jit", "custom_op"]
    assert (
        ranked[3] == "  4. custom_op 4.30× (1 cases, slower than the fastest beyond the dispersion on 1; 4.30× control)"
    )
