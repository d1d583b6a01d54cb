"""Where a run's wall time went, from its results.json alone: the run's span, process starts, cell time by path and
by stage (setup, build, trace, compile, run, compare, end: ``measurements.stage_seconds``), what every cell pays
before its path runs (setup and build), its end stage apart (the end-of-cell GPU wait and the check at the bandwidth
size, which only some paths pay), confirmation (each repro script's start and seconds), and each worker's timing phase
(warm-up, wait at the barrier, wait for the GPU lock, host samples, the profiler's start, the GPU lock again,
device samples, and the warm-up's peak of GPU memory: ``environment.timing_phases``; beside them what the worker's
cell process kept reserved on the GPU after its last cell: ``measurements.gpu_held_mb``), and the run's start before
its first cell (``environment.start_marks``). Prints markdown.

Usage: python -m bench costs RESULTS.json [--out FILE.md]
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path
from statistics import median
from typing import Any

from tabulate import tabulate

from harness.errors import EXIT_BAD_INPUT, InputError
from harness.records.files import read_results
from harness.records.record import Record
from harness.records.results import Results

STAGES = ("setup", "build", "trace", "compile", "run", "compare", "end")
BEFORE = ("setup", "build")  # what every cell pays before its path runs, whatever the path
END = "end"  # the GPU wait at the cell's end, its verdict, and a timed pass's check (and compile) at the bandwidth size
ENDS_NAMED = 3  # the paths whose end stage cost most, named
PHASE_STEPS = (  # a worker's timing phase: (step, from, to) in its ``timing_phases`` clock
    ("warm-up", "warm", "arrived"),
    ("barrier", "arrived", "all_arrived"),
    ("GPU lock", "all_arrived", "alone"),
    ("host samples", "alone", "hosted"),
    ("profiler start", "hosted", "all_primed"),  # the others' host samples, its own start, the others'
    ("GPU lock again", "all_primed", "alone_again"),
    ("device samples", "alone_again", "done"),
)
WARM_PEAK = "warm_gpu_peak_mb"  # a worker's warm-up's peak of GPU memory, MiB (harness/plugin/timing.py)
WARM_COLD = "warm_cold"  # ... how many of its warm-ups ran out of GPU memory, done again with the GPU alone


def scripts(data: Results) -> dict[str, tuple[float, float]]:
    """Each repro script run by the run's confirmation: (started, seconds)."""
    found: dict[str, tuple[float, float]] = {}
    for cell in data.cells:
        said = cell.confirmation or {}
        if said.get("script") and said.get("started") and said.get("seconds") is not None:
            found[said["script"]] = (float(said["started"]), float(said["seconds"]))
    return found


def costs(data: Results) -> str:
    """The cost model's markdown."""
    cells = [cell for cell in data.cells if not cell.reused_from and cell.measurements.started]
    if not cells:
        raise InputError("results", "cells", "no cell of this run has its start and end times")
    env = data.environment
    first = min(cell.measurements.started or 0.0 for cell in cells)
    last = max(cell.measurements.ended or 0.0 for cell in cells)
    wall, span = env.get("wall_seconds"), last - first
    workers = env.get("workers") or 1
    total = sum(cell.seconds or 0.0 for cell in cells)
    starts = [cell.measurements.process_start for cell in cells if cell.measurements.process_start is not None]
    out = [
        f"# Where the run's time went ({env.get('device')}, torch {env.get('torch')}, commit {env.get('commit')})",
        "",
        f"- wall: {wall} s; cells from the first start to the last end: {span:.1f} s; after the last cell: "
        + _after(wall, last - (env.get("start_marks") or {}).get("command", last), env.get("timing_seconds")),
        f"- {len(cells)} cells, {total:.0f} cell-seconds on {workers} workers ({total / workers:.1f} s each if even); "
        f"{len(starts)} cells in a fresh cell process, {sum(starts):.0f} s waiting for their start",
        _start(env.get("start_marks") or {}, first),
        "",
        "## Cell seconds by path and stage",
        "",
        "CPU: the cells' `measurements.cpu_seconds` (docs/results-json.md: what the cell process and the processes"
        " below it computed; not aoti_standalone's loader, which the standalone server forks); waiting: the rest,"
        " on the GPU, the driver, a lock or a core to run on (below 0 where a cell computed on several cores at once).",
        "",
        _by_path(cells),
        "",
        _before(cells),
        "",
        _end(cells),
        "",
        "## Confirmation",
        "",
        _confirmation(data, last),
        "",
        _places(env.get("script_places") or [], last),
        "",
        "## Timing phase, per worker (seconds)",
        "",
        _phases(env.get("timing_phases") or {}, last, _held(cells)),
        "",
        _warm(cells),
    ]
    return "\n".join(out) + "\n"


