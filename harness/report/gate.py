"""The upgrade gate: a baseline run and a current run compared cell by cell, known failures applied. A cell that
gave no wrong numbers in the baseline (it passed, failed another way, or was not there) and gives wrong numbers on
any attempt now fails it, whatever a re-run says; a cell that
only fails sometimes (errors, crashes, timeouts) fails it unless ``--allow-flaky``."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from tabulate import tabulate

from harness.errors import InputError, input_text
from harness.records.environment import interpreted
from harness.records.record import Record
from harness.records.results import Results
from harness.report.broken import run_broke
from harness.report.chart import SYMBOLS, escape
from harness.report.history import label
from harness.report.marks import wrong_numbers
from harness.report.mismatch import magnitude, wrong_kernels
from harness.spec import FAILURES, Status

# Each class, the heading it gets, and whether it fails the gate: always, unless --allow-flaky ("flaky"), only
# with --strict, or never.
CLASSES = {
    "wrong": ("Wrong numbers (none before, now wrong on some attempt: never excused by a re-run)", "always"),
    "regression": ("Regressions (was pass, or ran right outside the compiled graph; now failing)", "always"),
    "missing": ("Missing cells (in the baseline, absent now)", "always"),
    "flaky": ("Flaky (was pass, now errs, crashes or times out on some attempts only)", "flaky"),
    "fix": ("Fixes (was not passing, now pass): refresh the baseline", "strict"),
    "stale_known": ("Stale known failures (listed, but the cell passes now)", "strict"),
    "known": ("Known failures (regressed, listed in the known-failures file)", "never"),
    "changed_failure": ("Changed failures (still failing, another way)", "never"),
    "runs_now": ("Run now, and failing (was skipped: the style or path applies now)", "never"),
    "skipped_now": ("Skipped now (was run, now skip)", "never"),
    "new": ("New cells", "never"),
}
# how the header counts each class: (one, several)
NOUNS = {
    "wrong": ("wrong cell", "wrong cells"),
    "regression": ("regression", "regressions"),
    "missing": ("missing cell", "missing cells"),
    "flaky": ("flaky cell", "flaky cells"),
    "fix": ("fix", "fixes"),
    "stale_known": ("stale known failure", "stale known failures"),
    "known": ("known failure", "known failures"),
    "changed_failure": ("changed failure", "changed failures"),
    "runs_now": ("cell run now and failing", "cells run now and failing"),
    "skipped_now": ("cell skipped now", "cells skipped now"),
    "new": ("new cell", "new cells"),
}


@dataclass(frozen=True)
class Change:
    """One cell whose outcome changed: its class (a key of ``CLASSES``), its record in each run (None: absent),
    and the statuses its re-runs on this machine gave (harness/cli/rerun.py), the one that decided its class last."""

    id: str
    kind: str
    before: Record | None
    after: Record | None
    reruns: tuple[Status, ...] = ()

    def shown(self) -> tuple[str, str]:
        """The baseline's and the current outcome as the gate's table shows them (``outcome``), the current one
        with what decided a re-judged regression: ``error (RuntimeError at run); pass on re-run 2``."""
        now = outcome(self.after)
        if self.reruns:
            now += f"; {self.reruns[-1]} on re-run {len(self.reruns)}"
        return outcome(self.before), now


@dataclass(frozen=True)
class KnownFailure:
    id: str
    reason: str
    link: str


def outcome(record: Record | None) -> str:
    """A cell's status as the diff shows it: ``error (RuntimeError at trace)``, ``wrong 2/5 (Mismatch at
    compare)`` for a cell that failed on 2 of its 5 attempts."""
    if record is None:
        return "—"
    status = record.status_text
    if record.status in FAILURES:
        detail = " at ".join(part for part in (record.error_type, record.stage) if part)
        return f"{status} ({detail})" if detail else status
    return status


def classify(before: Record | None, after: Record | None) -> str | None:
    """The change class of one cell, by its measured pass rate (a cell re-run within its run has one), or
    None when nothing a user cares about changed. A cell that passed every time and now passes only
    sometimes is flaky; one that passed at least half the time and now never passes has regressed. One that gave
    no wrong numbers before (passed, failed another way, or was not in the baseline) and now gives wrong numbers on
    any attempt is ``wrong``: new wrong numbers never pass the gate. One whose kernel ran outside the compiled graph
    (``graph_break``: right numbers) and now never runs to right numbers has regressed too."""
    if after is None:
        return "missing"
    if wrong_numbers(after) and (before is None or not wrong_numbers(before)):
        return "wrong"
    if before is None:
        return "new"
    if before.status == Status.GRAPH_BREAK and not set(after.attempts) & {Status.PASS, Status.GRAPH_BREAK}:
        return "regression"
    was, now = before.pass_rate, after.pass_rate
    if now is None:
        return "skipped_now" if was is not None else None
    if was is None:
        return "runs_now" if now < 1 else "fix"
    if now == 1:
        return "fix" if was < 1 else None
    if 0 < now < 1:
        return "flaky" if was in (0, 1) else None
    if was == 1 or was >= 0.5:
        return "regression"
    if was > 0 or _how(before) != _how(after):
        return "changed_failure"
    return None


def _how(record: Record) -> tuple[str, str | None, str | None]:
    return record.status, record.error_type, record.stage


def diff(baseline: Results, current: Results, known: dict[str, KnownFailure] | None = None) -> list[Change]:
    """Every cell whose outcome changed, in baseline order then new cells; known failures applied."""
    known = known or {}
    before, after = baseline.by_id(), current.by_id()
    changes = []
    for cell_id in [*before, *(c for c in after if c not in before)]:
        kind = classify(before.get(cell_id), after.get(cell_id))
        if cell_id in known and kind != "wrong":  # a known failure never excuses new wrong numbers
            now = after.get(cell_id)
            if now is not None and now.pass_rate == 1:  # passes on every attempt, not on its first alone
                kind = "stale_known"
            elif kind == "regression":
                kind = "known"
        if kind is not None:
            changes.append(Change(cell_id, kind, before.get(cell_id), after.get(cell_id)))
    return changes


def check_comparable(baseline: Results, current: Results, baseline_file: str, current_file: str) -> None:
    """A gate that compares nothing must not pass: empty or all-skip runs, runs that broke or are incomplete,
    unrelated case sets, and a run under Triton's interpreter against one on the device are errors."""
    for run, file in ((baseline, baseline_file), (current, current_file)):
        broke = run_broke(run)
        if broke:
            raise InputError(file, "cells", f"the run broke: {broke}; not gated")
        if run.environment.get("complete") is False:
            expected = len(run.environment.get("expected_cells") or [])
            recorded = f" ({len(run.cells)} of {expected} selected cells recorded)" if expected else ""
            raise InputError(file, "environment.complete", f"false: the run is incomplete{recorded}; not gated")
    if not any(cell.status != Status.SKIP for cell in current.cells):
        raise InputError(current_file, "cells", "no cell ran (empty or all skip): nothing to gate")
    if not any(cell.status != Status.SKIP for cell in baseline.cells):
        raise InputError(baseline_file, "cells", "no cell ran (empty or all skip): nothing to gate against")
    shares = [run.environment.get("shard") for run in (baseline, current)]
    if shares[0] and shares[0] != shares[1]:  # the other shares' cells would be new cells, which never fail
        raise InputError(
            baseline_file,
            "environment.shard",
            f"{shares[0]}: the baseline is one share of a run, the current run "
            + (f"share {shares[1]}" if shares[1] else "is whole")
            + ": merge the baseline's shares (python -m harness merge) or gate a share against the same share",
        )
    cases_before = {cell.case for cell in baseline.cells}
    cases_now = {cell.case for cell in current.cells}
    if not cases_before & cases_now:
        raise InputError(
            baseline_file,
            "cells",
            f"another case set ({', '.join(sorted(cases_before))}) "
            f"than the current run's ({', '.join(sorted(cases_now))})",
        )
    was, now = (interpreted(run.environment) for run in (baseline, current))
    if was != now:
        raise InputError(
            current_file,
            "environment.triton_interpret",
            f"{str(now).lower()}, the baseline's {str(was).lower()}: a run in Triton's CPU interpreter "
            "(--interpret) cannot be gated against a run on the device",
        )
    devices = [run.environment.get("device") for run in (baseline, current)]
    if not now and devices[0] not in (None, "cpu") and devices[1] == "cpu":
        raise InputError(
            current_file,
            "environment.device",
            f"{devices[1]}, the baseline's {devices[0]}: a run on a host without a GPU cannot be gated against one "
            "with a GPU (its GPU cells are skips there, which do not fail a gate)",
        )


