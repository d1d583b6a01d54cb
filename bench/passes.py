"""The short repro scripts of passing cells, run as a user runs them: a run confirms every failure with its script,
and this checks the other direction on a GPU run's results, where the CPU tier (tests/slow/test_drawn_cases.py)
cannot: for each path and wrapper, the first passing cell in the chart's order gets its script (``python -m harness
repro CELL ... --out``, one call), each is run in a fresh process with the harness not importable (the runner the
confirmation uses), and each must exit 0 printing "no failure" for its cell. Writes ``OUT/passes.md`` (a table per
cell: its script's seconds and last line) and ``OUT/passes.json``; exits 1 where a script says otherwise.

Usage: python -m bench passes RESULTS.json [--matrix M] [--out DIR] [--jobs N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch
from tabulate import tabulate

from harness.execution.confirm import ScriptRun, Scripts
from harness.kernel.styles import KNOWN_STYLES
from harness.records.files import read_results
from harness.records.record import Record
from harness.spec import Status

TIMEOUT = 600.0  # seconds one script may run


def sample(cells: list[Record]) -> list[Record]:
    """The first passing cell of each (path, wrapper), in the results' order."""
    chosen: dict[tuple[str, str], Record] = {}
    for cell in cells:
        if cell.status == Status.PASS:
            wrapper = KNOWN_STYLES.get(cell.style, (None, cell.style))[1]
            chosen.setdefault((cell.path, wrapper), cell)
    return list(chosen.values())


def passed(cell: Record, run: ScriptRun) -> bool:
    """Whether a passing cell's script, run on its own, said so."""
    return run.returncode == 0 and f"no failure: {cell.id}" in run.output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench passes", description=__doc__.splitlines()[0])
    parser.add_argument("results")
    parser.add_argument("--matrix", default="matrix.toml")
    parser.add_argument("--out", default="passes")
    parser.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 1) - 2))
    args = parser.parse_args(argv)
    out = Path(args.out)
    cells = sample(list(read_results(Path(args.results)).cells))
    made = subprocess.run(
        [sys.executable, "-m", "harness", "repro", *(cell.id for cell in cells), "--results", args.results,
         "--matrix", args.matrix, "--out", str(out / "scripts")],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    if made.returncode != 0:
        print(made.stderr.strip(), file=sys.stderr)
        return made.returncode
    scripts = Scripts(os.environ.get("TRITON_CACHE_DIR"), probe_isas=torch.cuda.is_available())
    try:
        with ThreadPoolExecutor(args.jobs) as pool:
            runs = list(pool.map(lambda cell: scripts.run(out / "scripts" / f"{cell.id}.py", TIMEOUT), cells))
    finally:
        scripts.stop()
    rows = [
        (cell.id, "no failure" if passed(cell, run) else "DIFFERS", run.seconds, run.last_line[:100])
        for cell, run in zip(cells, runs, strict=True)
    ]
    differ = [row[0] for row in rows if row[1] != "no failure"]
    table = tabulate(rows, headers=("passing cell", "its script", "seconds", "last line"), tablefmt="github")
    head = f"{len(rows) - len(differ)} of {len(rows)} passing cells' scripts printed no failure ({args.results})"
    (out / "passes.md").write_text(f"# Passing cells' short scripts, run alone\n\n{head}\n\n{table}\n")
    keys = ("cell", "said", "seconds", "line")
    (out / "passes.json").write_text(json.dumps([dict(zip(keys, row, strict=True)) for row in rows], indent=1))
    print(head + (f"; differ: {', '.join(differ)}" if differ else ""))
    return 1 if differ else 0
