"""The chart's pictures, drawn from the records alone with matplotlib and written beside the chart (``pictures/``):
the grid of every style × path over all cases coloured by verdict (``status.png``); each style's GPU time (median,
the interquartile range as whiskers) and host time per call on the compiled path, every case (``compile.png``); and
per case and regime the same on every timed path (``speed-CASE-REGIME.png``), with pure PyTorch (the control) and,
at the bandwidth size, the GPU's copy-bandwidth limit as reference lines. ``grid`` and ``Point`` (harness/report/
speed.py) are the numbers both the tables and the pictures show; every artist carries a ``gid`` naming what it
plots, so a test reads the values back."""

from __future__ import annotations

import multiprocessing
import os
import re
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.report.marks import wrong_numbers
from harness.report.speed import BANDWIDTH, CONTROL, LAUNCH, TRAINING, Point
from harness.spec import CellId, Status

if TYPE_CHECKING:
    from harness.records.record import Record
    from harness.report.chart import Chart

FOLDER = "pictures"
DPI = 72
AT_ONCE_FROM = 4  # pictures from which ``write`` draws them in processes of their own, at once (one H200 run's 20
# took 15-20 s one after the other, on one core, after every cell had ended)
# verdict of a style and path over the cases -> (colour, what the legend says), worst first
KINDS = {
    "wrong": ("#c2185b", "wrong numbers (some case)"),
    "graph_break": ("#ff8f00", "kernel ran outside the compiled graph (some case)"),
    "blind": ("#7e57c2", "a subsystem ignored the kernel (some case)"),
    "fail": ("#ef9a9a", "no case passes"),
    "some": ("#dce775", "some cases pass"),
    "pass": ("#43a047", "every case passes"),
    "skip": ("#e0e0e0", "skipped"),
    "missing": ("#ffffff", "not recorded"),
}
WRAPPER_COLOURS = {"launcher": "#1f77b4", "triton_op": "#2ca02c", "custom_op": "#d62728", "control": "#555555"}


@dataclass(frozen=True)
class GridCell:
    """One style on one path over the cases: its kind (``KINDS``) and the text drawn in it (passing/run)."""

    kind: str
    text: str


def grid_cell(records: list[Record | None]) -> GridCell:
    """The kind and text of a style and path over its cases' records (None: not recorded)."""
    recorded = [r for r in records if r is not None]
    ran = [r for r in recorded if r.ran]
    if not recorded:
        return GridCell("missing", "")
    if not ran:
        return GridCell("skip", "skip")
    passing = sum(r.reliable_pass for r in ran)
    count = f"{passing}/{len(ran)}" + ("?" if any(r.flaky for r in ran) else "")
    if any(wrong_numbers(r) for r in ran):
        return GridCell("wrong", count)
    if any(Status.GRAPH_BREAK in r.attempts for r in ran):
        return GridCell("graph_break", count)
    if any(Status.BLIND in r.attempts for r in ran):
        return GridCell("blind", count)
    if passing == len(ran):
        return GridCell("pass", "" if len(ran) == len(records) else count)
    return GridCell("some" if passing else "fail", count)


def grid(chart: Chart) -> dict[tuple[str, str], GridCell]:
    """(style, path) -> its grid cell, for every style and path of the chart, over the chart's cases."""
    styles = [s for _, group in chart.style_groups for s in group]
    out = {}
    for style in styles:
        for path in chart.paths:
            ids = [str(CellId(case, style, path)) for case in chart.cases]
            ids = [i for i in ids if i in chart.cells or i in chart.expected_ids]
            out[style, path] = grid_cell([chart.cells.get(i) for i in ids]) if ids else GridCell("missing", "")
    return out


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def status_figure(chart: Chart) -> Any:
    """Styles as rows (grouped by wrapper), paths as columns (grouped), each cell coloured by its kind."""
    from matplotlib.colors import to_rgb
    from matplotlib.patches import Patch

    plt = _pyplot()
    cells = grid(chart)
    styles = [s for _, group in chart.style_groups for s in group]
    paths = [p for _, group in chart.path_groups for p in group]
    colours = [[to_rgb(KINDS[cells[s, p].kind][0]) for p in paths] for s in styles]
    width, height = 2.6 + 0.5 * len(paths), 2.9 + 0.28 * len(styles)
    fig, ax = plt.subplots(figsize=(width, height))
    fig.subplots_adjust(left=2.4 / width, right=1 - 0.2 / width, top=1 - 0.4 / height, bottom=2.5 / height)
    image = ax.imshow(colours, aspect="auto", interpolation="nearest")
    image.set_gid("status")
    for row, style in enumerate(styles):
        for column, path in enumerate(paths):
            cell = cells[style, path]
            if cell.text:
                white = cell.kind in ("wrong", "blind")
                style_of_text = {"color": "white", "fontweight": "bold"} if white else {"color": "black"}
                text = ax.text(column, row, cell.text, ha="center", va="center", fontsize=6.5, **style_of_text)
                text.set_gid(f"cell:{style}:{path}")
    ax.set_xticks(range(len(paths)), paths, rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(len(styles)), styles, fontsize=8)
    ax.set_xticks([x - 0.5 for x in range(len(paths) + 1)], minor=True)
    ax.set_yticks([y - 0.5 for y in range(len(styles) + 1)], minor=True)
    ax.grid(which="minor", color="white", linewidth=1.2)
    ax.tick_params(which="minor", length=0)
    _group_lines(ax, [len(g) for _, g in chart.style_groups], horizontal=True)
    _group_lines(ax, [len(g) for _, g in chart.path_groups], horizontal=False)
    used = [kind for kind in KINDS if any(c.kind == kind for c in cells.values())]
    handles = [Patch(facecolor=KINDS[k][0], edgecolor="#999999", label=KINDS[k][1]) for k in used]
    fig.legend(handles=handles, loc="lower center", ncol=4, fontsize=7, frameon=False)
    ax.set_title(f"{len(chart.cases)} case(s): cases passing / run, per style and path", fontsize=9)
    return fig