def load_known(file: Path | str, cell_ids: set[str]) -> dict[str, KnownFailure]:
    """``[[known]]`` entries with ``id``, ``reason`` and ``link``; an entry that matches no cell is an error."""
    file = Path(file)
    try:
        data = tomllib.loads(input_text(file))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise InputError(file, "(syntax)", str(error)) from None
    except RecursionError:
        raise InputError(file, "(syntax)", "nested too deep to read") from None
    entries = data.get("known", [])
    if set(data) - {"known"} or not isinstance(entries, list):
        raise InputError(file, "(top)", "expected only [[known]] entries")
    known: dict[str, KnownFailure] = {}
    for index, entry in enumerate(entries):
        key = f"known[{index}]"
        if not isinstance(entry, dict) or set(entry) != {"id", "reason", "link"}:
            raise InputError(file, key, "expected exactly the keys id, reason, link")
        if not all(isinstance(entry[name], str) and entry[name] for name in ("id", "reason", "link")):
            raise InputError(file, key, "id, reason and link must be non-empty strings")
        if entry["id"] not in cell_ids:
            raise InputError(file, f"{key}.id", f"matches no cell: {entry['id']!r}")
        if entry["id"] in known:
            raise InputError(file, f"{key}.id", f"listed twice: {entry['id']!r}")
        known[entry["id"]] = KnownFailure(**entry)
    return known


