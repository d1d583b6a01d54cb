"""The gate's speed classes: a cell that passed in both runs and got slower. Time is compared per regime. At
the case's bandwidth size (``timing.bandwidth``: bandwidth-bound) it fails the gate past ``--max-slowdown`` (default
5%) and past both runs' measured dispersions together. At the cell's own size (each case's first: launch-bound) a
call's cost is mostly its host-side launch, which the device time leaves out and the host time measures on a CPU
that other processes share, so a slower one is reported and fails only past ``--max-launch-slowdown``, off by
default (docs/speed.md). Compile or export time is reported past 15% and fails only past ``--max-compile-slowdown``,
off by default: the run's cells share Triton's kernel cache, so a cell compiles less when an earlier cell compiled
the same kernel, and its compile time depends on the order cells ran in. GPU memory, per regime, is one warm call's
peak above what was allocated before it (``Timing.call_mb``, measured in the timing phase); it fails past
``--max-memory-growth`` (20%). The cell's own peak (``Measurements.gpu_peak_mb``) is not compared: it counts the
buffers benchmarking allocates (Triton's autotuner flushes the L2 cache with 256 MiB, Inductor's with one the L2's
size, 60 MiB on an H200), which only the cell that autotuned a kernel first allocated, so it depends on cell order
and caches (two cold runs of one commit: 0.1 MiB and 60.1 MiB). One sample each, an absolute floor
(``MIN_COMPILE_S``, ``MIN_MEMORY_MB``) keeps a change smaller than the noise of a busy run from failing it, and
compile times are compared only between runs that both started from empty cache folders, or both not. Before it
fails, a slower cell is measured again in a run of its own, up to ``--rerun`` times (harness/cli/rerun.py), and
excused on the first that is not slower; a compile time also where that second measurement of the current commit
lies further from the run's than the change. Each slower cell is named with both medians and both dispersions.
Two device times measured by different methods (``Timing.method``) are not compared: the gate says how many cells
it left out."""

from __future__ import annotations

from dataclasses import dataclass

from tabulate import tabulate

from harness.records.environment import interpreted
from harness.records.record import Record
from harness.records.results import Results
from harness.report.blocks import details
from harness.spec import Status, Timing
from harness.timing import slower

MIN_TIME_US = 1.0  # a device time change below this is under CUDA events' resolution
MIN_COMPILE_S = 0.25
MIN_MEMORY_MB = 1.0
REPORT_COMPILE = 0.15  # a compile or export time this much longer is reported (not gated by default)


BANDWIDTH_TIME, LAUNCH_TIME = "time (bandwidth-bound)", "time (launch-bound)"  # a ``Slowdown``'s ``what``
# a warm call's GPU memory in each regime: the ``what`` it is called, the time's ``what`` that names its regime
MEMORIES = {"GPU memory (bandwidth-bound)": BANDWIDTH_TIME, "GPU memory (launch-bound)": LAUNCH_TIME}
MEMORY_SHOWN = "{:.4g} MiB"
# the other measurements compared, each by its name in ``Measurements``: the ``what`` it is called and how it is shown
MEASURES = {
    "compile_seconds": ("compile time", "{:.3g} s"),
    "export_seconds": ("export time", "{:.3g} s"),
}


@dataclass(frozen=True)
class Limits:
    """How much slower (or bigger) a cell may get before it fails the gate (0.05: 5%); ``launch``: its launch-bound
    time, ``compile``: its compile and export time (None: reported past ``REPORT_COMPILE``, never failing)."""

    time: float = 0.05
    compile: float | None = None
    memory: float = 0.20
    launch: float | None = None

    def time_limit(self, what: str) -> float:
        """The limit of a time slowdown of ``what`` (a launch-bound one, not gated, is reported past ``time``)."""
        return self.launch if what == LAUNCH_TIME and self.launch is not None else self.time


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
    reported: bool = False  # a launch-bound time while those are not gated: shown, not failing
    picks: tuple[tuple[str, ...], tuple[str, ...]] | None = None  # a time's autotuner picks, where they differ