def _group_lines(ax: Any, sizes: list[int], horizontal: bool) -> None:
    edge = -0.5
    for size in sizes[:-1]:
        edge += size
        (ax.axhline if horizontal else ax.axvline)(edge, color="black", linewidth=1.6)


def _panel(ax: Any, on: list[Point], styles: list[str], wrapper: dict[str, str], limit: float | None) -> None:
    """One path (or case): per style a GPU median with its IQR whiskers and a hollow marker at its host time, one
    artist per wrapper and kind (``gpu:WRAPPER``, ``iqr:WRAPPER``, ``host:WRAPPER``: y is the style's row); the
    control's GPU time dashed (``control``), the copy-bandwidth limit dotted (``copy-limit``)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    by_style = {p.style: p for p in on}
    for name, colour in {**WRAPPER_COLOURS, "other": "#333333"}.items():
        mine = [(row, by_style[s]) for row, s in enumerate(styles) if s in by_style and _wrapper(s, wrapper) == name]
        if not mine:
            continue
        rows = [row for row, _ in mine]
        ax.hlines(rows, [p.low for _, p in mine], [p.high for _, p in mine], colors=colour, lw=1).set_gid(f"iqr:{name}")
        ax.plot([p.gpu_us for _, p in mine], rows, "o", ms=4, color=colour)[0].set_gid(f"gpu:{name}")
        hosts = [(row, p.host_us) for row, p in mine if p.host_us]
        if hosts:
            (host,) = ax.plot(
                [h for _, h in hosts], [row for row, _ in hosts], "D", ms=4, fillstyle="none", color=colour
            )
            host.set_gid(f"host:{name}")
    control = by_style.get(CONTROL)
    if control is not None:
        ax.axvline(control.gpu_us, color="#555555", ls="--", lw=0.8).set_gid("control")
    if limit:
        ax.axvline(limit, color="#e65100", ls=":", lw=1.0).set_gid("copy-limit")
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0), numticks=8))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_ylim(len(styles) - 0.5, -0.5)
    ax.grid(axis="x", color="#eeeeee", lw=0.5)
    ax.tick_params(labelsize=7)


def _wrapper(style: str, wrapper: dict[str, str]) -> str:
    return wrapper.get(style, "") if wrapper.get(style, "") in WRAPPER_COLOURS else "other"


def copy_limit(points: list[Point], copy_gbps: float | None) -> float | None:
    """The least µs a call of these points could take at the GPU's copy bandwidth (the bytes its case says it
    moves); None at the cell's own size, for a training step, or without the bandwidth."""
    moved = {p.bytes_moved for p in points if p.bytes_moved and p.path not in TRAINING}
    if not copy_gbps or len(moved) != 1 or points[0].regime != BANDWIDTH:
        return None
    return moved.pop() / (copy_gbps * 1e3)


def _legend(fig: Any) -> None:
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], marker="o", color="#333333", ls="none", label="GPU time per call (whiskers: IQR)"),
        Line2D([], [], marker="D", color="#333333", fillstyle="none", ls="none", label="host time per call"),
        Line2D([], [], color="#555555", ls="--", label="pure PyTorch (control), GPU"),
        Line2D([], [], color="#e65100", ls=":", label="copy-bandwidth limit"),
        *(Line2D([], [], color=c, lw=3, label=w) for w, c in WRAPPER_COLOURS.items()),
    ]
    fig.legend(handles=handles, loc="lower center", ncol=4, fontsize=7, frameon=False)


