"""A run's cells replayed through pytest-xdist's own load scheduling on a simulated clock: each cell takes the
seconds its record measured (``started`` to ``ended``), on as many workers as the run had, in the order the harness
collects them (harness/plugin/collect.py), and the replay prints when the last cell ends for each
``--maxschedchunk``. What a change of scheduling buys, on a real run's cells, before a GPU runs it: at 29582d6 the
flash-linear-attention suite's last cell ended at 201.7 s; replayed, 201.7 s at chunk 2 (the run's) and 149.4 s at 1.

Usage: python -m bench replay RESULTS.json [--matrix matrix.toml] [--workers N] [--chunks 1,2]
"""

from __future__ import annotations

import argparse
import heapq
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from tabulate import tabulate
from xdist.scheduler import LoadScheduling

from harness.errors import EXIT_BAD_INPUT, InputError
from harness.plugin.collect import cell_order
from harness.records.files import read_results
from harness.records.record import Record


@dataclass
class Cell:
    id: str
    path: str
    seconds: float


@dataclass(eq=False)
class Node:
    """A worker as the scheduler sees one: the cells sent to it, in order."""

    name: str
    queue: list[int] = field(default_factory=list)
    shutting_down: bool = False

    @property
    def gateway(self) -> SimpleNamespace:  # what xdist names a worker by in its log
        return SimpleNamespace(id=self.name)

    def send_runtest_some(self, indices: list[int]) -> None:
        self.queue.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


class Options:
    """The two options xdist's load scheduling reads."""

    def __init__(self, workers: int, chunk: int) -> None:
        self.values = {"tx": [f"{workers}*popen"], "maxschedchunk": chunk}

    def getvalue(self, name: str) -> Any:
        return self.values[name]

    getoption = getvalue


def replay(cells: list[Cell], workers: int, chunk: int) -> tuple[float, float]:
    """When the last cell ends, and the busiest worker's seconds, with ``workers`` and ``--maxschedchunk chunk``."""
    quiet = SimpleNamespace(loadsched=lambda *words: None)  # xdist's log of every cell sent
    scheduler = LoadScheduling(Options(workers, chunk), quiet)  # type: ignore[arg-type]
    nodes = [Node(f"gw{n}") for n in range(workers)]
    for node in nodes:
        scheduler.add_node(node)  # type: ignore[arg-type]
        scheduler.add_node_collection(node, [cell.id for cell in cells])  # type: ignore[arg-type]
    scheduler.schedule()
    running: list[tuple[float, int]] = []  # (ends at, node number)
    busy = [0.0] * workers

    def start(number: int, now: float) -> None:
        node = nodes[number]
        if node.queue:
            seconds = cells[node.queue[0]].seconds
            busy[number] += seconds
            heapq.heappush(running, (now + seconds, number))

    for number in range(workers):
        start(number, 0.0)
    end = 0.0
    while running:
        end, number = heapq.heappop(running)
        node = nodes[number]
        index = node.queue.pop(0)
        scheduler.mark_test_complete(node, index, cells[index].seconds)  # type: ignore[arg-type]
        start(number, end)
    return end, max(busy)


def ran(records: list[Record]) -> list[Record]:
    """The records whose cells ran in this run (reused ones have no times)."""
    return [r for r in records if r.measurements.started is not None and r.measurements.ended is not None]


def cells_of(records: list[Record], timeouts: dict[str, float]) -> list[Cell]:
    """The cells that ran, in the harness's collection order."""
    ordered = sorted(ran(records), key=lambda r: cell_order(r.path, timeouts[r.path]))
    return [Cell(r.id, r.path, (r.measurements.ended or 0.0) - (r.measurements.started or 0.0)) for r in ordered]


def timeouts_of(matrix: Path) -> dict[str, float]:
    try:
        paths = tomllib.loads(matrix.read_text())["paths"]
        return {path: float(spec["timeout"]) for path, spec in paths.items()}
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError, ValueError) as error:
        raise InputError(matrix, "paths", f"no path timeouts to order the cells by ({error})") from None


def run_workers(value: int | None, file: str) -> int:
    """The run's worker count as its results file records it (1 where it does not)."""
    if value is not None and value < 1:
        raise InputError(file, "environment.workers", f"expected a whole number of at least 1, got {value!r}")
    return value or 1


def positive(text: str) -> int:
    """A whole number of at least 1 (argparse's type)."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return int(text)


def positives(text: str) -> tuple[int, ...]:
    """Comma-separated whole numbers of at least 1 (argparse's type)."""
    return tuple(positive(value) for value in text.split(","))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench replay", description=__doc__.splitlines()[0])
    parser.add_argument("results", help="a results.json")
    parser.add_argument("--matrix", default="matrix.toml", help="its matrix (the paths' timeouts order the cells)")
    parser.add_argument("--workers", type=positive, default=None, help="default: the run's")
    parser.add_argument("--chunks", type=positives, default=(1, 2), help="the --maxschedchunk values to replay (1,2)")
    args = parser.parse_args(argv)
    try:
        results = read_results(args.results)
        timeouts = timeouts_of(Path(args.matrix))
        missing = sorted({r.path for r in results.cells} - set(timeouts))
        if missing:
            raise InputError(args.matrix, "paths", f"no timeout for {', '.join(missing)}")
        timed = ran(results.cells)
        if not timed:
            raise InputError(args.results, "cells[].measurements.started", "no record of this run has its times")
        workers = args.workers or run_workers(results.environment.get("workers"), args.results)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    cells = cells_of(timed, timeouts)
    span = max(r.measurements.ended or 0.0 for r in timed) - min(r.measurements.started or 0.0 for r in timed)
    rows = [("the run", "", f"{span:.1f}", "")]
    for chunk in args.chunks:
        end, busiest = replay(cells, workers, chunk)
        rows.append(("replayed", chunk, f"{end:.1f}", f"{busiest:.1f}"))
    print(f"{len(cells)} cells, {sum(c.seconds for c in cells):.0f} cell-seconds, {workers} workers")
    print(tabulate(rows, headers=["", "--maxschedchunk", "last cell ends (s)", "busiest worker (s)"],
                   tablefmt="github"))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