START_MARKS = {  # environment.start_marks, as the line before the first cell names them
    "session": "the session began",
    "zygote_serving": "the zygote served",
    "first_collected": "the first worker had collected",
    "last_collected": "the last",
}


def _start(marks: dict[str, float], first: float) -> str:
    """The run's start before its first cell, from the command's start (where the run recorded its marks)."""
    if "command" not in marks:
        return "- before the first cell: not recorded (a run without start marks)"
    steps = [f"{said} at {marks[name] - marks['command']:.1f} s" for name, said in START_MARKS.items() if name in marks]
    return f"- before the first cell: {first - marks['command']:.1f} s ({', '.join(steps)})"


def _after(wall: float | None, last: float, timing: float | None) -> str:
    """The wall after the last cell's end (``last``: seconds from the command's start), the timing phase apart."""
    phase = "no timing phase recorded" if timing is None else f"the timing phase {timing:.1f} s"
    if wall is None or last <= 0:
        return f"not recorded (a run without its wall or start marks); {phase}"
    after = wall - last
    return f"{after:.1f} s ({100 * after / wall:.0f}% of the wall; of it {phase}, then the confirmation and the chart)"


def _by_path(cells: list[Any]) -> str:
    sums: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    counts: dict[str, int] = defaultdict(int)
    for cell in cells:
        counts[cell.path] += 1
        cpu = cell.measurements.cpu_seconds or 0.0
        sums[cell.path]["total"] += cell.seconds or 0.0
        sums[cell.path]["cpu"] += cpu
        sums[cell.path]["waiting"] += (cell.seconds or 0.0) - cpu
        for stage, seconds in (cell.measurements.stage_seconds or {}).items():
            sums[cell.path][stage] += seconds
    columns = ("total", "cpu", "waiting", *STAGES)
    rows = [
        [path, counts[path], *(round(sums[path][column], 1) for column in columns)]
        for path in sorted(counts, key=lambda path: -sums[path]["total"])
    ]
    # from the sums themselves: the paths' rounded figures, added, drift by up to 0.05 s a path
    every = (round(sum(sums[path][column] for path in sums), 1) for column in columns)
    rows.append(["all", sum(counts.values()), *every])
    return tabulate(rows, headers=["path", "cells", "seconds", "CPU", "waiting", *STAGES], tablefmt="github")


def _before(cells: list[Any]) -> str:
    per_cell = [sum((cell.measurements.stage_seconds or {}).get(stage, 0.0) for stage in BEFORE) for cell in cells]
    share = 100 * sum(per_cell) / max(1e-9, sum(cell.seconds or 0.0 for cell in cells))
    return (
        f"Before its path runs ({' + '.join(BEFORE)}), what every cell pays: median {median(per_cell):.3f} s, "
        f"{sum(per_cell):.0f} cell-seconds in all ({share:.0f}%)."
    )


def _end(cells: list[Any]) -> str:
    by_path: dict[str, float] = defaultdict(float)
    for cell in cells:
        by_path[cell.path] += (cell.measurements.stage_seconds or {}).get(END, 0.0)
    total = sum(by_path.values())
    share = 100 * total / max(1e-9, sum(cell.seconds or 0.0 for cell in cells))
    most = sorted(by_path.items(), key=lambda item: -item[1])[:ENDS_NAMED]
    named = ", ".join(f"{path} {seconds:.1f} s" for path, seconds in most if seconds > 0)
    return (
        f"The end stage (the GPU waited for at the cell's end, its verdict, and a timed pass's check at the bandwidth "
        f"size, compiling that shape: not the same on every path): {total:.0f} cell-seconds ({share:.0f}%)"
        + (f", most on {named}." if named else ".")
    )


