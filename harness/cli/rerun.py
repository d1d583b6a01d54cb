"""The gate's re-runs: regressed cells run again on this machine (when it is the one that measured them), and
what the re-runs saw applied to the diff. A re-run that passes makes a regression flaky; one that gives wrong
numbers makes it wrong, which no re-run excuses. A cell found slower (time, compile time, memory) is measured again
the same way, in a run of its own, up to as many times; no longer slower on one, it is excused."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness import interrupt
from harness.execution.machine import versions
from harness.records.environment import file_digest, interpreted
from harness.records.files import read_results
from harness.records.record import Record
from harness.records.results import Results
from harness.report.gate import Change
from harness.report.speedgate import (
    BANDWIDTH_TIME,
    LAUNCH_TIME,
    MEASURES,
    MEMORIES,
    MEMORY_SHOWN,
    Limits,
    Slowdown,
    measured_apart,
    memory,
    more,
    regime,
    time_change,
)
from harness.spec import Status, triton_interpreted

TIMES = (BANDWIDTH_TIME, LAUNCH_TIME)  # the slowdowns in time
STAMP = ("torch", "triton", "device", "triton_interpret")  # what a re-run must share with the run it re-measures
STOP_GRACE_S = 60.0  # an interrupted re-run's time to stop its zygote and cell processes, before SIGKILL


def here_stamp(interpret: bool) -> dict[str, object]:
    """This machine's ``STAMP``, for a re-run that passes ``--interpret`` when ``interpret`` (TRITON_INTERPRET=1
    in this environment makes any run an interpreter run)."""
    from harness.cell.runner import device_name

    here = {**versions(), "device": device_name(), "triton_interpret": interpret or triton_interpreted()}
    return {key: here[key] for key in STAMP}


def stamp_differs(measured: dict[str, object], here: dict[str, object]) -> tuple[str, str] | None:
    """Where ``here`` (an environment stamp) differs from ``measured`` in ``STAMP``: what each has ("triton
    3.9.0", "triton 3.7.1"), or None when a run here measures what ``measured`` measured."""
    differ = [key for key in STAMP if _stamped(measured, key) != _stamped(here, key)]
    if not differ:
        return None
    was, now = (", ".join(f"{key} {_stamped(env, key)}" for key in differ) for env in (measured, here))
    return was, now


def _stamped(env: dict[str, object], key: str) -> object:
    return interpreted(env) if key == "triton_interpret" else env.get(key)


@dataclass(frozen=True)
class Rerun:
    """How the gate re-runs regressions: ``times`` runs of ``matrix`` each (0: none); ``current`` names the
    results file being gated, for the note when it was measured elsewhere."""

    matrix: str
    times: int
    current: str
    given: bool = True  # --matrix named ``matrix``; else the current run's own matrix file, where it is unchanged

    def __call__(self, changes: list[Change], current: Results) -> list[Change]:
        return rerun_regressions(changes, current, self)

    def retime(self, found: list[Slowdown], baseline: Results, current: Results, limits: Limits) -> list[Slowdown]:
        return retime_slowdowns(found, baseline, current, self, limits)


def retime_slowdowns(
    found: list[Slowdown], baseline: Results, current: Results, how: Rerun, limits: Limits
) -> list[Slowdown]:
    """Each cell found slower (in time, compile time or memory) measured again here, in a run of its own (fresh cell
    processes, the GPU to that run alone, caches as cold or warm as the current run's), up to ``how.times`` times:
    one no longer slower than the baseline past ``limits`` on a re-run is excused (shown, not failing), so a
    slowdown fails only when every re-run shows it (a cold run's autotuners may pick another config, and a re-run
    picks afresh). Not when re-runs are off (``--rerun 0``) or ``current`` was measured on another machine."""
    if how.times <= 0 or stamp_differs(current.environment, here_stamp(interpreted(current.environment))):
        return found
    before, now = baseline.by_id(), current.by_id()
    for _ in range(how.times):
        cells = list(dict.fromkeys(s.id for s in found if not s.reported and not s.excused))
        if not cells:
            break
        again = _run_cells(cells, current, rerun_matrix(current, how))
        found = [
            s if s.reported or s.excused else _measured_again(s, before[s.id], now[s.id], again.get(s.id), limits)
            for s in found
        ]
    return found


def _measured_again(slow: Slowdown, before: Record, current: Record, again: Record | None, limits: Limits) -> Slowdown:
    """``slow`` with what its re-run measured: excused where that is no longer slower past ``limits``; a compile
    or export time also where the two measurements of the current commit (the run's, the re-run's) lie further
    apart than the change: one sample each, the change is inside their noise (the time's rule: past the limit and
    past the measured dispersion)."""
    if slow.reported or again is None or again.status != Status.PASS:
        return slow
    if slow.what in TIMES:
        timing, was = regime(again.timing, slow.what), regime(before.timing, slow.what)
        if timing is None or not timing.timed or was is None or measured_apart(was, timing):
            return slow
        excused = time_change(was, timing, limits.time_limit(slow.what)) is None
        return dataclasses.replace(slow, retimed=_then(slow, timing.text), excused=excused)
    if slow.what in MEMORIES:
        measured = regime(again.timing, MEMORIES[slow.what])
        if measured is None or measured.call_mb is None:
            return slow
        still = [s for s in memory(before, again, limits) if s.what == slow.what]
        return dataclasses.replace(slow, retimed=_then(slow, MEMORY_SHOWN.format(measured.call_mb)), excused=not still)
    name, shown = next((name, shown) for name, (what, shown) in MEASURES.items() if what == slow.what)
    value = getattr(again.measurements, name, None)
    if value is None:
        return slow
    still = [s for s in more(before, again, limits) if s.what == slow.what]
    now = getattr(current.measurements, name)
    noise = abs(value / now - 1) if now else 0.0  # two measurements of one commit: how far they lie apart
    excused = not still or noise >= slow.change
    return dataclasses.replace(slow, retimed=_then(slow, shown.format(value)), excused=excused)


def _then(slow: Slowdown, measured: str) -> str:
    """What ``slow``'s re-runs measured so far, this one last."""
    return f"{slow.retimed} / {measured}" if slow.retimed else measured


def rerun_matrix(current: Results, how: Rerun) -> str:
    """The matrix file the re-runs read: ``--matrix``; else the one the current run read, where that file still
    holds the text the run read (its digest); else the default (``how.matrix``). With the default alone, a run of
    ``--matrix ci/matrix.toml`` had its regressions re-run from another matrix, whose cells they are not (the
    re-runs measured nothing) or whose tolerances are others."""
    env = current.environment
    recorded, digest = env.get("matrix"), env.get("matrix_digest")
    if how.given or not recorded or not digest or file_digest(str(recorded)) != digest:
        return how.matrix
    return str(recorded)


def rerun_regressions(changes: list[Change], current: Results, how: Rerun) -> list[Change]:
    """The diff with each regression re-run ``how.times`` times here (not re-run, with a note, when
    ``current`` was measured on another machine)."""
    regressed = [change.id for change in changes if change.kind == "regression"]
    if not regressed or how.times <= 0:
        return changes
    differs = stamp_differs(current.environment, here_stamp(interpreted(current.environment)))
    if differs:
        there, here = differs
        print(
            f"note: not re-running regressions: {how.current} was measured with {there}, this machine has {here}: "
            "the regressions stand",
            file=sys.stderr,
        )
        return changes
    seen: dict[str, list[Status]] = {}
    matrix = rerun_matrix(current, how)
    for _ in range(how.times):
        for cell, status in _run_once(regressed, current, matrix).items():
            seen.setdefault(cell, []).append(status)
    return apply_reruns(changes, seen)


def apply_reruns(changes: list[Change], seen: dict[str, list[Status]]) -> list[Change]:
    """Each regression judged again by what its re-runs saw (``seen``: cell id -> each re-run's status, in
    order): wrong numbers on any re-run make it ``wrong``; else a pass on any makes it ``flaky``."""
    out = []
    for change in changes:
        statuses = seen.get(change.id, [])
        for status, kind in ((Status.WRONG, "wrong"), (Status.PASS, "flaky")):
            if change.kind == "regression" and status in statuses:
                decided = tuple(statuses[: statuses.index(status) + 1])  # up to the re-run that decided it
                change = dataclasses.replace(change, kind=kind, reruns=decided)
                break
        out.append(change)
    return out


def _run_once(cells: list[str], current: Results, matrix: str) -> dict[str, Status]:
    """One ``python -m harness run`` of ``cells``: each one's status (none where the re-run's own stamp is not the
    current run's)."""
    return {cell: record.status for cell, record in _run_cells(cells, current, matrix).items()}


def _run_cells(cells: list[str], current: Results, matrix: str) -> dict[str, Record]:
    """One ``python -m harness run`` of ``cells`` (no repro script run): each one's record (none where the run's
    own stamp is not the current run's)."""
    interrupt.check()  # a signal while torch imported (the stamp), which it may have lost
    with tempfile.TemporaryDirectory() as out:
        warm = current.environment.get("cold_cache") is False and current.environment.get("cache_dir")
        run_to_end(
            [
                sys.executable,
                "-m",
                "harness",
                "run",
                "--matrix",
                matrix,
                "--report-dir",
                out,
                "--cache-dir",
                str(warm or Path(out) / "cache"),  # cold as the current run's caches were, or warm as they were
                *own_cases(current.environment),
                *(f"{matrix}::{cell}" for cell in cells),
                *(["--interpret"] if interpreted(current.environment) else []),
                "-q",
            ]
        )
        file = Path(out) / "results.json"
        rerun = read_results(file) if file.exists() else None
        if rerun is None:  # the cells are the current run's as it measured them: said, not silently
            print(f"gate: the re-run of {len(cells)} cell(s) measured nothing: they stand as measured", file=sys.stderr)
            return {}
        if stamp_differs(current.environment, rerun.environment):
            return {}  # something else than the current run measured
        return {cell.id: cell for cell in rerun.cells}


def own_cases(env: dict[str, object]) -> list[str]:
    """The ``--cases`` the run was given (a case module of the user's named on its command line, not in the matrix
    file), for its re-run to find the same cells (without, their node ids were no cells of the selection)."""
    argv = [str(arg) for arg in env.get("argv") or []]  # type: ignore[attr-defined]
    given = [argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == "--cases"]
    given += [arg for arg in argv if arg.startswith("--cases=")]
    return [part for value in given for part in (["--cases", value] if not value.startswith("--") else [value])]


def run_to_end(command: list[str]) -> None:
    """Run ``command`` (a ``python -m harness run``), its output unread, in a session of its own (a Ctrl-C at the
    terminal reaches this process alone). Interrupted meanwhile, this process stops it before going on: SIGTERM,
    which the run takes as Ctrl-C (its zygote and cell processes stopped, its temp folders removed), then, after
    ``STOP_GRACE_S`` or another interrupt, SIGKILL to whatever is left of its process group."""
    run = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        run.wait()
    finally:
        try:
            if run.poll() is None:
                run.terminate()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    run.wait(STOP_GRACE_S)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(run.pid, signal.SIGKILL)
            run.wait()
