"""A run's results: its environment stamp and one ``Record`` per cell; results.json written and read (checked,
and an older file upgraded once, by its ``schema``), shards merged."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import InputError
from harness.records.environment import RunEnvironment, interpreted
from harness.records.record import Record
from harness.records.upgrade import Catalogue, upgrade
from harness.spec import CellId, Measurements

# 3: a record's typed capture and measurements in place of its diagnostics (a 2's are read into them, from_diagnostics);
# 2: records are checked against the Status and Stage vocabularies; 1 is upgraded when read
SCHEMA = 3
# what a share's matrix file stamps on it, whatever its cells
MATRIX_KEYS = ("matrix", "matrix_digest", "tolerances", "goals", "goal_sets")


@dataclass
class Results:
    environment: dict[str, Any]
    cells: list[Record]
    from_log: bool = False  # read from a run's records.jsonl (results.json not written yet, or older)

    def by_id(self) -> dict[str, Record]:
        return {record.id: record for record in self.cells}

    def to_data(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "environment": self.environment, "cells": [r.to_dict() for r in self.cells]}


def write_results(file: Path, results: Results) -> None:
    """Write atomically: a reader (or a killed run) sees the old file or the new one, never half of one; an
    ``OSError`` (a full disk, a folder in the way) leaves no temp file."""
    file.parent.mkdir(parents=True, exist_ok=True)
    tmp = file.with_name(file.name + ".tmp")
    try:
        tmp.write_text(json.dumps(results.to_data(), indent=1, default=repr) + "\n")
        os.replace(tmp, file)
    except OSError:
        with contextlib.suppress(OSError):  # a full disk leaves a part-written one: nothing half-done stays
            tmp.unlink()
        raise


def load(data: Any, file: Path | str, catalogue: Catalogue) -> Results:
    """The typed results of a results file's JSON ``data``; a schema 1 file is upgraded first (its undescribed
    styles and paths described from ``catalogue``)."""
    if not isinstance(data, dict):
        raise InputError(file, "(top)", "expected an object with 'environment' and 'cells'")
    if type(data.get("schema")) is not int or data["schema"] not in (1, 2, SCHEMA):  # true is no schema
        raise InputError(file, "schema", f"expected 1, 2 or {SCHEMA}, got {data.get('schema')!r}")
    if not isinstance(data.get("environment"), dict):
        raise InputError(file, "environment", "expected an object")
    if not isinstance(data.get("cells"), list):
        raise InputError(file, "cells", "expected a list of records")
    RunEnvironment.from_dict(data["environment"], file)
    if data["schema"] == 1:
        data = upgrade(data, catalogue)
    seen: set[str] = set()
    cells = []
    for index, cell in enumerate(data["cells"]):
        record = check_record(cell, file, f"cells[{index}]")
        if record.id in seen:
            raise InputError(file, f"cells[{index}].id", f"duplicate cell {record.id!r}")
        seen.add(record.id)
        cells.append(record)
    return Results(data["environment"], cells)


def check_record(cell: Any, file: Path | str, key: str) -> Record:
    """One record's JSON object, checked: ``InputError`` names ``key`` and the field that is wrong."""
    if not isinstance(cell, dict):
        raise InputError(file, key, "expected a record object")
    if not isinstance(cell.get("id"), str):
        raise InputError(file, f"{key}.id", "missing or not a string")
    record = Record.from_dict(cell, file, key)
    for axis in ("case", "style", "path"):
        if "-" in getattr(record, axis) or not getattr(record, axis):
            raise InputError(file, f"{key}.{axis}", f"not an id (no '-', not empty): {getattr(record, axis)!r}")
    if cell["id"] != record.id:
        raise InputError(file, f"{key}.id", f"{cell['id']!r} is not its case-style-path")
    return record


