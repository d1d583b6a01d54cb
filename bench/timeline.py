"""A run's timeline from its results.json: one lane per pytest worker, one bar per cell (from its
``measurements.started`` to ``measurements.ended``), coloured by path; the lane that finishes last (the critical
path) hatched; a box with wall time, the sum of cell seconds, the busy fraction and the idle tail. Also prints a
text summary per path and per worker. Reused cells (``reused_from``: not run in this run) are left out. With
``--host`` (bench/gpu/hostload.py's samples taken beside the run), the host's busy cores and runnable processes
under the lanes, and their means over the cells' span and after it.

Usage: python -m bench timeline RESULTS.json [--out FILE.png] [--host HOSTLOAD.csv]
"""

from __future__ import annotations

import argparse
import csv
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tabulate import tabulate

from bench.costs import PHASE_STEPS, scripts
from harness.errors import EXIT_BAD_INPUT, InputError
from harness.records.files import read_results
from harness.records.results import Results

PHASE_COLOURS = {  # bench/costs.py's steps
    "warm-up": "0.55", "barrier": "0.92", "GPU lock": "0.8", "host samples": "0.3", "profiler start": "0.7",
    "GPU lock again": "0.8", "device samples": "black",
}  # fmt: skip


@dataclass(frozen=True)
class Bar:
    cell: str
    path: str
    worker: str
    start: float  # seconds from the run's first cell start
    end: float
    run: float  # the record's seconds: one attempt, without the process's start and the re-runs
    cpu: float | None  # CPU seconds of that attempt (measurements.cpu_seconds), None in older files

    @property
    def seconds(self) -> float:
        return self.end - self.start


@dataclass
class Timeline:
    bars: list[Bar]
    paths: list[str]  # legend order: the matrix's paths, then any others
    workers: int  # lanes the busy fraction counts (the run's workers, at least the lanes seen)
    wall_seconds: float | None
    untimed: list[str] = field(default_factory=list)  # cells of this run without times (a lost worker's)
    # after the cells: each worker's timing phase (its steps: (name, start, end)) and the repro
    # scripts' runs (start, end), in the bars' seconds
    phases: dict[str, list[tuple[str, float, float]]] = field(default_factory=dict)
    scripts: list[tuple[float, float]] = field(default_factory=list)
    origin: float = 0.0  # seconds since the epoch of the first cell's start: the bars' zero
    host: list[HostSample] = field(default_factory=list)  # the host's load beside the run (``--host``)

    @property
    def lanes(self) -> list[str]:
        """Workers in a natural order: main, gw0, gw1, ..., gw10."""
        names = {bar.worker for bar in self.bars}
        return sorted(names, key=lambda n: (len(n), n))

    def lane_end(self, lane: str) -> float:
        return max(bar.end for bar in self.bars if bar.worker == lane)

    @property
    def span(self) -> float:
        return max(bar.end for bar in self.bars)

    @property
    def end(self) -> float:
        """The last thing drawn: a cell, a timing phase's step or a repro script."""
        ends = [end for steps in self.phases.values() for _, _, end in steps] + [end for _, end in self.scripts]
        return max([self.span, *ends])

    @property
    def cell_seconds(self) -> float:
        return sum(bar.seconds for bar in self.bars)

    @property
    def critical(self) -> str:
        """The lane that finishes last."""
        return max(self.lanes, key=self.lane_end)

    @property
    def idle_tail(self) -> float:
        """From the first lane to finish to the last."""
        ends = [self.lane_end(lane) for lane in self.lanes]
        return max(ends) - min(ends)

    @property
    def busy(self) -> float:
        return self.cell_seconds / (self.workers * self.span) if self.span else 0.0


def timeline(data: Results, file: Path | str) -> Timeline:
    """The bars of the cells this run ran; ``InputError`` when no record has times (a file written before
    records carried ``started``/``ended`` times)."""
    timed, untimed = [], []
    for cell in data.cells:
        if cell.reused_from:
            continue
        if cell.measurements.started is not None and cell.measurements.ended is not None:
            timed.append(cell)
        else:
            untimed.append(cell.id)
    if not timed:
        raise InputError(
            file, "cells[].measurements.started", "no record of this run has started/ended times (an older file?)"
        )
    first = min(cell.measurements.started or 0.0 for cell in timed)
    bars = [
        Bar(
            cell.id,
            cell.path,
            str(cell.measurements.worker or f"pid {cell.measurements.pid}"),
            (cell.measurements.started or 0.0) - first,
            (cell.measurements.ended or 0.0) - first,
            float(cell.seconds or 0.0),
            cell.measurements.cpu_seconds,
        )
        for cell in timed
    ]
    env = data.environment
    declared = list((env.get("axes") or {}).get("paths") or [])
    paths = [p for p in declared if any(bar.path == p for bar in bars)]
    paths += sorted({bar.path for bar in bars} - set(paths))
    lanes = len({bar.worker for bar in bars})
    workers = max(int(env.get("workers") or 0), lanes)
    phases = {
        worker: [
            (name, clock[begin] - first, clock[end] - first)
            for name, begin, end in PHASE_STEPS
            if begin in clock and end in clock
        ]
        for worker, clock in (env.get("timing_phases") or {}).items()
    }
    runs = [(started - first, started - first + seconds) for started, seconds in scripts(data).values()]
    return Timeline(bars, paths, workers, env.get("wall_seconds"), untimed, phases, sorted(runs), first)