def _confirmation(data: Results, last: float) -> str:
    runs = scripts(data)
    if not runs:
        return "No repro script ran (none failed, or --no-confirm)."
    before = [seconds for started, seconds in runs.values() if started + seconds <= last]
    after = max(started + seconds for started, seconds in runs.values()) - last
    when = f"{after:.1f} s after it" if after > 0 else f"{-after:.1f} s before it"
    return (
        f"{len(runs)} scripts, {sum(seconds for _, seconds in runs.values()):.0f} script-seconds "
        f"(median {median(seconds for _, seconds in runs.values()):.1f} s, longest "
        f"{max(seconds for _, seconds in runs.values()):.1f} s); {len(before)} ended before the last cell, the last "
        f"{when}."
    )


def _places(readings: list[dict[str, Any]], last: float) -> str:
    """The scripts' places while scripts waited for one, before and after the last cell's end
    (``environment.script_places``)."""
    if not readings:
        return "No script waited for a place (or a file from before `environment.script_places`)."
    parts = []
    halves = {"before": [r for r in readings if r["at"] < last], "after": [r for r in readings if r["at"] >= last]}
    for when, some in halves.items():
        if not some:
            continue
        held = {why: sum(1 for r in some if r.get("held") == why) for why in ("memory", "timing")}
        idle = [r["idle_cores"] for r in some if r.get("idle_cores") is not None]
        parts.append(
            f"{when} the last cell's end, {len(some)} readings: running median {median(r['running'] for r in some):g}"
            f" of places median {median(r['places'] for r in some):g}, idle cores median "
            + (f"{median(idle):.1f}" if idle else "unread")
            + f"; held back by the GPU's memory in {held['memory']}, by the timing turns in {held['timing']}"
        )
    return "Scripts waiting for a place (`environment.script_places`): " + "; ".join(parts) + "."


def _held(cells: list[Record]) -> dict[str, float | None]:
    """Per worker, what its cell process's caching allocator kept reserved after the worker's last cell (MiB)."""
    last: dict[str, Record] = {}
    for cell in cells:
        worker = cell.measurements.worker
        if worker and (worker not in last or (cell.measurements.ended or 0) > (last[worker].measurements.ended or 0)):
            last[worker] = cell
    return {worker: cell.measurements.gpu_held_mb for worker, cell in last.items()}


def _phases(phases: dict[str, dict[str, float]], last: float, held: dict[str, float | None]) -> str:
    if not phases:
        return "No timing phase recorded (an untimed run, or a file from before the cost model)."
    rows = []
    for worker, clock in sorted(phases.items(), key=lambda item: (len(item[0]), item[0])):
        steps = [round(clock[end] - clock[begin], 1) if begin in clock and end in clock else None
                 for _, begin, end in PHASE_STEPS]  # fmt: skip
        began = round(clock["warm"] - last, 1) if "warm" in clock else None
        rows.append([worker, began, *steps, held.get(worker), clock.get(WARM_PEAK), clock.get(WARM_COLD)])
    headers = ["worker", "began (s from the last cell's end)", *(name for name, _, _ in PHASE_STEPS),
               "GPU held after its last cell (MiB)", "warm-up GPU peak (MiB)", "warm-ups out of memory"]  # fmt: skip
    return tabulate(rows, headers=headers, tablefmt="github")


def _warm(cells: list[Record]) -> str:
    """The kept artifacts' warm-up seconds (``timing.warm_s``) by path, the costliest first."""
    by_path: dict[str, list[float]] = defaultdict(list)
    for cell in cells:
        if cell.timing is not None and cell.timing.warm_s is not None:
            by_path[cell.path].append(cell.timing.warm_s)
    if not by_path:
        return "No warm-up seconds recorded (an untimed run, or a file from before `timing.warm_s`)."
    most = sorted(by_path.items(), key=lambda item: -sum(item[1]))
    named = ", ".join(f"{path} {sum(each):.1f} s ({len(each)}, median {median(each):.2f} s)" for path, each in most)
    total = sum(sum(each) for each in by_path.values())
    return f"Warm-ups by path (the kept artifacts' `timing.warm_s`, {total:.1f} s in all): {named}."


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench costs", description=__doc__.splitlines()[0])
    parser.add_argument("results", help="a results.json")
    parser.add_argument("--out", default=None, help="also write the markdown here")
    args = parser.parse_args(argv)
    try:
        text = costs(read_results(args.results))
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
