"""How ``--shard I/N`` deals the selected cells to N shares: cell k to share k mod N, or, by the cell seconds of an
earlier run's results (``--shard-by``), longest first, each to the share with the fewest seconds so far, so that the
shares end together; there the cells of one case and style that can load one AOTInductor package (``PACKAGE_PATHS``)
go to one share as one, as they cost in the run that measured them (its first cell compiled, the others loaded).
Every share deals the whole selection itself, from the same inputs, to the same shares."""

from __future__ import annotations

import hashlib
import heapq
import json
import statistics
from collections.abc import Sequence
from pathlib import Path

from harness.errors import InputError
from harness.records.record import Record
from harness.records.results import Results
from harness.spec import PACKAGE_PATHS, CellId


def share_of_each(cells: Sequence[CellId], shares: int, seconds: dict[CellId, float] | None) -> list[int]:
    """The share (0 to ``shares - 1``) of each of ``cells`` (in matrix order): dealt in turn without ``seconds``,
    else balanced by their ``estimates``, the cells of each of ``units`` together."""
    if seconds is None:
        return [index % shares for index in range(len(cells))]
    costs = estimates(cells, seconds)
    grouped = units(cells)
    owners = balanced([sum(costs[index] for index in unit) for unit in grouped], shares)
    dealt = [0] * len(cells)
    for unit, owner in zip(grouped, owners, strict=True):
        for index in unit:
            dealt[index] = owner
    return dealt


def units(cells: Sequence[CellId]) -> list[list[int]]:
    """The indices of ``cells`` in the groups a share takes whole: the cells of one case and style on
    ``PACKAGE_PATHS``, each other cell alone; in the order of each group's first cell."""
    found: dict[object, list[int]] = {}
    for index, cell in enumerate(cells):
        key = (cell.case, cell.style) if cell.path in PACKAGE_PATHS else index
        found.setdefault(key, []).append(index)
    return list(found.values())


def balanced(costs: Sequence[float], shares: int) -> list[int]:
    """Greedy longest-first: each cost, the largest first (ties in their given order), goes to the share whose
    total is the smallest so far (ties: the lowest share); the share of each cost, in their order."""
    totals = [(0.0, share) for share in range(shares)]
    owner = [0] * len(costs)
    for index in sorted(range(len(costs)), key=lambda k: (-costs[k], k)):
        total, share = heapq.heappop(totals)
        owner[index] = share
        heapq.heappush(totals, (total + costs[index], share))
    return owner


def estimates(cells: Sequence[CellId], seconds: dict[CellId, float]) -> list[float]:
    """Each cell's seconds: its own in ``seconds``, else the median of its path's cells there, else the median of
    all of them."""
    paths: dict[str, list[float]] = {}
    for cell, value in seconds.items():
        paths.setdefault(cell.path, []).append(value)
    medians = {path: statistics.median(values) for path, values in paths.items()}
    fallback = statistics.median(seconds.values())
    return [seconds.get(cell, medians.get(cell.path, fallback)) for cell in cells]


def cell_seconds(record: Record) -> float:
    """What a cell cost its worker: from its start to its last attempt's end (a re-run cell's every attempt), less
    the start of a fresh cell process before it; its ``seconds`` where the record has no times."""
    measured = record.measurements
    if measured.started is None or measured.ended is None:
        return record.seconds
    return max(0.0, measured.ended - measured.started - (measured.process_start or 0.0))


def seconds_by_cell(results: Results, file: Path, selection: Sequence[CellId]) -> dict[CellId, float]:
    """The seconds of each cell ``results`` (read from ``file``) has a record of; ``InputError`` when it has none
    of ``selection``'s cells: the shares would be dealt by guesses alone."""
    seconds = {record.cell_id: cell_seconds(record) for record in results.cells}
    if not seconds.keys() & set(selection):
        raise InputError(file, "cells", "no record of a cell of this selection: balance its shares by a run of it")
    return seconds


def digest(seconds: dict[CellId, float]) -> str:
    """Of the seconds the shares were dealt by: shares of one split have the same."""
    text = json.dumps(sorted((str(cell), value) for cell, value in seconds.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:16]