@dataclass(frozen=True)
class HostSample:
    at: float  # in the bars' seconds
    cores: int
    busy: float  # cores busy over the second before
    running: int  # processes runnable at its end


def host_load(file: Path | str, origin: float) -> list[HostSample]:
    """bench/gpu/hostload.py's samples, their times moved to the bars' zero (``origin``); ``InputError`` naming
    the file and the row where one is not its CSV."""
    try:
        with open(file, newline="") as handle:
            rows = list(csv.DictReader(handle))
    except OSError as error:
        raise InputError(file, "file", f"cannot be read ({error.strerror or error})") from None
    samples = []
    for number, row in enumerate(rows, start=2):
        try:
            at, cores = float(row["time"]) - origin, int(row["cores"])
            samples.append(HostSample(at, cores, float(row["busy_cores"]), int(row["running"])))
        except (KeyError, TypeError, ValueError):
            raise InputError(file, f"line {number}", "not a row of bench/gpu/hostload.py's CSV") from None
    if not samples:
        raise InputError(file, "rows", "no samples")
    return samples


def host_line(line: Timeline) -> str | None:
    """The host's load over the cells' span and after it: mean busy cores and runnable processes."""
    if not line.host:
        return None
    parts = []
    for name, inside in (("cells", lambda t: 0 <= t <= line.span), ("after", lambda t: line.span < t <= line.end)):
        kept = [sample for sample in line.host if inside(sample.at)]
        if kept:
            busy = sum(sample.busy for sample in kept) / len(kept)
            running = sum(sample.running for sample in kept) / len(kept)
            parts.append(f"{name}: busy {busy:.1f} of {kept[0].cores} cores, {running:.1f} runnable (means)")
    return "host: " + ("; ".join(parts) if parts else "no sample within the run")


PATH_COLUMNS = ["path", "cells", "total s", "max s", "attempt s", "cpu s", "cpu %"]


def cpu_share(bars: list[Bar]) -> list[float | None]:
    """Seconds of one attempt, the CPU seconds of the attempts that say theirs, and the share those are of them
    (the rest is waiting: the GPU, locks, the disk, or a busy machine)."""
    timed = [bar for bar in bars if bar.cpu is not None]
    run, cpu = sum(bar.run for bar in timed), sum(bar.cpu or 0.0 for bar in timed)
    return [sum(bar.run for bar in bars), cpu if timed else None, 100 * cpu / run if run else None]


def summary(line: Timeline) -> str:
    """The text summary: the run's totals, then per path and per worker."""
    wall = f"{line.wall_seconds:.1f} s" if line.wall_seconds is not None else "unknown"
    head = (
        f"cells: {len(line.bars)} on {len(line.lanes)} lane(s), {line.workers} worker(s); wall {wall}; "
        f"span of the cells {line.span:.1f} s; sum of cell seconds {line.cell_seconds:.1f} s; "
        f"busy {100 * line.busy:.1f}%; idle tail {line.idle_tail:.1f} s (critical lane {line.critical})"
    )
    by_path = [
        [path, len(bars), sum(bar.seconds for bar in bars), max(bar.seconds for bar in bars), *cpu_share(bars)]
        for path in line.paths
        for bars in [[bar for bar in line.bars if bar.path == path]]
    ]
    by_worker = [
        [lane, round(sum(secs), 1), len(secs), round(line.lane_end(lane), 1)]
        for lane in line.lanes
        for secs in [[bar.seconds for bar in line.bars if bar.worker == lane]]
    ]
    parts = [
        head,
        "",
        tabulate(by_path, headers=PATH_COLUMNS, tablefmt="simple", floatfmt=".1f"),
        "",
        tabulate(by_worker, headers=["worker", "busy s", "cells", "ends at s"], tablefmt="simple", floatfmt=".1f"),
    ]
    if line.untimed:
        parts += ["", f"without times (left out): {', '.join(line.untimed)}"]
    host = host_line(line)
    if host:
        parts[1:1] = [host]
    return "\n".join(parts)


def colours(count: int) -> list[Any]:
    """``count`` distinct qualitative colours: tab20, then tab20b and tab20c (60 in all), then cycling."""
    from matplotlib import colormaps

    palette = [c for name in ("tab20", "tab20b", "tab20c") for c in colormaps[name].colors]
    return [palette[i % len(palette)] for i in range(count)]