def regime(timing: Timing | None, what: str) -> Timing | None:
    """The timing of the regime a time slowdown's ``what`` names: the bandwidth-bound one, or the cell's own."""
    if timing is None:
        return None
    return timing.bandwidth if what == BANDWIDTH_TIME else timing


def not_comparable(baseline: Results, current: Results) -> str | None:
    """Why the two runs' speed cannot be compared (None: it can): a different GPU is not a slowdown, and a run
    without a timing phase (an older harness) measured its compile time and memory otherwise."""
    devices = [run.environment.get("device") for run in (baseline, current)]
    if devices[0] != devices[1]:
        return f"the baseline ran on {devices[0]}, this run on {devices[1]}: a different GPU is not a slowdown"
    untimed = [name for name, run in (("baseline", baseline), ("current", current)) if not _timed(run)]
    if untimed:
        runs = (baseline, current)
        why = (
            "Triton's interpreter times nothing" if any(interpreted(run.environment) for run in runs)
            else "a CPU run times nothing" if "cpu" in devices
            else "an older harness, or --no-timing"
        )  # fmt: skip
        return f"the {' and '.join(untimed)} run has no timed cell: {why}"
    return None


def _timed(run: Results) -> bool:
    return any(cell.timing is not None and cell.timing.timed for cell in run.cells)


def slowdowns(baseline: Results, current: Results, limits: Limits) -> list[Slowdown]:
    """Every cell that passed in both runs and got slower past ``limits``, in baseline order (compile and export
    times only where both runs started from caches alike: both cold, or both warm)."""
    now = current.by_id()
    compiles = warmth_differs(baseline, current) is None
    found: list[Slowdown] = []
    for before in baseline.cells:
        after = now.get(before.id)
        if after is None or before.status != Status.PASS or after.status != Status.PASS:
            continue
        found += _time(before, after, limits)
        found += memory(before, after, limits)
        found += more(before, after, limits) if compiles else []
    return found


def more(before: Record, after: Record, limits: Limits) -> list[Slowdown]:
    """Its compile or export time past ``limits`` above ``before``'s."""
    limit = REPORT_COMPILE if limits.compile is None else limits.compile
    reported = limits.compile is None
    found = []
    for name in ("compile_seconds", "export_seconds"):
        found += _more(before, after, name, limit, MIN_COMPILE_S, reported=reported)
    return found


def memory(before: Record, after: Record, limits: Limits) -> list[Slowdown]:
    """Its warm call's GPU memory, in each regime timed in both runs, past ``limits.memory`` above ``before``'s (and
    past ``MIN_MEMORY_MB``)."""
    found = []
    for what, regime_of in MEMORIES.items():
        was, now = regime(before.timing, regime_of), regime(after.timing, regime_of)
        was_mb, now_mb = (None if one is None else one.call_mb for one in (was, now))
        change = _grown(was_mb, now_mb, limits.memory, MIN_MEMORY_MB)
        if change is not None:
            assert was_mb is not None and now_mb is not None
            found.append(Slowdown(before.id, what, MEMORY_SHOWN.format(was_mb), MEMORY_SHOWN.format(now_mb), change))
    return found


def warmth_differs(baseline: Results, current: Results) -> str | None:
    """Why the two runs' compile times are not compared: one started from an empty cache folder, the other not."""
    cold = [run.environment.get("cold_cache") for run in (baseline, current)]
    if None in cold or cold[0] == cold[1]:
        return None
    said = ["cold (an empty cache folder)" if one else "warm" for one in cold]
    return f"the baseline's caches were {said[0]}, this run's {said[1]}: compile times are not compared"


