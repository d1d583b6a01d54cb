"""Reproducers: a script per distinct failure of a run and style and path (``repros/<failure>.py``), short enough
for a bug report (harness/repro/script.py). It imports torch and triton (and the case's own imports), never the
harness, and raises while the failure is there. ``python -m harness repro CELL-ID`` writes one for any other cell
on demand (``named_scripts``).
Cells fail "the same way" when their stage, error type and message match once case-specific names and numbers are
set aside.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.case import CaseExited, exit_words, exits_raise
from harness.errors import InputError
from harness.records.record import Record
from harness.records.results import Results
from harness.repro.bundled import bundled_source
from harness.repro.script import MARKER, script_source
from harness.spec import Status

SPECIFIC = (
    (re.compile(r"harness::\w+"), "harness::OP"),  # an op registered per case and style
    (re.compile(r"0x[0-9a-fA-F]+"), "ADDR"),
    (re.compile(r"\d+(\.\d+)?(e[-+]?\d+)?"), "N"),
)
MAX_NAME = 80
MAX_FIRST_LINE = 1000  # a script's first line is its cell id and MARKER


def failure_signature(record: Record, kernel: bool = True) -> str:
    """How a cell failed, with what is specific to its case set aside: status, style, path (each failing style and
    path has a script of its own), stage, error type and the message's (a graph break's reason's) first line with
    op names, addresses, numbers and the cell's own ids replaced; wrong numbers also by case (two kernels' wrong
    numbers are two bugs, however alike their messages), unless ``kernel`` is False (a script's file name)."""
    lines = (record.error or record.reason or "").strip().splitlines()  # a graph break has its reason, no error
    message = lines[0] if lines else ""
    for name in (record.case, record.style, record.path):
        message = re.sub(rf"\b{re.escape(name)}\b", "ID", message)
    for pattern, replacement in SPECIFIC:
        message = pattern.sub(replacement, message)
    own = record.case if kernel and record.status == Status.WRONG else ""  # wrong numbers are each kernel's own
    parts = (record.status, record.style, record.path, record.stage, record.error_type, message, own)
    return " | ".join(str(part) for part in parts)


def write_repros(
    results: Results, tolerances: dict[str, Any], out_dir: Path, leaders: dict[str, str] | None = None
) -> dict[Path, list[str]]:
    """Into ``out_dir`` (the older scripts the harness wrote removed first, never a file of the user's:
    ``written_by_harness``): one script per distinct failure of ``results`` (every status but pass and skip),
    named after the failure and listing every cell it stands for, written for its first cell, or for the cell
    ``leaders`` names for its signature (the one whose script already ran). Returns each script with the cells it
    stands for, the one written for first."""
    groups: dict[str, list[Record]] = {}
    for record in results.cells:
        if record.status not in (Status.PASS, Status.SKIP) and record.module:
            groups.setdefault(failure_signature(record), []).append(record)
    for key, group in groups.items():
        lead = (leaders or {}).get(key)
        group.sort(key=lambda record: record.id != lead)  # stable: the leader first, the rest in order
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("*.py"):
        if written_by_harness(old):  # never a file of the user's (``--out .``): only the scripts it wrote
            old.unlink()
    written: dict[Path, list[str]] = {}
    for group in groups.values():
        target = free_name(out_dir, _file_name(failure_signature(group[0], kernel=False)), written)
        target.write_text(safe_source(group[0], results.environment, tolerances, [r.id for r in group[1:]]))
        written[target] = [record.id for record in group]
    return written


def recorded_leaders(results: Results) -> dict[str, str]:
    """Failure signature -> the cell whose script the run ran for it (its records' confirmations name it), so that
    ``repro`` writes the run's own scripts again, each for the cell the run wrote it for."""
    return {
        failure_signature(record): str(record.confirmation["cell"])
        for record in results.cells
        if record.confirmation and record.confirmation.get("cell")
    }


def named_scripts(
    results: Results, tolerances: dict[str, Any], out_dir: Path, cells: list[str], long: bool = False
) -> dict[Path, tuple[str, str]]:
    """The script of each cell named (any status), to go into ``out_dir`` beside the scripts already there: its
    file -> (the cell, the script). Nothing is written: a cell without a record, or whose script cannot be written
    (its case module deleted or broken since the run), is an ``InputError``."""
    records = results.by_id()
    unknown = [cell for cell in cells if cell not in records or not records[cell].module]
    if unknown:
        close = {cell: difflib.get_close_matches(cell, list(records), n=1, cutoff=0.8) for cell in unknown}
        named = ", ".join(f"{cell} (did you mean {close[cell][0]}?)" if close[cell] else cell for cell in unknown)
        raise InputError("command line", "CELL", f"no record with a case module for: {named}")
    scripts: dict[Path, tuple[str, str]] = {}
    for cell in dict.fromkeys(cells):
        source = named_source(records[cell], results.environment, tolerances, long)
        scripts[free_name(out_dir, cell, scripts)] = (cell, source)
    return scripts


def named_source(record: Record, env: dict[str, Any], tolerances: dict[str, Any], long: bool = False) -> str:
    """The script of a cell named on the command line (``long``: the harness's program copied in, which a timed
    script runs: harness/cli/timed_repro.py); ``InputError`` where it cannot be written (the case module no longer
    imports, exits, or no longer defines the case), never the stand-in ``safe_source`` writes for a run."""
    try:
        with exits_raise():
            return bundled_source(record, env, tolerances) if long else script_source(record, env, tolerances)
    except (Exception, SystemExit, CaseExited) as error:
        cause = exit_words(error) if isinstance(error, SystemExit | CaseExited) else f"{type(error).__name__}: {error}"
        problem = f"{record.id}: no script written: its case module {record.module} does not give it ({cause})"
        raise InputError("command line", "CELL", problem) from None


def free_name(out_dir: Path, name: str, taken: Mapping[Path, object]) -> Path:
    """``out_dir/name.py``, or ``name-2.py`` and on where that is ``taken`` (by this call's scripts) or a file of
    the user's."""
    target, n = out_dir / f"{name}.py", 2
    while target in taken or (target.exists() and not written_by_harness(target)):
        target, n = out_dir / f"{name}-{n}.py", n + 1
    return target


def safe_source(record: Record, env: dict[str, Any], tolerances: dict[str, Any], also: list[str] | None = None) -> str:
    """The record's script; where the harness cannot write one, a script that says so and raises ``ReproNotWritten``
    (no cell records that error: the failure is then a suspect, unconfirmed)."""
    try:
        return script_source(record, env, tolerances, also)
    except Exception as error:  # a case module the renderer cannot inline, say: the run goes on
        message = f"the harness could not write the repro of {record.id}: {type(error).__name__}: {error}"
        head = f'"""{record.id}{MARKER}"""\n\n\n'
        return f"{head}class ReproNotWritten(Exception):\n    pass\n\n\nraise ReproNotWritten({message!r})\n"


def written_by_harness(file: Path) -> bool:
    """Whether ``file`` is a script the harness wrote: its first line opens the docstring with the cell id and
    ends with ``MARKER`` (``script_source``'s, ``safe_source``'s)."""
    try:
        with open(file, encoding="utf-8", errors="replace") as text:
            first = text.readline(MAX_FIRST_LINE).rstrip("\n")
    except OSError:  # unreadable, a folder named *.py: not the harness's
        return False
    return first.startswith('"""') and first.endswith(MARKER)


def _file_name(signature: str) -> str:
    """A failure signature as a file name: lowercase words joined by '-', at most MAX_NAME characters."""
    words = re.findall(r"[a-z0-9]+", signature.lower().replace("harness::op", "op"))
    name = "-".join(words)[:MAX_NAME].rstrip("-")
    return name or "failure"