def draw(line: Timeline, out: Path, title: str) -> None:
    """Write the PNG (matplotlib, Agg backend: no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    from matplotlib.patches import Patch

    lanes = line.lanes + (["repros"] if line.scripts else [])
    colour = dict(zip(line.paths, colours(len(line.paths)), strict=True))
    height = max(3.0, 0.45 * len(lanes) + 1.5, 0.2 * len(line.paths) + 2.2)
    if line.host:
        figure, (axes, load) = plt.subplots(
            2, 1, figsize=(14, height + 2.0), sharex=True, gridspec_kw={"height_ratios": [height, 2.0]}
        )
        draw_host(load, line)
    else:
        figure, axes = plt.subplots(figsize=(14, height))
    critical = line.critical
    for row, lane in enumerate(lanes):
        mine = [bar for bar in line.bars if bar.worker == lane]
        on_critical = lane == critical
        axes.broken_barh(
            [(bar.start, bar.seconds) for bar in mine],
            (row - 0.4, 0.8),
            facecolors=[colour[bar.path] for bar in mine],
            edgecolors="black" if on_critical else "white",
            linewidth=1.2 if on_critical else 0.4,
            hatch="//" if on_critical else None,
        )
        steps = line.phases.get(lane, [])
        axes.broken_barh(
            [(start, end - start) for _, start, end in steps], (row - 0.25, 0.5),
            facecolors=[PHASE_COLOURS[name] for name, _, _ in steps], edgecolors="0.4", linewidth=0.4,
        )  # fmt: skip
    if line.scripts:  # the repro scripts, stacked in one lane
        row = len(lanes) - 1
        height = 0.8 / max(1, len(line.scripts))
        for n, (start, end) in enumerate(line.scripts):
            axes.broken_barh([(start, end - start)], (row - 0.4 + n * height, height), facecolors="tab:red")
    axes.set_yticks(range(len(lanes)), [f"{lane} (critical)" if lane == critical else lane for lane in lanes])
    axes.set_ylim(-0.6, len(lanes) - 0.4)
    axes.invert_yaxis()
    axes.set_xlim(0, line.end * 1.01 or 1)
    axes.axvline(line.span, color="black", linestyle=":", linewidth=1)
    (load if line.host else axes).set_xlabel("seconds from the run's first cell start")
    axes.grid(axis="x", alpha=0.3)
    legend = [Patch(facecolor=colour[path], label=path) for path in line.paths]
    legend += [Patch(facecolor=shade, edgecolor="0.4", label=f"timing phase: {name}") for name, shade in
               PHASE_COLOURS.items()]  # fmt: skip
    legend += [Patch(facecolor="tab:red", label="repro script")] if line.scripts else []
    axes.legend(handles=legend, title="path", loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    wall = f"{line.wall_seconds:.1f} s" if line.wall_seconds is not None else "unknown"
    summary = (  # under the title: the legend beside the lanes runs as long as the paths' list
        f"wall {wall}; sum of cell seconds {line.cell_seconds:.1f} s; busy {100 * line.busy:.1f}% of "
        f"{line.workers} worker(s) x {line.span:.1f} s; idle tail {line.idle_tail:.1f} s (critical lane {critical}, "
        "hatched)"
    )
    axes.set_title(f"{title}\n{summary}", fontsize=10)
    figure.savefig(out, dpi=120, bbox_inches="tight")
    plt.close(figure)


def draw_host(axes: Any, line: Timeline) -> None:
    """The host's busy cores and runnable processes over the run, its core count dashed."""
    times = [sample.at for sample in line.host]
    axes.plot(times, [sample.busy for sample in line.host], color="tab:blue", linewidth=1, label="busy cores")
    axes.plot(times, [sample.running for sample in line.host], color="tab:orange", linewidth=1, label="runnable")
    axes.axhline(line.host[0].cores, color="black", linestyle="--", linewidth=0.8, label="cores")
    axes.axvline(line.span, color="black", linestyle=":", linewidth=1)
    axes.set_ylabel("host")
    axes.grid(alpha=0.3)
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench timeline", description=__doc__.splitlines()[0])
    parser.add_argument("results", help="a results.json")
    parser.add_argument("--out", default=None, help="the PNG (default: timeline.png beside the results)")
    parser.add_argument("--host", default=None, help="bench/gpu/hostload.py's CSV, sampled beside the run")
    args = parser.parse_args(argv)
    out = Path(args.out) if args.out else Path(args.results).with_name("timeline.png")
    try:
        data = read_results(args.results)
        line = timeline(data, args.results)
        if args.host:
            line.host = host_load(args.host, line.origin)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    env = data.environment
    title = f"{args.results}: {env.get('device')}, torch {env.get('torch')}, commit {env.get('commit')}"
    out.parent.mkdir(parents=True, exist_ok=True)
    draw(line, out, title)
    print(f"timeline: {out}")
    print(summary(line))
    return 0


if __name__ == "__main__":
    sys.exit(main())