def memory_by_process(cells: list[Record]) -> dict[str, Any]:
    """Per cell process (pid): cells run, host RSS after its first and last cell, its peaks (host, GPU), the RSS
    growth per cell from a least-squares line over the series (growth shows as a positive slope), and where it used
    CUDA, what its caching allocator kept reserved after its last cell."""
    series: dict[int, list[tuple[int, Measurements]]] = {}
    for cell in cells:
        measured = cell.measurements
        if measured.pid is not None and measured.rss_mb is not None:
            series.setdefault(measured.pid, []).append((measured.nth or 0, measured))
    processes = {}
    for pid, points in series.items():
        points.sort(key=lambda point: point[0])
        xs = [float(n) for n, _ in points]
        ys = [float(m.rss_mb or 0) for _, m in points]
        mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
        spread = sum((x - mean_x) ** 2 for x in xs)
        slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread if spread else 0.0
        processes[str(pid)] = {
            "cells": len(points),
            "gpu": points[0][1].gpu,
            "rss_first_mb": ys[0],
            "rss_last_mb": ys[-1],
            "peak_rss_mb": max(float(m.peak_rss_mb or 0) for _, m in points),
            "gpu_peak_mb": max(float(m.gpu_peak_mb or 0) for _, m in points),
            "rss_mb_per_cell": round(slope, 2),
        }
        held = points[-1][1].gpu_held_mb  # what its kept artifacts hold at the end, where it used CUDA
        if held is not None:
            processes[str(pid)]["gpu_held_last_mb"] = held
    return processes


def merge(runs: list[tuple[str, Results]]) -> Results:
    """One results file from shards of one matrix run (one commit, one matrix file) on machines alike (same torch,
    triton, device) and of one selection (same axes, same N of ``--shard I/N``, dealt by the same seconds), its cells
    in the matrix's order. It is ``complete`` only when every share of the N is there, complete, and every selected
    cell has a record; a missing share's cells (dealt again from the axes; of shares balanced by seconds, those no
    share given holds) are expected cells without a record, so the chart lists them and no goal is answered from the
    shares there."""
    first_file, first = runs[0]
    env = dict(first.environment)
    cells: dict[str, Record] = {}
    runs = sorted(runs, key=lambda run: _share(run[0], run[1].environment) or (0, 0))
    lists = [results.environment.get("expected_cells", []) for _, results in runs]
    interleaved = [lst[i] for i in range(max(map(len, lists), default=0)) for lst in lists if i < len(lst)]
    position = {cell: index for index, cell in enumerate(_selection(env))}  # the matrix order
    expected = sorted(interleaved, key=lambda cell: position.get(cell, len(position)))
    shares: dict[int, str] = {}
    for file, results in runs:
        other = results.environment
        for key in ("torch", "triton", "device"):
            if other.get(key) != env.get(key):
                raise InputError(
                    file, f"environment.{key}", f"{other.get(key)!r}, but {first_file} has {env.get(key)!r}"
                )
        if interpreted(other) != interpreted(env):
            raise InputError(
                file,
                "environment.triton_interpret",
                f"{interpreted(other)}, but {first_file} has {interpreted(env)}: "
                "a run in Triton's interpreter (--interpret) and one on the device do not merge",
            )
        _same_run(file, other, first_file, env)  # before the cells: shares of two runs overlap, and say why
        _same_selection(file, other, first_file, env, shares)
        for index, cell in enumerate(results.cells):
            if cell.id in cells:
                raise InputError(file, f"cells[{index}].id", f"{cell.id!r} is in another shard too")
            cells[cell.id] = cell
    split = _share(first_file, env)
    missing = [n for n in range(1, split[1] + 1) if n not in shares] if split else []
    if missing:
        dealt = _selection(env)
        if env.get("shard_digest"):  # balanced by --shard-by: the missing shares hold what no share given holds
            gone = set(dealt) - set(expected)
        else:  # cell k went to share k mod N
            gone = {cell for k, cell in enumerate(dealt) if k % split[1] + 1 in missing}
        expected = [cell for cell in dealt if cell in gone or cell in set(expected)] + [
            cell for cell in expected if cell not in set(dealt)
        ]
    environments = [results.environment for _, results in runs]
    for key in ("shard", "shard_by", "shard_digest"):
        env.pop(key, None)
    env.pop("timing_seconds", None)  # each share had its own phase: shard_timing_seconds
    env.update(
        expected_cells=expected,
        complete=not missing
        and all(e.get("complete") for e in environments)
        and all(cell in cells for cell in expected),
        wall_seconds=max(e.get("wall_seconds") or 0 for e in environments),
        workers=sum(e.get("workers") or 0 for e in environments),
        shards=len(runs),
        shard_wall_seconds=[e.get("wall_seconds") or 0.0 for e in environments],
        shard_timing_seconds=[e.get("timing_seconds") or 0.0 for e in environments],
        hosts=sorted({str(e.get("host")) for e in environments}),
    )
    if missing:
        env["missing_shares"] = [f"{n}/{split[1]}" for n in missing]
    return Results(env, ordered(cells.values(), expected))


