"""How fast each style is, as the chart says it and draws it: styles ranked per path with the slow ones flagged
beyond the dispersion, the bandwidth-bound and the launch-bound regimes kept apart, the answer's per-case table
(the fastest style compiled, by how much, GPU or host time), the findings (compiled slower than eager, host time
apart, the control), ``which --fastest``, and the pictures: drawn from the same numbers as the tables (read back
from the figures), and changed by a planted change in the results."""

import dataclasses
import json
from pathlib import Path

import pytest

from harness.records.results import Results
from harness.report import answer, findings, pictures, speed
from harness.report.chart import chart_of, render, write_chart
from harness.spec import Timing, TimingState
from tests.conftest import harness_main, make_record, typed
from tests.fast.test_records_report import rows, section

# RMSNorm-like numbers: custom_op slow under compile, triton_op near the control
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
HOST = {"raw_jit": 40.0, "triton_op": 50.0, "custom_op": 150.0, "control": 20.0}


def timing(median: float, dispersion: float = 0.02, bytes_moved: int | None = None, host: float = 5.0) -> Timing:
    return Timing(
        TimingState.TIMED, median_us=median, iqr_us=median * dispersion, dispersion=dispersion, samples=30,
        host_us=host, bytes_moved=bytes_moved,
    )  # fmt: skip


def records(extra: list[dict] | None = None) -> list[dict]:
    cells = [
        make_record(*cell, status="pass", timing=timing(median, bytes_moved=3 * 4096 * 4, host=HOST[cell[1]]))
        for cell, median in MEDIANS.items()
    ]
    return cells + (extra or [])


def results(cells: list[dict], **env) -> Results:
    return typed({"schema": 3, "environment": {"device": "NVIDIA H200", **env}, "cells": cells})


def with_bandwidth(at_size: dict[str, float] | None = None) -> list[dict]:
    """``records()`` where each add cell was also timed at a bandwidth size of 16M floats, in an order of its own:
    custom_op the fastest there, the launcher (raw_jit) the slowest."""
    at_size = at_size or {"custom_op": 70.0, "triton_op": 72.0, "raw_jit": 90.0, "control": 71.0}
    cells = []
    for (case, style, path), launch in MEDIANS.items():
        bandwidth = Timing(
            TimingState.TIMED, median_us=at_size[style], iqr_us=at_size[style] * 0.01, dispersion=0.01, samples=30,
            host_us=6.0, bytes_moved=3 * 4 * (1 << 24), size=1 << 24,
        )  # fmt: skip
        timed = dataclasses.replace(timing(launch, bytes_moved=3 * 4096 * 4, host=HOST[style]), bandwidth=bandwidth)
        cells.append(make_record(case, style, path, status="pass", timing=timed))
    return cells


def test_styles_are_ranked_per_path_and_the_slow_ones_flagged():
    timings = speed.timed(results(records()).cells)
    ranks = speed.ranking(timings, "compile")
    assert [(r.style, round(r.relative, 3), r.slower, round(r.vs_control or 0, 3)) for r in ranks] == [
        ("control", 1.0, 0, 1.0),
        ("triton_op", round(39.5 / 30, 3), 1, round(39.5 / 30, 3)),
        ("raw_jit", round(40 / 30, 3), 1, round(40 / 30, 3)),
        ("custom_op", 4.3, 1, 4.3),
    ]
    among = speed.ranking(timings, "compile", styles=["triton_op", "custom_op"], among=True)
    assert [(r.style, round(r.relative, 3)) for r in among] == [("triton_op", 1.0), ("custom_op", round(129 / 39.5, 3))]


def test_a_difference_inside_the_dispersion_is_not_flagged():
    timings = speed.timed(results(records()).cells)
    timings[("add", "raw_jit", "compile")] = timing(40.0, dispersion=0.2)
    timings[("add", "triton_op", "compile")] = timing(39.5, dispersion=0.2)
    timings.pop(("add", "control", "compile"))
    ranks = {r.style: r for r in speed.ranking(timings, "compile")}
    assert ranks["raw_jit"].slower == 0 and ranks["custom_op"].slower == 1  # 1.3% inside 20% + 20%; 3.3× is not