def failing(changes: list[Change], strict: bool, allow_flaky: bool = False) -> list[Change]:
    """The changes that fail the gate: wrong numbers, regressions and missing cells always; flaky cells unless
    ``allow_flaky`` (``--strict`` fails them even then); fixes and stale known failures with ``strict``."""
    fails = {"always"} | ({"strict", "flaky"} if strict else set()) | (set() if allow_flaky else {"flaky"})
    return [change for change in changes if CLASSES[change.kind][1] in fails]


def counts(changes: list[Change]) -> str:
    """``2 regressions, 1 wrong cell``: each class present, counted, in CLASSES' order."""
    numbers = {kind: sum(c.kind == kind for c in changes) for kind in CLASSES}
    return ", ".join(f"{n} {NOUNS[kind][n != 1]}" for kind, n in numbers.items() if n) or "no changes"


def commit(env: dict) -> str:
    """`` · commit abc123``, or `` · commit unknown`` for a run without one (an installed harness has no git)."""
    return f" · commit {env['commit']}" if env.get("commit") else " · commit unknown"


def render(
    changes: list[Change],
    baseline: Results,
    current: Results,
    strict: bool,
    known: dict[str, KnownFailure] | None = None,
    allow_flaky: bool = False,
    slower: tuple[int, list[str]] = (0, []),
    current_file: str | Path | None = None,
) -> str:
    """The gate's markdown; ``slower``: how many cells got slower, and their section (harness/report/speedgate.py),
    which fails the gate; ``current_file``: the current run's results, whose repro scripts the failing cells name."""
    known = known or {}
    verdict = "FAIL" if failing(changes, strict, allow_flaky) or slower[0] else "PASS"
    flags = [flag for flag, on in (("strict", strict), ("--allow-flaky", allow_flaky)) if on]
    slow = f", {slower[0]} slower" if slower[0] else ""
    out = [
        f"# Upgrade gate: {verdict}",
        "",
        f"- baseline: {label(baseline.environment)}{commit(baseline.environment)}",
        f"- current: {label(current.environment)}{commit(current.environment)}",
        f"- {counts(changes)}{slow}" + (f" ({', '.join(flags)})" if flags else ""),
        "",
        *kernel_lines(changes, current),
        *slower[1],
    ]
    for kind, (heading, fails) in CLASSES.items():
        rows = [c for c in changes if c.kind == kind]
        if not rows:
            continue
        wrong = any(c.after is not None and wrong_numbers(c.after) for c in rows)  # a column: how wrong
        table = [
            [c.id, *(_mark(record, text) for record, text in zip((c.before, c.after), c.shown(), strict=True))]
            + ([_how_wrong(c.after)] if wrong else [])
            + ([escape(known[c.id].reason, 120), known[c.id].link] if c.id in known else [])
            for c in rows
        ]
        headers = ["cell", "baseline", "current"] + (["how wrong"] if wrong else [])
        headers += ["reason", "link"] if any(c.id in known for c in rows) else []
        gate_word = {
            "always": "fails the gate",
            "flaky": "fails the gate" if strict or not allow_flaky else "allowed by --allow-flaky",
            "strict": "fails with --strict",
            "never": "does not fail",
        }[fails]
        out += [f"## {heading} — {gate_word}", "", tabulate(table, headers=headers, tablefmt="github"), ""]
        out += repro_lines(rows, current_file) if kind in REPRODUCED else []
    return "\n".join(out)


