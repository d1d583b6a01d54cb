"""How fast each style is, in two regimes kept apart: at each case's bandwidth size (bandwidth-bound, where the case
declares one) and at each cell's own size (the case's first: launch-bound, where the host's time per call is what
bounds a call and the GPU's own work is a few kernels). The numbers every speed table, finding and picture of the
chart reads (``Point``: one timed cell in one regime), the ranking of the styles on a path, and the chart's speed
section: one table per regime of each style's time relative to the fastest style of each case, per path, the host
time per call beside it, and the pictures (harness/report/pictures.py) linked per case."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from tabulate import tabulate

from harness.records.record import Record
from harness.report.blocks import details
from harness.report.marks import escape, wrap
from harness.spec import Status, Timing, TimingMethod, TimingState
from harness.timing import slower

CONTROL, EAGER = "control", "eager"
TRAINING = ("train_eager", "train_compile")  # a step is forward and backward: no forward bytes per call
SLOW = "🐢"  # slower than the path's fastest style beyond both dispersions

LAUNCH, BANDWIDTH = "launch", "bandwidth"  # the regimes: the cell's own size, the case's bandwidth size
REGIMES = {
    BANDWIDTH: "Bandwidth-bound: each case's bandwidth size",
    LAUNCH: "Launch-bound: each case's first size",
}
METHODS = {  # how a device time was measured (Timing.method)
    TimingMethod.KERNELS: "the sum of the durations of the GPU work of one call (kernels, copies), from the profiler "
    "(CUPTI), L2 not flushed",
    TimingMethod.EVENTS: "CUDA events around one call, the GPU kept busy before it so that the host's launch is "
    "covered, L2 flushed",
}


def timed(cells: Iterable[Record], regime: str = LAUNCH) -> dict[tuple[str, str, str], Timing]:
    """(case, style, path) -> the timing in ``regime`` of each passing cell timed in it (a call that ran no GPU work,
    0 µs, has no GPU time to compare: left out)."""
    out = {}
    for r in cells:
        timing = r.timing if r.timing is None or regime == LAUNCH else r.timing.bandwidth
        if r.status == Status.PASS and timing is not None and timing.timed and median(timing) > 0:
            out[r.cell_id] = timing
    return out


def median(timing: Timing) -> float:
    assert timing.median_us is not None
    return timing.median_us


def method(timing: Timing) -> str:
    """How the timing's device time was measured (harness/spec.py ``TimingMethod``)."""
    return str(timing.method)


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(value) for value in values) / len(values))


@dataclass(frozen=True)
class Point:
    """One timed cell in one regime, as every table, finding and picture shows it: the GPU's time per call (median,
    and the interquartile range around it), the host's time per call, the GPU work one call launched (how many
    kernels and copies, by name, where the profiler measured it) and the bytes the case says it moves."""

    case: str
    style: str
    path: str
    regime: str
    gpu_us: float
    iqr_us: float
    dispersion: float
    host_us: float | None
    kernel_names: tuple[str, ...]
    bytes_moved: int | None

    def slower(self, other: Point, threshold: float = 0.0) -> float | None:
        """How much slower than ``other`` this GPU time is, past ``threshold`` and both dispersions
        (harness/timing.py ``slower``); else None."""
        as_timing = [Timing(TimingState.TIMED, median_us=p.gpu_us, dispersion=p.dispersion) for p in (self, other)]
        return slower(*as_timing, threshold)

    @property
    def low(self) -> float:
        return max(self.gpu_us - self.iqr_us / 2, 0.0)

    @property
    def high(self) -> float:
        return self.gpu_us + self.iqr_us / 2


def points(cells: Iterable[Record], regime: str) -> list[Point]:
    """Every passing cell timed in ``regime``, in the records' order."""
    out = []
    for (case, style, path), t in timed(cells, regime).items():
        out.append(
            Point(
                case, style, path, regime, median(t), t.iqr_us or 0.0, t.dispersion or 0.0, t.host_us,
                tuple(t.kernel_names or ()), t.bytes_moved,
            )
        )  # fmt: skip
    return out


@dataclass(frozen=True)
class Rank:
    """A style on one path: its time relative to each case's fastest style (geometric mean), over how many cases,
    on how many it is slower than the fastest beyond the dispersions, its geometric mean ratio to the control
    (None where the control was not timed), and the geometric mean of its host µs per call (None: none timed)."""

    style: str
    relative: float
    cases: int
    slower: int
    vs_control: float | None
    host_us: float | None = None


