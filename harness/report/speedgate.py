"""The gate's speed classes (issue 42): a cell that passed in both runs and got slower. Its time fails the gate
past ``--max-slowdown`` (default 5%) and past both runs' measured dispersions together; its compile or export
time past ``--max-compile-slowdown`` (15%); its peak GPU memory past ``--max-memory-growth`` (20%). Compile time
and memory are one sample each: an absolute floor (``MIN_COMPILE_S``, ``MIN_MEMORY_MB``) keeps a change smaller
than the noise of a busy run from failing it. Each slower cell is named with both medians and both
dispersions."""

from __future__ import annotations

from dataclasses import dataclass

from tabulate import tabulate

from harness.records.record import Record
from harness.records.results import Results
from harness.spec import Status, Timing
from harness.timing import slower

MIN_TIME_US = 1.0  # a device time change below this is under CUDA events' resolution
MIN_COMPILE_S = 0.25
MIN_MEMORY_MB = 1.0


@dataclass(frozen=True)
class Limits:
    """How much slower (or bigger) a cell may get before it fails the gate (0.05: 5%)."""

    time: float = 0.05
    compile: float = 0.15
    memory: float = 0.20


@dataclass(frozen=True)
class Slowdown:
    """One cell that got slower: what (``time``, ``compile time``, ...), each run's value as shown, the change."""

    id: str
    what: str
    before: str
    after: str
    change: float
    retimed: str | None = None  # its time when the gate timed it again here (harness/cli/rerun.py)
    excused: bool = False  # ... no longer slower then: shown, not failing


def not_comparable(baseline: Results, current: Results) -> str | None:
    """Why the two runs' speed cannot be compared (None: it can): a different GPU is not a slowdown, and a run
    without a timing phase (an older harness) measured its compile time and memory otherwise."""
    devices = [run.environment.get("device") for run in (baseline, current)]
    if devices[0] != devices[1]:
        return f"the baseline ran on {devices[0]}, this run on {devices[1]}: a different GPU is not a slowdown"
    untimed = [name for name, run in (("baseline", baseline), ("current", current)) if not _timed(run)]
    if untimed:
        return f"the {' and '.join(untimed)} run has no timing phase (no timed cell): an older harness, or --no-timing"
    return None


def _timed(run: Results) -> bool:
    return any(cell.timing is not None and cell.timing.timed for cell in run.cells)


def slowdowns(baseline: Results, current: Results, limits: Limits) -> list[Slowdown]:
    """Every cell that passed in both runs and got slower past ``limits``, in baseline order."""
    now = current.by_id()
    found: list[Slowdown] = []
    for before in baseline.cells:
        after = now.get(before.id)
        if after is None or before.status != Status.PASS or after.status != Status.PASS:
            continue
        found += _time(before, after, limits.time)
        for name in ("compile_seconds", "export_seconds"):
            found += _more(before, after, name, limits.compile, MIN_COMPILE_S, "{:.3g} s")
        found += _more(before, after, "gpu_peak_mb", limits.memory, MIN_MEMORY_MB, "{:.4g} MiB")
    return found


def _time(before: Record, after: Record, limit: float) -> list[Slowdown]:
    was, now = before.timing, after.timing
    change = time_change(was, now, limit) if was is not None and now is not None else None
    if change is None:
        return []
    assert was is not None and now is not None
    return [Slowdown(before.id, "time", was.text, now.text, change)]


def time_change(was: Timing, now: Timing, limit: float) -> float | None:
    """How much slower ``now`` is than ``was`` when that fails the gate: past ``limit``, past both dispersions and
    past ``MIN_TIME_US``; else None."""
    change = slower(now, was, limit)
    if change is None or (now.median_us or 0.0) - (was.median_us or 0.0) < MIN_TIME_US:
        return None
    return change


def _more(before: Record, after: Record, name: str, limit: float, floor: float, shown: str) -> list[Slowdown]:
    was, now = getattr(before.measurements, name), getattr(after.measurements, name)
    if not was or now is None or now - was < floor or now / was - 1 <= limit:
        return []
    what = {"compile_seconds": "compile time", "export_seconds": "export time", "gpu_peak_mb": "GPU memory"}[name]
    return [Slowdown(before.id, what, shown.format(was), shown.format(now), now / was - 1)]


def failing(found: list[Slowdown]) -> list[Slowdown]:
    """The slower cells that fail the gate: all but those a re-timing here excused."""
    return [s for s in found if not s.excused]


def render(found: list[Slowdown], limits: Limits) -> list[str]:
    """The gate's sections of slower cells: those failing it, then those a re-timing here excused (none: no
    section)."""
    out = []
    limit = f"time +{100 * limits.time:g}% beyond both dispersions, compile time +{100 * limits.compile:g}%, "
    limit += f"GPU memory +{100 * limits.memory:g}%"
    for excused, heading in ((False, f"Slower ({limit}) — fails the gate"), (True, EXCUSED)):
        rows = [s for s in found if s.excused == excused]
        if not rows:
            continue
        retimed = any(s.retimed for s in rows)
        table = [
            [s.id, s.what, s.before, s.after, f"+{100 * s.change:.1f}%"] + ([s.retimed or "—"] if retimed else [])
            for s in rows
        ]
        headers = ["cell", "what", "baseline", "current", "change"] + (["re-timed here"] if retimed else [])
        out += [f"## {heading}", "", tabulate(table, headers=headers, tablefmt="github"), ""]
    return out


EXCUSED = "Slower in the run, not when timed again here (a run of its own: noise) — does not fail"