def test_the_speed_section_tables_each_regime_apart():
    chart = render(results(with_bandwidth(), copy_gbps=3000.0))
    text = section(chart, "Speed")
    assert "The GPU's copy bandwidth (read + write), measured in this run: 3000 GB/s." in text
    bandwidth = text[text.index("Bandwidth-bound: each case's bandwidth size") : text.index("Launch-bound:")]
    launch = text[text.index("Launch-bound: each case's first size") :]
    gpu = {row[0]: row[1:] for row in rows(bandwidth.split("Host µs")[0])}
    assert gpu["`custom_op`"] == ["1.00×", "1.00×"] and gpu["`raw_jit`"][1] == f"{90 / 70:.2f}× 🐢1"
    gpu = {row[0]: row[1:] for row in rows(launch.split("Host µs")[0])}
    assert gpu["`control`"] == ["1.00×", "1.00×"] and gpu["`custom_op`"][1] == f"{129 / 30:.2f}× 🐢1"
    host = {row[0]: row[1:] for row in rows(launch.split("Host µs")[1])}
    assert host["`custom_op`"] == ["150", "150"] and host["`raw_jit`"] == ["40", "40"]
    assert "GPU time, launch-bound: CUDA events around one call" in text  # these records name no method
    assert "[launch-bound](pictures/speed-add-launch.png)" in text


def test_a_cpu_run_says_why_nothing_was_timed_and_an_older_file_has_no_section():
    reason = "on CPU: timing needs a CUDA GPU"
    cpu = [make_record("add", "control", "eager", status="pass", timing=Timing.not_timed(reason))]
    assert f"## Speed\n\nNot timed: {reason} (1 cells)." in render(results(cpu))
    assert "## Speed" not in render(results([make_record("add", "control", "eager", status="pass")]))


def test_the_answer_names_the_fastest_style_compiled_per_case_and_whether_gpu_or_host_time_sets_them_apart():
    chart = render(results(with_bandwidth()))
    table = rows(section(chart, "The answer").split("### Fastest on `compile`, per case")[1])
    header, add = table[0], dict(zip(table[0], table[1], strict=True))
    assert header[0] == "case" and add["case"] == "`add`"
    assert add["fastest: GPU µs at the bandwidth size"] == "70 `custom_op`"
    assert add["runner-up"] == "+3% `triton_op`" and add["slowest"] == "+29% `raw_jit`"
    assert add["pure PyTorch compiled"] == f"71 ({71 / 70:.2f}×)"
    assert add["host µs per call (own size): least - most"] == "40 `raw_jit` - 150 `custom_op`"
    assert add["the styles differ in"] == f"**host time** (GPU {90 / 70:.2f}×, host {150 / 40:.2f}×)"
    # the same GPU times, the host times alike: the styles differ in GPU time
    same_host = [dataclasses.replace(p, host_us=5.0) for p in speed.points(results(with_bandwidth()).cells, "launch")]
    bandwidth = speed.points(results(with_bandwidth()).cells, "bandwidth")
    row = rows("\n".join(answer.case_table(same_host, bandwidth)))[1]
    assert row[-1] == f"**GPU time** (GPU {90 / 70:.2f}×, host 1.00×)"


def test_the_findings_name_a_compiled_path_slower_than_eager_the_host_time_apart_and_the_control():
    chart = render(results(records()))
    found = section(chart, "Findings")
    # custom_op: 129 µs compiled against 120 µs eager, past 2% + 2%; the others are faster compiled
    assert (
        "`compile` (launch-bound): 2 of 4 cells slower (1.07-1.50× `eager`'s GPU time): `custom_op`, `control`" in found
    )
    assert "`compile` (launch-bound): 1 of 4 cells faster (0.33× `eager`'s GPU time): `triton_op`" in found
    assert "`compile`: `custom_op` 150 µs against `raw_jit`'s 40 µs (3.7×)" in found
    assert "**Compiled PyTorch matches or beats every kernel style** on `compile`" in found
    inside = records()
    for cell in inside:  # the same numbers inside a wide dispersion: no longer a finding
        cell["timing"]["dispersion"] = 0.5
    assert "slower (" not in section(render(results(inside)), "Findings")


def test_a_path_that_adds_gpu_work_says_what_it_adds():
    def kernels(path: str, names: tuple[str, ...], median: float) -> findings.Point:
        return speed.Point("add", "raw_jit", path, "launch", median, 0.0, 0.01, 30.0, names, None)

    eager = kernels("eager", ("add_kernel",), 1.0)
    graphs = kernels("cudagraphs", ("multi_tensor_apply_kernel", "add_kernel"), 2.3)
    lines = findings.speed_findings([eager, graphs], [])
    assert any("`cudagraphs` (launch-bound): 1 of 1 cells slower (2.30× `eager`'s GPU time); its call adds "
               "`multi_tensor_apply_kernel`: `raw_jit`" in line for line in lines)  # fmt: skip