def speed_figure(title: str, panels: dict[str, list[Point]], styles: list[str], wrapper: dict[str, str],
                 copy_gbps: float | None, columns: int = 4) -> Any:  # fmt: skip
    """One panel per key of ``panels`` (a path, or a case), styles as rows, µs on a log scale."""
    plt = _pyplot()
    names = list(panels)
    rows = -(-len(names) // columns)
    width = min(columns, len(names))
    panel, gap, top, bottom, left = 0.3 + 0.16 * len(styles), 0.5, 0.55, 1.0, 2.0
    fig_width = left + 2.9 * width + 0.2
    fig_height = top + bottom + rows * panel + (rows - 1) * gap
    fig, axes = plt.subplots(rows, width, figsize=(fig_width, fig_height), squeeze=False, sharey=True)
    fig.subplots_adjust(left=left / fig_width, right=1 - 0.2 / fig_width, top=1 - top / fig_height,
                        bottom=bottom / fig_height, hspace=gap / panel, wspace=0.1)  # fmt: skip
    for index, ax in enumerate(axes.flat):
        if index >= len(names):
            ax.axis("off")
            continue
        on = panels[names[index]]
        _panel(ax, on, styles, wrapper, copy_limit(on, copy_gbps))
        ax.set_title(names[index], fontsize=8)
        ax.set_yticks(range(len(styles)), styles, fontsize=7)
    for ax in axes[-1]:
        ax.set_xlabel("µs per call", fontsize=7)
    fig.suptitle(title, fontsize=9)
    _legend(fig)
    return fig


def safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "-", name)


def speed_pictures(points: dict[str, list[Point]]) -> dict[str, dict[str, str]]:
    """case -> regime -> the picture's path relative to the chart."""
    out: dict[str, dict[str, str]] = {}
    for regime in (BANDWIDTH, LAUNCH):
        for case in dict.fromkeys(p.case for p in points[regime]):
            out.setdefault(case, {})[regime] = f"{FOLDER}/speed-{safe(case)}-{regime}.png"
    return out


def compiled_picture(path: str | None) -> str | None:
    return f"{FOLDER}/{safe(path)}.png" if path else None


@dataclass(frozen=True)
class Drawing:
    """A picture's figure function and its arguments: drawn in this process, or in another (it pickles)."""

    draw: Callable[..., Any]
    args: tuple[Any, ...]

    def __call__(self) -> Any:
        return self.draw(*self.args)


def figures(chart: Chart, points: dict[str, list[Point]], path: str | None) -> dict[str, Drawing]:
    """Every picture of the chart: its path relative to the chart -> its ``Drawing``."""
    styles = [s for _, group in chart.style_groups for s in group]
    wrapper = {s: w for w, group in chart.style_groups for s in group}
    copy = chart.env.get("copy_gbps")
    copy_gbps = float(copy) if isinstance(copy, int | float) else None
    device = chart.env.get("device") or "?"
    drawn = {f"{FOLDER}/status.png": Drawing(status_figure, (chart,))}
    for case, by_regime in speed_pictures(points).items():
        for regime, name in by_regime.items():
            on = [p for p in points[regime] if p.case == case]
            panels = {path: [p for p in on if p.path == path] for path in dict.fromkeys(p.path for p in on)}
            title = f"{case}, {regime}-bound ({device}): GPU and host time per call, per path"
            drawn[name] = Drawing(speed_figure, (title, panels, styles, wrapper, copy_gbps))
    name = compiled_picture(path)
    if name:
        panels = {
            f"{case} ({regime})": [p for p in points[regime] if p.case == case and p.path == path]
            for case in dict.fromkeys(p.case for regime in (BANDWIDTH, LAUNCH) for p in points[regime])
            for regime in (BANDWIDTH, LAUNCH)
        }
        panels = {key: on for key, on in panels.items() if on}
        title = f"`{path}`, every case ({device}): GPU and host time per call, bandwidth- and launch-bound"
        drawn[name] = Drawing(speed_figure, (title, panels, styles, wrapper, copy_gbps))
    return drawn


def write(drawn: dict[str, Drawing], folder: Path) -> list[Path]:
    """Draw and save each picture under ``folder`` (PNG, no timestamp or version in it: the same records give the
    same bytes); from ``AT_ONCE_FROM`` pictures on, in as many processes as the host has cores (a fork server that
    imported this module and matplotlib once)."""
    files = [folder / name for name in drawn]
    for file in files:
        file.parent.mkdir(parents=True, exist_ok=True)
    if len(drawn) < AT_ONCE_FROM:
        for file, drawing in zip(files, drawn.values(), strict=True):
            save(file, drawing)
        return files
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__, "matplotlib.pyplot"])
    with ProcessPoolExecutor(min(len(drawn), os.cpu_count() or 1), mp_context=context) as pool:
        list(pool.map(save, files, drawn.values()))
    return files


def save(file: Path, drawing: Drawing) -> None:
    """Draw one picture and write it to ``file``."""
    plt = _pyplot()
    fig = drawing()
    fig.savefig(file, dpi=DPI, metadata={"Software": None})
    plt.close(fig)
