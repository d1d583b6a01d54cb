"""Reproducers: a script per distinct failure of a run (``repros/<failure>.py``): the cell's program as a file
(harness/repro/script.py). It imports torch and triton (and the case's own imports), never the harness, and
raises while the failure is there. ``python -m harness repro CELL-ID`` writes one for any other cell on demand.
Cells fail "the same way" when their stage, error type and message match once case-specific names and numbers are
set aside.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

from harness.errors import InputError
from harness.records.record import Record
from harness.records.results import Results
from harness.repro.script import MARKER, script_source
from harness.spec import Status

SPECIFIC = (
    (re.compile(r"harness::\w+"), "harness::OP"),  # an op registered per case and style
    (re.compile(r"0x[0-9a-fA-F]+"), "ADDR"),
    (re.compile(r"\d+(\.\d+)?(e[-+]?\d+)?"), "N"),
)
MAX_NAME = 80
MAX_FIRST_LINE = 1000  # a script's first line is its cell id and MARKER


def failure_signature(record: Record) -> str:
    """How a cell failed, with what is specific to its case set aside: status, stage, error type and the
    message's (a graph break's reason's) first line with op names, addresses, numbers and the cell's own ids
    replaced."""
    lines = (record.error or record.reason or "").strip().splitlines()  # a graph break has its reason, no error
    message = lines[0] if lines else ""
    for name in (record.case, record.style, record.path):
        message = re.sub(rf"\b{re.escape(name)}\b", "ID", message)
    for pattern, replacement in SPECIFIC:
        message = pattern.sub(replacement, message)
    return " | ".join(str(part) for part in (record.status, record.stage, record.error_type, message))


def write_repros(
    results: Results,
    tolerances: dict[str, Any],
    out_dir: Path,
    cells: list[str] | None = None,
    leaders: dict[str, str] | None = None,
) -> dict[Path, list[str]]:
    """Into ``out_dir``: for the ``cells`` named, one script each, beside the scripts already there; else (the
    older scripts the harness wrote removed first, never a file of the user's: ``written_by_harness``) one script
    per distinct failure of ``results`` (every status but pass and skip), named after the failure and listing
    every cell it stands for, written for its first cell, or for the cell ``leaders`` names for its signature (the
    one whose script already ran). Returns each script with the cells it stands for, the one written for first."""
    records = results.by_id()
    unknown = [cell for cell in cells or [] if cell not in records or not records[cell].module]
    if unknown:
        raise InputError("command line", "CELL", f"no record with a case module for: {', '.join(unknown)}")
    if cells:
        groups = {cell: [records[cell]] for cell in cells}
    else:
        groups = {}
        for record in results.cells:
            if record.status not in (Status.PASS, Status.SKIP) and record.module:
                groups.setdefault(failure_signature(record), []).append(record)
        for key, group in groups.items():
            lead = (leaders or {}).get(key)
            group.sort(key=lambda record: record.id != lead)  # stable: the leader first, the rest in order
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in [] if cells else out_dir.glob("*.py"):
        if written_by_harness(old):  # never a file of the user's (``--out .``): only the scripts it wrote
            old.unlink()
    written: dict[Path, list[str]] = {}
    for key, group in groups.items():
        name = group[0].id if cells else _file_name(key)
        target = out_dir / f"{name}.py"
        for n in itertools.count(2):  # a name taken by this call's scripts or by a file of the user's: the next
            if target not in written and not (target.exists() and not written_by_harness(target)):
                break
            target = out_dir / f"{name}-{n}.py"
        target.write_text(safe_source(group[0], results.environment, tolerances, [r.id for r in group[1:]]))
        written[target] = [record.id for record in group]
    return written


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