def fastest(
    timings: dict[tuple[str, str, str], Timing], path: str, among: Iterable[str] | None = None
) -> dict[str, tuple[str, Timing]]:
    """case -> (style, timing) of its fastest style on ``path`` (of ``among`` when given)."""
    chosen = None if among is None else set(among)
    best: dict[str, tuple[str, Timing]] = {}
    for (case, style, on), timing in timings.items():
        if on != path or (chosen is not None and style not in chosen):
            continue
        if case not in best or median(timing) < median(best[case][1]):
            best[case] = (style, timing)
    return best


def ranking(
    timings: dict[tuple[str, str, str], Timing], path: str, styles: Iterable[str] | None = None, among: bool = False
) -> list[Rank]:
    """The styles timed on ``path`` (only ``styles`` when given), fastest first; relative to each case's fastest
    style of all, or of ``styles`` alone with ``among``."""
    chosen = None if styles is None else list(styles)
    best = fastest(timings, path, chosen if among else None)
    by_style: dict[str, list[tuple[str, Timing]]] = {}
    for (case, style, on), timing in timings.items():
        if on == path and (chosen is None or style in chosen):
            by_style.setdefault(style, []).append((case, timing))
    ranks = []
    for style, runs in by_style.items():
        control = [median(t) / median(timings[(c, CONTROL, path)]) for c, t in runs if (c, CONTROL, path) in timings]
        host = [t.host_us for _, t in runs if t.host_us]
        ranks.append(
            Rank(
                style,
                geomean([median(t) / median(best[c][1]) for c, t in runs]),
                len(runs),
                sum(slower(t, best[c][1]) is not None for c, t in runs),
                geomean(control) if control else None,
                geomean(host) if host else None,
            )
        )
    return sorted(ranks, key=lambda rank: (rank.relative, rank.style))


@dataclass(frozen=True)
class Speed:
    """How a goal's answering styles compare: on which path and regime, each one's rank (None: not timed)."""

    path: str
    regime: str
    ranks: dict[str, Rank]


def goal_speed(cells: list[Record], paths: list[str], styles: list[str]) -> Speed | None:
    """The answering ``styles`` ranked on the goal's first timed path: GPU time at the bandwidth size where timed
    there, else at the cell's own size, relative to the fastest of them on each case."""
    for path in paths:
        for regime in (BANDWIDTH, LAUNCH):
            ranks = ranking(timed(cells, regime), path, styles, among=True)
            if ranks:
                return Speed(path, regime, {r.style: r for r in ranks})
    return None


def ratio(value: float | None) -> str:
    return f"{value:.2f}×" if value is not None else "—"


def us(value: float | None) -> str:
    """``3.68``, ``52.8``, ``166``: µs with three significant digits."""
    if value is None:
        return "—"
    return f"{value:.3g}" if value < 1000 else f"{value:.0f}"


def section(cells: list[Record], environment: dict[str, object], pictures: dict[str, dict[str, str]]) -> list[str]:
    """The chart's speed section: how each regime was measured; per regime a table of each style's time relative
    to the fastest style of each case, path by path (and, launch-bound, its host time per call); the pictures of
    each case; why the cells not timed were not. Where nothing was timed, why; nothing for a run with no timing."""
    timings = {regime: timed(cells, regime) for regime in REGIMES}
    reasons = Counter(r.timing.reason for r in cells if r.timing is not None and not r.timing.timed)
    if not timings[LAUNCH]:
        if not reasons:
            return []
        why = "; ".join(f"{escape(str(reason), 200)} ({n} cells)" for reason, n in reasons.most_common(3))
        return ["## Speed", "", f"Not timed: {why}.", ""]
    copy = environment.get("copy_gbps")
    out = ["## Speed", ""]
    out += wrap(
        "Each passing cell is timed after the last cell ran, the GPU to one process at a time: the median of up to "
        "30 calls after 5 warm-ups, outliers beyond 1.5 IQR left out (± and the pictures' whiskers: the interquartile "
        "range). Host time per call: the host's clock around one call, the GPU waited for after it, but not inside "
        "it. × fastest: the geometric mean over the cases of the style's GPU time over the case's fastest style's on "
        f"that path (1.00× is the fastest on every case); {SLOW}: cases where it is slower than that fastest beyond "
        "both dispersions.",
        "",
    )
    out.append("")
    out += [f"- {line}" for line in _methods(timings)]
    if isinstance(copy, int | float):
        out.append(f"- The GPU's copy bandwidth (read + write), measured in this run: {copy:.0f} GB/s.")
    out.append("")
    out += _picture_table(pictures)
    for regime, heading in REGIMES.items():
        if timings[regime]:
            out += _regime_table(regime, heading, timings[regime])
    not_there = Counter(
        r.timing.bandwidth.reason for r in cells if r.timing and r.timing.bandwidth and not r.timing.bandwidth.timed
    )
    for counted, what in ((reasons, "passing cells not timed"), (not_there, "cells not timed at the bandwidth size")):
        if counted:
            lines = [f"- {escape(str(reason), 300)}: {n}" for reason, n in counted.most_common()]
            out += details(f"{sum(counted.values())} {what}, by reason", lines)
    return out