def _time(before: Record, after: Record, limits: Limits) -> list[Slowdown]:
    """Its time slowdowns, bandwidth-bound first; a launch-bound one is only reported unless ``limits.launch``."""
    found = []
    for what in (BANDWIDTH_TIME, LAUNCH_TIME):
        was, now = regime(before.timing, what), regime(after.timing, what)
        if was is None or now is None or measured_apart(was, now):
            continue
        change = time_change(was, now, limits.time_limit(what))
        if change is not None:
            assert was is not None and now is not None
            reported = what == LAUNCH_TIME and limits.launch is None
            picks = _picks(picked_for(before.timing, what), picked_for(after.timing, what))
            found.append(Slowdown(before.id, what, was.text, now.text, change, reported=reported, picks=picks))
    return found


def picked_for(timing: Timing | None, what: str) -> tuple[str, ...]:
    """The configs the style's autotuners picked for the regime ``what`` names: its own (a bandwidth-size timing
    holds those picked there), else the cell's (records of 7af17dc and before, whose autotuners picked once)."""
    measured = regime(timing, what)
    return (measured.picked if measured else ()) or (timing.picked if timing else ())


def _picks(was: tuple[str, ...], now: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """The configs the style's autotuners picked in each run, where both runs recorded them and they differ."""
    return (was, now) if was and now and was != now else None


def measured_apart(was: Timing, now: Timing) -> bool:
    """Whether two device times were measured by different methods (``Timing.method``, harness/cell/timing.py):
    CUDA events around a call hold a floor of their own that the sum of its GPU activities' durations does not, so
    neither is compared with the other."""
    return was.timed and now.timed and was.method != now.method


def time_change(was: Timing, now: Timing, limit: float) -> float | None:
    """How much slower ``now`` is than ``was`` when that fails the gate: past ``limit``, past both dispersions and
    past ``MIN_TIME_US``; else None."""
    change = slower(now, was, limit)
    if change is None or (now.median_us or 0.0) - (was.median_us or 0.0) < MIN_TIME_US:
        return None
    return change


def _more(
    before: Record, after: Record, name: str, limit: float, floor: float, reported: bool = False
) -> list[Slowdown]:
    was, now = getattr(before.measurements, name), getattr(after.measurements, name)
    change = _grown(was, now, limit, floor)
    if change is None:
        return []
    what, shown = MEASURES[name]
    return [Slowdown(before.id, what, shown.format(was), shown.format(now), change, reported=reported)]


def _grown(was: float | None, now: float | None, limit: float, floor: float) -> float | None:
    """How much ``now`` grew over ``was`` (0.2: 20%), when past ``limit`` and by at least ``floor``; else None."""
    if not was or now is None or now - was < floor or now / was - 1 <= limit:
        return None
    return now / was - 1


def failing(found: list[Slowdown]) -> list[Slowdown]:
    """The slower cells that fail the gate: all but those a re-timing here excused and those only reported."""
    return [s for s in found if not s.excused and not s.reported]


def rules(limits: Limits, baseline: Results, current: Results) -> list[str]:
    """What the gate compared of each regime, and how many cells had a bandwidth-bound time in both runs."""
    both = current.by_id()
    count = sum(
        1 for cell in baseline.cells if cell.id in both and _timed_at(cell.timing) and _timed_at(both[cell.id].timing)
    )
    launch = (
        f"fails past +{100 * limits.launch:g}% beyond both dispersions (--max-launch-slowdown)"
        if limits.launch is not None
        else f"reported past +{100 * limits.time:g}% beyond both dispersions, never failing: a call there is bound by "
        "its launch (--max-launch-slowdown gates them)"
    )
    apart = sum(1 for cell in baseline.cells if cell.id in both and _apart(cell.timing, both[cell.id].timing))
    methods = (
        [
            f"- Time measured by different methods in the two runs ({apart} cells: CUDA events around a call, or the "
            "sum of its GPU activities' durations): not compared, neither failing nor passing."
        ]
        if apart
        else []
    )
    warmth = warmth_differs(baseline, current)
    compile_rule = (
        f"fails past +{100 * limits.compile:g}% (--max-compile-slowdown)"
        if limits.compile is not None
        else f"reported past +{100 * REPORT_COMPILE:g}%, never failing: the run's cells share Triton's kernel cache, "
        "so it depends on which cells compiled the same kernels first (--max-compile-slowdown gates it)"
    )
    return [
        f"- Bandwidth-bound time (each case's bandwidth size; {count} cells timed there in both runs): fails past "
        f"+{100 * limits.time:g}% beyond both dispersions (--max-slowdown).",
        f"- Launch-bound time (each cell's own size, the case's first): {launch}.",
        *methods,
        f"- Compile and export time: {warmth or compile_rule}.",
        f"- GPU memory (a warm call's peak above what was allocated before it, in each regime timed in both runs): "
        f"fails past +{100 * limits.memory:g}% (--max-memory-growth); the cell's own peak, compiling and autotuning "
        "included, is not compared: it depends on which cell compiled or autotuned a kernel first.",
        "",
    ]


def _apart(before: Timing | None, after: Timing | None) -> bool:
    """Whether a cell's time in either regime was measured by different methods in the two runs."""
    pairs = [(regime(before, what), regime(after, what)) for what in (BANDWIDTH_TIME, LAUNCH_TIME)]
    return any(was is not None and now is not None and measured_apart(was, now) for was, now in pairs)


def _timed_at(timing: Timing | None) -> bool:
    return timing is not None and timing.bandwidth is not None and timing.bandwidth.timed


def render(found: list[Slowdown], limits: Limits) -> list[str]:
    """The gate's sections of slower cells: those failing it, those a re-timing here excused, then the launch-bound
    ones only reported, collapsed (none: no section)."""
    out = []
    limit = f"bandwidth-bound time +{100 * limits.time:g}% beyond both dispersions, "
    if limits.launch is not None:
        limit += f"launch-bound time +{100 * limits.launch:g}%, "
    if limits.compile is not None:
        limit += f"compile time +{100 * limits.compile:g}%, "
    limit += f"GPU memory +{100 * limits.memory:g}%"
    for kind, heading in (("fails", f"Slower ({limit}) — fails the gate"), ("excused", EXCUSED), ("reported", "")):
        rows = [s for s in found if _kind(s) == kind]
        if not rows:
            continue
        retimed = any(s.retimed for s in rows)
        table = [
            [s.id, s.what, s.before, s.after, f"+{100 * s.change:.1f}%"] + ([s.retimed or "—"] if retimed else [])
            for s in rows
        ]
        headers = ["cell", "what", "baseline", "current", "change"] + (["re-timed here"] if retimed else [])
        text = tabulate(table, headers=headers, tablefmt="github")
        if kind == "reported":
            out += [f"## {REPORTED}", "", *details(f"{len(rows)} measurements slower, not gated", [text])]
        else:
            out += [f"## {heading}", "", text, "", *_other_picks(rows)]
    return out


def _other_picks(rows: list[Slowdown]) -> list[str]:
    """The slower cells whose autotuners picked other configs than in the baseline: the kernel may be no slower,
    its autotuner's benchmark having chosen otherwise (it chooses once per key, at the case's small first size)."""
    picked = [s for s in rows if s.picks]
    if not picked:
        return []
    lines = [f"{len(picked)} of them ran configs their autotuners picked otherwise than in the baseline:", ""]
    for slow in picked:
        assert slow.picks is not None
        was, now = slow.picks
        lines.append(f"- `{slow.id}`: {'; '.join(now)} (baseline: {'; '.join(was)})")
    return [*lines, ""]


def _kind(slow: Slowdown) -> str:
    return "excused" if slow.excused else "reported" if slow.reported else "fails"


EXCUSED = "Slower in the run, not when timed again here (a run of its own: noise) — does not fail"
REPORTED = (
    "Slower at the launch-bound size or in compile time (not gated: --max-launch-slowdown, --max-compile-slowdown)"
    " — does not fail"
)
