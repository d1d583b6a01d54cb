"""records.jsonl: a run as JSON lines, each appended and flushed the moment it is known (as pytest-reportlog
does), so a killed run keeps every cell it finished. The first line is ``{"environment": ...}``, then one
``{"record": ...}`` per cell (the kept ones first: resumed, reused), and ``{"end": ...}`` once the run is over.
results.json is derived from these lines (``read_log``): at the end of the run, and by ``python -m harness report``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import IO, Any

from harness.errors import InputError, input_text
from harness.records.environment import RunEnvironment
from harness.records.record import Record
from harness.records.results import Results, check_record, memory_by_process, ordered

LOG_NAME = "records.jsonl"


def _line(kind: str, value: Any) -> str:
    return json.dumps({kind: value}, default=repr) + "\n"


class RecordLog:
    """The writing end: ``start`` (atomically: the environment and the records kept), ``append`` per record,
    ``end``. Each line is flushed before the call returns; an ``OSError`` is the caller's to report."""

    def __init__(self, file: Path) -> None:
        self.file = file
        self.stream: IO[str] | None = None

    def start(self, environment: dict[str, Any], kept: list[Record]) -> None:
        self.file.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.file.with_name(self.file.name + ".tmp")
        tmp.write_text(_line("environment", environment) + "".join(_line("record", r.to_dict()) for r in kept))
        os.replace(tmp, self.file)
        self.stream = self.file.open("a")

    def append(self, record: Record) -> None:
        assert self.stream is not None, "start() first"
        self.stream.write(_line("record", record.to_dict()))
        self.stream.flush()

    def end(self, summary: dict[str, Any]) -> None:
        if self.stream is not None:
            self.stream.write(_line("end", summary))
            self.stream.close()
            self.stream = None


def read_log(file: Path | str) -> Results:
    """The results a records.jsonl holds: its environment (with the end line's summary, ``complete`` false
    without one), the last record of each cell in the order of ``expected_cells``, the memory by process. A
    last line cut short (the run was killed while writing it) is left out with one warning line on stderr; a
    damaged line before it is an ``InputError``."""
    file = Path(file)
    try:
        lines = input_text(file).splitlines()
    except UnicodeDecodeError as error:
        raise InputError(file, "(text)", f"not UTF-8 ({error})") from None
    environment: dict[str, Any] | None = None
    end: dict[str, Any] = {}
    records: dict[str, Record] = {}
    for number, text in enumerate(lines, 1):
        try:
            entry = json.loads(text)
        except json.JSONDecodeError as error:
            if number == len(lines):
                print(f"warning: {file}: line {number}: cut short (a killed run?), left out", file=sys.stderr)
                break
            raise InputError(file, f"line {number}", f"not valid JSON ({error})") from None
        except RecursionError:
            raise InputError(file, f"line {number}", "nested too deep to read") from None
        kind, value = next(iter(entry.items())) if isinstance(entry, dict) and len(entry) == 1 else (None, None)
        if kind == "environment" and isinstance(value, dict) and environment is None:
            environment = value
        elif kind == "record":
            record = check_record(value, file, f"line {number}")
            records[record.id] = record
        elif kind == "end" and isinstance(value, dict):
            RunEnvironment.from_dict(value, file, f"line {number}.end")
            end = value
        else:
            raise InputError(file, f"line {number}", "expected one of environment (first), record, end")
    if environment is None:
        raise InputError(file, "line 1", "expected the run's environment")
    RunEnvironment.from_dict(environment, file)
    return assemble(environment, records, end, from_log=True)


def assemble(environment: dict[str, Any], records: dict[str, Record], end: dict[str, Any], from_log: bool) -> Results:
    """The results of a run's lines: its ``environment`` with the ``end`` line's summary (``complete`` false
    without one, or while a cell of ``expected_cells`` has no record), its ``records`` (cell id -> the last one)
    in the order of ``expected_cells``, the memory by process."""
    expected = environment.get("expected_cells") or list(records)
    env = {**environment, "complete": False, **end}
    env["complete"] = bool(env["complete"]) and set(records).issuperset(expected)
    env["memory"] = memory_by_process([record for record in records.values() if not record.reused_from])
    return Results(env, ordered(records.values(), expected), from_log=from_log)