def _methods(timings: dict[str, dict[tuple[str, str, str], Timing]]) -> list[str]:
    """How each regime's GPU time was measured, from its timings' methods."""
    out = []
    for regime, by_cell in timings.items():
        used = Counter(method(t) for t in by_cell.values())
        if used:
            how = "; ".join(f"{METHODS[m]} ({n} cells)" if len(used) > 1 else METHODS[m] for m, n in used.items())
            out.append(f"GPU time, {regime}-bound: {how}.")
    return out


def _picture_table(pictures: dict[str, dict[str, str]]) -> list[str]:
    """One row per case: its pictures, one per regime (each style's GPU and host time on every path)."""
    if not pictures:
        return []
    regimes = [regime for regime in REGIMES if any(regime in by_regime for by_regime in pictures.values())]
    rows = [
        [f"`{case}`", *(f"[{regime}-bound]({by_regime[regime]})" if regime in by_regime else "—" for regime in regimes)]
        for case, by_regime in pictures.items()
    ]
    text = tabulate(rows, headers=["case", *(f"{regime}-bound" for regime in regimes)], tablefmt="github")
    return ["Pictures of each case: every style's GPU and host time per call on every path.", "", text, ""]


def _regime_table(regime: str, heading: str, timings: dict[tuple[str, str, str], Timing]) -> list[str]:
    """Styles as rows, paths as columns: × fastest (and the slower count), then the host µs per call."""
    paths = list(dict.fromkeys(path for _, _, path in timings))
    ranks = {path: {r.style: r for r in ranking(timings, path)} for path in paths}
    styles = list(dict.fromkeys(style for _, style, _ in timings))
    rows = []
    for style in styles:
        cells = []
        for path in paths:
            r = ranks[path].get(style)
            cells.append("" if r is None else f"{r.relative:.2f}×" + (f" {SLOW}{r.slower}" if r.slower else ""))
        rows.append([f"`{style}`", *cells])
    out = [
        f"### {heading}",
        "",
        "GPU time, × fastest:",
        "",
        tabulate(rows, headers=["style", *paths], tablefmt="github"),
    ]
    out.append("")
    host = [
        [f"`{style}`", *(us(ranks[path][style].host_us) if style in ranks[path] else "" for path in paths)]
        for style in styles
    ]
    out += ["Host µs per call (geometric mean over the cases):", ""]
    out += [tabulate(host, headers=["style", *paths], tablefmt="github"), ""]
    return out


def fastest_lines(cells: list[Record], paths: list[str], styles: list[str]) -> list[str]:
    """``which --fastest``: per path and regime (bandwidth-bound where any case has a bandwidth size, then
    launch-bound), the ``styles`` (those meeting the goals) ranked by GPU time relative to the fastest of them on
    each case, each with its host µs per call, and whether they differ in GPU time or in host time."""
    out = []
    for regime in REGIMES:
        timings = timed(cells, regime)
        if regime == BANDWIDTH and not timings:
            continue
        for path in paths:
            ranks = ranking(timings, path, styles, among=True)
            if not ranks:
                out.append(
                    f"fastest on {path} ({regime}-bound): not timed (no style meeting the goals has a timed cell)"
                )
                continue
            out.append(
                f"fastest on {path} ({regime}-bound; GPU time × the fastest of these styles on each case, geometric "
                "mean; host µs per call beside it):"
            )
            for n, r in enumerate(ranks, 1):
                flag = f", slower than the fastest beyond the dispersion on {r.slower}" if r.slower else ""
                host = f"; host {us(r.host_us)} µs per call" if r.host_us else ""
                shown = f"{r.relative:.2f}× ({r.cases} cases{flag}; {ratio(r.vs_control)} control{host})"
                out.append(f"  {n}. {r.style} {shown}")
            out.append(f"  {differ_in(ranks)}")
    return out


def differ_in(ranks: list[Rank]) -> str:
    """Whether ranked styles differ more in GPU time or in host time per call."""
    gpu = max(r.relative for r in ranks) / min(r.relative for r in ranks)
    hosts = [r.host_us for r in ranks if r.host_us]
    host = max(hosts) / min(hosts) if len(hosts) > 1 else 1.0
    beyond = any(r.slower for r in ranks)
    gpu_text = f"GPU time {gpu:.2f}× apart" + ("" if beyond else " (inside the dispersion)")
    host_text = f"host time per call {host:.2f}× apart"
    which = "host time" if host > gpu or not beyond else "GPU time"
    return f"they differ most in {which}: {gpu_text}, {host_text}"
