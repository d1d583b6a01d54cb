"""How evenly ``--shard I/N`` splits a run: the cells dealt as ``--shard`` deals them (in turn, and balanced by the
cell seconds of the results file ``--plan``), each share's cell seconds then read from another run's records
(``ACTUAL``): the longest share against the mean, as runners that each run one share would see their cells' seconds.
Planning and reading from the same file shows only how well the greedy split packs; an earlier run's plan read
against a later run shows how well it predicts.

Usage: python -m bench shares ACTUAL.json [--plan EARLIER.json] [--shares 2,4]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tabulate import tabulate

from harness.records.files import read_results
from harness.records.shares import cell_seconds, share_of_each
from harness.spec import CellId


def seconds_of(file: Path) -> dict[CellId, float]:
    """Each cell's seconds in ``file`` (``--shard-by``'s reading of them), in its order (the matrix's)."""
    return {record.cell_id: cell_seconds(record) for record in read_results(file).cells}


def spread(actual: dict[CellId, float], owners: list[int], shares: int) -> tuple[float, float, float]:
    """The longest and the mean share's cell seconds, and the longest over the mean less one."""
    totals = [0.0] * shares
    for seconds, owner in zip(actual.values(), owners, strict=True):
        totals[owner] += seconds
    mean = sum(totals) / shares
    return max(totals), mean, max(totals) / mean - 1 if mean else 0.0


def rows(actual: dict[CellId, float], plan: dict[CellId, float], counts: list[int]) -> list[list[Any]]:
    cells = list(actual)
    found = []
    for shares in counts:
        for dealing, seconds in (("in turn", None), ("balanced", plan)):
            longest, mean, over = spread(actual, share_of_each(cells, shares, seconds), shares)
            found.append([shares, dealing, round(longest, 1), round(mean, 1), f"{100 * over:.1f}%"])
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench shares", description=__doc__.splitlines()[0])
    parser.add_argument("actual", type=Path, help="the run whose cell seconds each share is read with")
    parser.add_argument("--plan", type=Path, default=None, help="the run the shares are balanced by (default: actual)")
    parser.add_argument("--shares", default="2,4")
    args = parser.parse_args(argv)
    actual = seconds_of(args.actual)
    plan = seconds_of(args.plan or args.actual)
    counts = [int(count) for count in args.shares.split(",")]
    headers = ["shares", "dealt", "longest share (cell-s)", "mean (cell-s)", "longest over mean"]
    print(f"cells of {args.actual}, balanced by {args.plan or args.actual}")
    print(tabulate(rows(actual, plan, counts), headers=headers, tablefmt="github"))
    return 0
