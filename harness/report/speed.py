"""How fast each style is (issue 42), in two regimes kept apart: at each case's bandwidth size (bandwidth-bound,
where the case declares one) and at each cell's own size (the case's first: launch-bound, whose device times do not
reproduce run to run, so each is shown beside its host time per call, what bounds such a call). Per regime and
path, the styles ranked by their time relative to the fastest style of each case on that path (geometric mean over
the cases both were timed on), each flagged where it is slower than the fastest beyond both timings' dispersions;
per cell, its median and dispersion, its host time, its speedup against the same style's eager, its ratio to the
control on the same path and, for a case that declares its bytes moved, the achieved GB/s and its share of the
GPU's copy bandwidth. Read by the chart and by ``which --fastest``."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from tabulate import tabulate

from harness.records.record import Record
from harness.report.blocks import details
from harness.report.marks import escape
from harness.spec import Status, Timing
from harness.timing import slower

CONTROL, EAGER = "control", "eager"
TRAINING = ("train_eager", "train_compile")  # a step is forward and backward: no forward bytes per call
SLOW = "🐢"  # slower than the path's fastest style beyond both dispersions


LAUNCH, BANDWIDTH = "launch", "bandwidth"  # the regimes: the cell's own size, the case's bandwidth size
REGIMES = {
    BANDWIDTH: "Bandwidth-bound: each case's bandwidth size",
    LAUNCH: "Launch-bound: each case's first size",
}


def timed(cells: Iterable[Record], regime: str = LAUNCH) -> dict[tuple[str, str, str], Timing]:
    """(case, style, path) -> the timing in ``regime`` of each passing cell timed in it."""
    out = {}
    for r in cells:
        timing = r.timing if r.timing is None or regime == LAUNCH else r.timing.bandwidth
        if r.status == Status.PASS and timing is not None and timing.timed:
            out[r.cell_id] = timing
    return out


def median(timing: Timing) -> float:
    assert timing.median_us is not None
    return timing.median_us


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(value) for value in values) / len(values))


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


def fastest(timings: dict[tuple[str, str, str], Timing], path: str) -> dict[str, tuple[str, Timing]]:
    """case -> (style, timing) of its fastest style on ``path``."""
    best: dict[str, tuple[str, Timing]] = {}
    for (case, style, on), timing in timings.items():
        if on == path and (case not in best or median(timing) < median(best[case][1])):
            best[case] = (style, timing)
    return best


def ranking(timings: dict[tuple[str, str, str], Timing], path: str, styles: Iterable[str] | None = None) -> list[Rank]:
    """The styles timed on ``path`` (only ``styles`` when given), fastest first."""
    best = fastest(timings, path)
    by_style: dict[str, list[tuple[str, Timing]]] = {}
    for (case, style, on), timing in timings.items():
        if on == path and (styles is None or style in styles):
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


def _ratio(value: float | None) -> str:
    return f"{value:.2f}×" if value is not None else "—"


def cell_row(
    cell: tuple[str, str, str], timings: dict[tuple[str, str, str], Timing], copy_gbps: float | None
) -> list[str]:
    """One timed cell's row: id, median ± dispersion, host µs, speedup against the style's eager, ratio to the
    control on its path, GB/s (and its share of the copy bandwidth), and the flag when it is slower than its path's
    fastest style beyond the dispersions."""
    case, style, path = cell
    timing = timings[cell]
    eager = timings.get((case, style, EAGER))
    control = timings.get((case, CONTROL, path))
    gbps = ""
    if timing.bytes_moved and path not in TRAINING:
        rate = timing.bytes_moved / (median(timing) * 1e-6) / 1e9
        gbps = f"{rate:.1f}" + (f" ({100 * rate / copy_gbps:.0f}%)" if copy_gbps else "")
    _, best = fastest(timings, path)[case]
    return [
        "-".join(cell),
        timing.text,
        f"{timing.host_us:.3g}" if timing.host_us is not None else "—",
        _ratio(median(eager) / median(timing) if eager and path != EAGER else None),
        _ratio(median(timing) / median(control) if control and style != CONTROL else None),
        gbps or "—",
        SLOW if slower(timing, best) is not None else "",
    ]


def section(cells: list[Record], environment: dict[str, object]) -> list[str]:
    """The chart's speed section: per regime (bandwidth-bound first, where any case declares a bandwidth size),
    the ranking per path and the cells' numbers collapsed; where nothing was timed, why (the reasons of the cells
    not timed), and nothing at all for a run whose records have no timing."""
    timings = {regime: timed(cells, regime) for regime in REGIMES}
    reasons = Counter(r.timing.reason for r in cells if r.timing is not None and not r.timing.timed)
    if not timings[LAUNCH]:
        if not reasons:
            return []
        why = "; ".join(f"{escape(str(reason), 200)} ({n} cells)" for reason, n in reasons.most_common(3))
        return ["## Speed", "", f"Not timed: {why}.", ""]
    copy = environment.get("copy_gbps")
    copy_gbps = float(copy) if isinstance(copy, int | float) else None
    out = ["## Speed", ""]
    out += [
        "Device time per call (median of up to 30 samples after 5 warm-ups, L2 flushed, outliers beyond 1.5 IQR left "
        "out; ± is IQR/median), timed after the last cell with the GPU to one process at a time, in two regimes "
        "kept apart: at each case's bandwidth size (where it declares one) and at each cell's own size, the case's "
        "first, where a call is bound by its launch. Per path, the styles fastest first: × fastest is the geometric "
        f"mean over cases of the style's time over the case's fastest style's; {SLOW} counts the cases where it is "
        "slower than that beyond both dispersions.",
        "",
    ]
    if copy_gbps:
        out += [f"GPU copy bandwidth (read + write), measured in this run: {copy_gbps:.0f} GB/s.", ""]
    for regime, heading in REGIMES.items():
        if timings[regime]:
            out += regime_lines(regime, heading, timings[regime], copy_gbps)
    not_there = Counter(
        r.timing.bandwidth.reason for r in cells if r.timing and r.timing.bandwidth and not r.timing.bandwidth.timed
    )
    for counted, what in ((reasons, "passing cells not timed"), (not_there, "cells not timed at the bandwidth size")):
        if counted:
            lines = [f"- {escape(str(reason), 200)}: {n}" for reason, n in counted.most_common()]
            out += details(f"{sum(counted.values())} {what}, by reason", lines)
    return out


def regime_lines(
    regime: str, heading: str, timings: dict[tuple[str, str, str], Timing], copy_gbps: float | None
) -> list[str]:
    """One regime's part of the speed section: its rankings per path, then its cells collapsed."""
    launch = regime == LAUNCH
    out = [f"### {heading}", ""]
    if launch:
        out += [
            "Launch-bound: the device time is the GPU's alone (the launch covered: docs/speed.md); the host µs per "
            "call beside it, often larger, is what bounds such a call.",
            "",
        ]
    for path in dict.fromkeys(path for _, _, path in timings):
        table = [
            [n, f"`{r.style}`", f"{r.relative:.2f}×", r.cases, f"{SLOW} {r.slower}" if r.slower else ""]
            + ([f"{r.host_us:.3g}" if r.host_us else "—"] if launch else [])
            + [_ratio(r.vs_control)]
            for n, r in enumerate(ranking(timings, path), 1)
        ]
        headers = ["#", "style", "× fastest", "cases", "slower"] + (["host µs"] if launch else []) + ["× control"]
        out += [f"#### {path} ({regime}-bound)", "", tabulate(table, headers=headers, tablefmt="github"), ""]
    rows = [cell_row(cell, timings, copy_gbps) for cell in timings]
    headers = ["cell", "device µs", "host µs", "speedup vs own eager", "× control", "GB/s", ""]
    if launch:
        rows = [row[:5] + row[6:] for row in rows]  # no GB/s: a launch-bound call does not measure bandwidth
        headers = headers[:5] + headers[6:]
    else:
        sizes = {cell: timing.size for cell, timing in timings.items()}
        rows = [[row[0], str(sizes[cell] or "—"), *row[1:]] for cell, row in zip(timings, rows, strict=True)]
        headers = [headers[0], "size", *headers[1:]]
    out += details(f"{len(rows)} cells timed ({regime}-bound)", [tabulate(rows, headers=headers, tablefmt="github")])
    return out


def fastest_lines(cells: list[Record], paths: list[str], styles: list[str]) -> list[str]:
    """``which --fastest``: per path and regime (bandwidth-bound where any case has a bandwidth size, then
    launch-bound, with the host µs per call), the ``styles`` (those meeting the goals) ranked by speed."""
    out = []
    for regime in REGIMES:
        timings = timed(cells, regime)
        if regime == BANDWIDTH and not timings:
            continue
        for path in paths:
            ranks = ranking(timings, path, styles)
            if not ranks:
                out.append(
                    f"fastest on {path} ({regime}-bound): not timed (no style meeting the goals has a timed cell)"
                )
                continue
            out.append(f"fastest on {path} ({regime}-bound; × the fastest style of each case, geometric mean):")
            for n, r in enumerate(ranks, 1):
                flag = f", slower than the fastest beyond the dispersion on {r.slower}" if r.slower else ""
                host = f"; host {r.host_us:.3g} µs per call" if regime == LAUNCH and r.host_us else ""
                shown = f"{r.relative:.2f}× ({r.cases} cases{flag}; {_ratio(r.vs_control)} control{host})"
                out.append(f"  {n}. {r.style} {shown}")
    return out