def test_which_fastest_ranks_each_regime_apart_and_says_gpu_or_host(tmp_path: Path):
    file = tmp_path / "results.json"
    env = {"device": "NVIDIA H200", "goals": {"compile it": ["compile"]}, "axes": {"cases": ["add"]}}
    file.write_text(json.dumps({"schema": 3, "environment": env, "cells": with_bandwidth()}))
    done = harness_main("which", "--results", str(file), "--goals", "compile it", "--fastest")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    head = "fastest on compile ({}-bound; GPU time × the fastest of these styles on each case, geometric mean; host µs"
    at = next(n for n, line in enumerate(lines) if line.startswith(head.format("bandwidth")))
    assert [line.split()[1] for line in lines[at + 1 : at + 5]] == ["custom_op", "control", "triton_op", "raw_jit"]
    at = next(n for n, line in enumerate(lines) if line.startswith(head.format("launch")))
    assert [line.split()[1] for line in lines[at + 1 : at + 5]] == ["control", "triton_op", "raw_jit", "custom_op"]
    assert lines[at + 4] == (
        f"  4. custom_op {129 / 30:.2f}× (1 cases, slower than the fastest beyond the dispersion on 1; "
        f"{129 / 30:.2f}× control; host 150 µs per call)"
    )
    assert (
        lines[at + 5]
        == f"  they differ most in host time: GPU time {129 / 30:.2f}× apart, host time per call 7.50× apart"
    )


def _plotted(fig) -> dict[str, dict[str, float]]:
    """What a speed figure plots, read back from its artists: panel title -> "gpu:STYLE" / "host:STYLE" /
    "control" / "copy-limit" -> µs."""
    out = {}
    fig.canvas.draw()  # tick labels are set when drawn; the panels share the first column's
    labels = [tick.get_text() for tick in fig.axes[0].get_yticklabels()]
    for ax in fig.axes:
        if not ax.get_title():
            continue
        found = {}
        for line in ax.get_lines():
            gid = line.get_gid() or ""
            kind = gid.split(":")[0]
            if kind in ("gpu", "host"):
                for x, y in zip(line.get_xdata(), line.get_ydata(), strict=True):
                    found[f"{kind}:{labels[int(y)]}"] = float(x)
            elif gid in ("control", "copy-limit"):
                found[gid] = float(line.get_xdata()[0])
        out[ax.get_title()] = found
    return out


@pytest.fixture
def drawn():
    pytest.importorskip("matplotlib")
    made = []

    def draw(cells: list[dict], **env):
        chart = chart_of(results(cells, **env))
        figures = pictures.figures(chart, chart.points, chart.compiled_path)
        made.extend(figure() for figure in figures.values())
        return figures, made[-len(figures) :]

    yield draw
    import matplotlib.pyplot as plt

    for fig in made:
        plt.close(fig)


def test_the_speed_pictures_plot_the_numbers_the_tables_show(drawn):
    figures, figs = drawn(with_bandwidth(), copy_gbps=3000.0)
    names = list(figures)
    assert names == ["pictures/status.png", "pictures/speed-add-bandwidth.png", "pictures/speed-add-launch.png",
                     "pictures/compile.png"]  # fmt: skip
    launch = _plotted(figs[2])
    assert launch["compile"] == {
        "gpu:raw_jit": 40.0, "gpu:triton_op": 39.5, "gpu:custom_op": 129.0, "gpu:control": 30.0,
        "host:raw_jit": 40.0, "host:triton_op": 50.0, "host:custom_op": 150.0, "host:control": 20.0, "control": 30.0,
    }  # fmt: skip
    bandwidth = _plotted(figs[1])["eager"]
    assert bandwidth["gpu:custom_op"] == 70.0 and bandwidth["control"] == 71.0
    assert bandwidth["copy-limit"] == pytest.approx(3 * 4 * (1 << 24) / 3000e3)  # bytes / copy bandwidth, in µs
    compiled = _plotted(figs[3])
    assert compiled["add (bandwidth)"]["gpu:custom_op"] == 70.0 and compiled["add (launch)"]["gpu:custom_op"] == 129.0
    # the chart's per-case table shows the very numbers plotted
    chart = render(results(with_bandwidth(), copy_gbps=3000.0))
    row = rows(section(chart, "The answer").split("### Fastest on `compile`, per case")[1])[1]
    assert row[1] == f"{compiled['add (bandwidth)']['gpu:custom_op']:.3g} `custom_op`"