def _share(file: str, env: dict[str, Any]) -> tuple[int, int] | None:
    """A share's ``(I, N)`` of ``--shard I/N`` (None: a run not sharded); a malformed one is bad input."""
    text = env.get("shard")
    if text is None:
        return None
    index, _, count = str(text).partition("/")
    if not (index.isdecimal() and count.isdecimal() and 1 <= int(index) <= int(count)):
        raise InputError(file, "environment.shard", f"expected I/N with 1 <= I <= N, got {text!r}")
    return int(index), int(count)


def _same_run(file: str, other: dict[str, Any], first_file: str, env: dict[str, Any]) -> None:
    """Shares merge only as shares of one run: of one commit, and of one matrix file (its name, its text's digest,
    its tolerances, goals and goal sets)."""
    for key in ("commit", *MATRIX_KEYS):
        mine, theirs = _compared(key, other.get(key)), _compared(key, env.get(key))
        if mine != theirs:
            what = "commits" if key == "commit" else "matrix files"
            raise InputError(
                file,
                f"environment.{key}",
                f"{mine!r:.80}, but {first_file} has {theirs!r:.80}: shares of different {what} do not merge",
            )


def _compared(key: str, value: Any) -> Any:
    """What of an environment's ``key`` shares must agree on: the matrix file by its name (each runner has its own
    checkout), anything else as it is."""
    return Path(value).name if key == "matrix" and isinstance(value, str) else value


def _same_selection(
    file: str, other: dict[str, Any], first_file: str, env: dict[str, Any], shares: dict[int, str]
) -> None:
    """Shares merge only as shares of one selection, split once: the same axes, the same N, each I once."""
    if other.get("axes") != env.get("axes"):
        raise InputError(
            file,
            "environment.axes",
            f"another selection than {first_file}'s: shares of different selections "
            "(--cases, --styles, --paths, matrix) do not merge",
        )
    if other.get("keyword") != env.get("keyword"):
        raise InputError(
            file,
            "environment.keyword",
            f"-k {other.get('keyword')!r}, but {first_file} has -k {env.get('keyword')!r}: shares of different "
            "selections do not merge (the cells one -k left out would be missing from a merge called complete)",
        )
    mine, theirs = _share(file, other), _share(first_file, env)
    if (mine is None) != (theirs is None) or (mine and theirs and mine[1] != theirs[1]):
        raise InputError(
            file,
            "environment.shard",
            f"{other.get('shard')!r}, but {first_file} has {env.get('shard')!r}: "
            "only the shares of one --shard I/N split merge",
        )
    if other.get("shard_digest") != env.get("shard_digest"):
        raise InputError(
            file,
            "environment.shard_digest",
            f"{other.get('shard_digest')!r}, but {first_file} has {env.get('shard_digest')!r}: shares dealt by "
            "different cell seconds (--shard-by) do not merge",
        )
    if mine is not None:
        if mine[0] in shares:
            raise InputError(file, "environment.shard", f"share {other.get('shard')} is {shares[mine[0]]} too")
        shares[mine[0]] = file


def _selection(env: dict[str, Any]) -> list[str]:
    """The cells a sharded run's selection deals to its shares: its axes crossed (case, then style, then path)."""
    axes = env.get("axes") or {}
    crossed = itertools.product(axes.get("cases", []), axes.get("styles", []), axes.get("paths", []))
    return [str(CellId(*cell)) for cell in crossed]


def ordered(cells: Any, expected: list[str]) -> list[Record]:
    """``cells`` in the order of ``expected`` (cell ids), cells not in it last."""
    order = {cell: index for index, cell in enumerate(expected)}
    return sorted(cells, key=lambda record: order.get(record.id, len(order)))