REPRODUCED = ("wrong", "regression", "flaky")  # the classes whose cells name their repro script


def repro_lines(rows: list[Change], current_file: str | Path | None) -> list[str]:
    """Each failing cell's repro: the script its run wrote and ran (beside the current results file), or the
    command that writes one."""
    out = []
    for change in rows:
        if change.after is None or not change.after.failed:
            continue
        found = change.after.confirmation or {}
        script = found.get("script")
        where = Path(current_file).parent / script if script and current_file else None
        if where is not None and where.is_file():
            said = {True: " (reproduced outside the harness)", False: " (NOT reproduced outside the harness)"}
            out.append(f"- {change.id}: `{where}`{said.get(found.get('reproduced'), '')}")
        else:
            results = f" --results {current_file}" if current_file else ""
            out.append(f"- {change.id}: `python -m harness repro {change.id}{results}` (writes its script)")
    return ["Repro scripts:", "", *out, ""] if out else []


def kernel_lines(changes: list[Change], current: Results) -> list[str]:
    """Once per case of the changes whose kernel is wrong on eager in every style that ran to a comparison there,
    while its control passes (``wrong_kernels``): its wrong cells are the kernel's bug, not as many wrapping
    problems."""
    changed = {c.after.case for c in changes if c.after is not None and wrong_numbers(c.after)}
    out = []
    for case, kernel in wrong_kernels(current.cells).items():
        if case in changed:
            size = f", max abs diff {kernel.diff:.4g}" if kernel.diff is not None else ""
            out.append(
                f"**The kernel of case {case} is wrong** (wrong in {kernel.scope()} on eager{size}; its control "
                "passes): fix the kernel first, its cells below are that one bug."
            )
    return [*out, ""] if out else []


def _how_wrong(record: Record | None) -> str:
    """The magnitude of a cell's wrong numbers (max abs and rel difference), else nothing."""
    return escape(magnitude(record), 120) if record is not None and wrong_numbers(record) else ""


def _mark(record: Record | None, text: str) -> str:
    """``text`` led by the chart's mark of the record's status (none for an absent cell)."""
    return escape(text, 120) if record is None else f"{SYMBOLS[record.status]} {escape(text, 120)}"