def test_a_planted_change_in_the_results_changes_the_pictures(drawn, tmp_path: Path):
    before, after = tmp_path / "before" / "matrix.md", tmp_path / "after" / "matrix.md"
    write_chart(results(with_bandwidth()), before)
    planted = with_bandwidth({"custom_op": 77.0, "triton_op": 72.0, "raw_jit": 90.0, "control": 71.0})
    write_chart(results(planted), after)
    same = {p.name for p in (before.parent / "pictures").iterdir()
            if (after.parent / "pictures" / p.name).read_bytes() == p.read_bytes()}  # fmt: skip
    assert same == {"status.png", "speed-add-launch.png"}  # only the bandwidth-bound pictures changed
    write_chart(results(with_bandwidth()), after)
    assert (after.parent / "pictures" / "compile.png").read_bytes() == (
        before.parent / "pictures" / "compile.png"
    ).read_bytes()
    _, figs = drawn(planted)
    assert _plotted(figs[1])["eager"]["gpu:custom_op"] == 77.0


def test_the_status_grid_colours_each_style_and_path_as_the_summary_marks_it(drawn):
    from matplotlib.colors import to_rgb

    cells = [
        make_record("add", "raw_jit", "eager", status="pass"),
        make_record("sin", "raw_jit", "eager", status="pass"),
        make_record("add", "raw_jit", "compile", status="wrong", error_type="Mismatch", error="out", stage="compare"),
        make_record("sin", "raw_jit", "compile", status="pass"),
        make_record("add", "triton_op", "eager", status="error", error_type="E", error="boom", stage="run"),
        make_record("sin", "triton_op", "eager", status="error", error_type="E", error="boom", stage="run"),
        make_record("add", "triton_op", "compile", status="graph_break", reason="x"),
        make_record("sin", "triton_op", "compile", status="pass"),
    ]
    chart = chart_of(results(cells))
    grid = pictures.grid(chart)
    assert {key: (cell.kind, cell.text) for key, cell in grid.items()} == {
        ("raw_jit", "eager"): ("pass", ""),
        ("raw_jit", "compile"): ("wrong", "1/2"),
        ("triton_op", "eager"): ("fail", "0/2"),
        ("triton_op", "compile"): ("graph_break", "1/2"),
    }
    _, figs = drawn(cells)
    image = next(artist for artist in figs[0].axes[0].get_images() if artist.get_gid() == "status")
    colours = image.get_array()
    styles = [t.get_text() for t in figs[0].axes[0].get_yticklabels()]
    paths = [t.get_text() for t in figs[0].axes[0].get_xticklabels()]
    for (style, path), cell in grid.items():
        shown = tuple(float(c) for c in colours[styles.index(style)][paths.index(path)][:3])
        assert shown == pytest.approx(to_rgb(pictures.KINDS[cell.kind][0]))


def test_the_speed_section_says_how_each_method_measured():
    from harness.spec import TimingMethod

    profiled = records()
    for cell in profiled:
        cell["timing"]["method"] = str(TimingMethod.KERNELS)
    text = section(render(results(profiled)), "Speed")
    said = (
        "GPU time, launch-bound: the sum of the durations of the GPU work of one call (kernels, copies), from the "
        "profiler (CUPTI), L2 not flushed."
    )
    assert said in " ".join(text.split())


def test_pictures_drawn_at_once_in_other_processes_are_the_bytes_drawn_here(tmp_path: Path):
    """From ``AT_ONCE_FROM`` pictures on, ``write`` draws them in processes of its own: the same files, byte for
    byte, as drawing each in this process."""
    pytest.importorskip("matplotlib")
    chart = chart_of(results(with_bandwidth(), copy_gbps=3000.0))
    drawn = pictures.figures(chart, chart.points, chart.compiled_path)
    assert len(drawn) >= pictures.AT_ONCE_FROM
    at_once = pictures.write(drawn, tmp_path / "at_once")
    for name, drawing in drawn.items():
        pictures.save(tmp_path / "here.png", drawing)
        assert (tmp_path / "at_once" / name).read_bytes() == (tmp_path / "here.png").read_bytes(), name
    assert at_once == [tmp_path / "at_once" / name for name in drawn]
