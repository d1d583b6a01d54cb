"""The ``repro`` command: a standalone script per distinct failure of a results file, or per cell named
(harness/repro/), comparing with the matrix's tolerances."""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
from pathlib import Path
from typing import Any

from harness.errors import InputError
from harness.matrix.config import load_matrix
from harness.records.environment import RunEnvironment
from harness.records.files import read_results
from harness.records.results import Results
from harness.repro.failures import named_scripts, recorded_leaders, write_repros
from harness.spec import Status, Tolerance


def write_repro_scripts(args: argparse.Namespace) -> int:
    """Write the scripts of ``args.results`` into ``args.out`` (default: repros/ beside the results)."""
    results = Path(args.results)
    out = Path(args.out) if args.out else results.parent / "repros"
    if args.timed and not args.cells:
        raise InputError("command line", "--timed", "name the cells to time (repro --timed CELL ...)")
    if args.issue and len(args.cells) != 1:
        raise InputError("command line", "--issue", "name one cell to report (repro CELL --issue)")
    if args.issue and args.timed:
        raise InputError("command line", "--issue", "a report holds the short script: leave out --timed")
    loaded = read_results(results)
    tolerances = compared_with(loaded, args)
    if args.issue:
        from harness.repro.issue import issue_text

        records = loaded.by_id()
        record = records.get(args.cells[0])
        if record is not None and record.status in (Status.PASS, Status.SKIP):
            raise InputError("command line", "CELL", f"{record.id} is a {record.status}: nothing to report")
        ((cell, source),) = named_scripts(loaded, tolerances, out, args.cells).values()
        print(issue_text(records[cell], loaded, source))
        return 0
    if args.cells:
        return write_named(args, loaded, tolerances, out)
    try:
        written = write_repros(loaded, tolerances, out, recorded_leaders(loaded))
    except OSError as error:  # --out names a file, or a folder that cannot be written
        raise InputError(out, "--out", f"cannot write scripts there: {error.strerror or error}") from None
    print(f"{len(written)} repro script(s) in {out}/")
    return 0


def compared_with(loaded: Results, args: argparse.Namespace) -> dict[str, Tolerance]:
    """The tolerances the scripts compare with: those ``--matrix`` names where it is given, else those the run
    recorded (its cells compared with them), else the default matrix file's (an older results file)."""
    recorded = RunEnvironment.from_dict(loaded.environment, args.results).tolerances
    if recorded and args.matrix_source != "--matrix":
        return {dtype: Tolerance(float(t["atol"]), float(t["rtol"])) for dtype, t in recorded.items()}
    return load_matrix(args.matrix).tolerances


def write_named(args: argparse.Namespace, loaded: Results, tolerances: dict[str, Any], out: Path) -> int:
    """``repro CELL ...`` (``--timed``: each with its ``CELL.timed.py``): every script made first, then all written
    or none."""
    scripts = named_scripts(loaded, tolerances, out, args.cells, long=args.timed)
    files = {target: text for target, (_, text) in scripts.items()}
    if args.timed:
        from harness.cli.timed_repro import timed_source

        files |= {timed_name(target): timed_source(cell, target.name) for target, (cell, _) in scripts.items()}
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:  # --out names a file, or a folder that cannot be made
        raise InputError(out, "--out", f"cannot write scripts there: {error.strerror or error}") from None
    write_all(files)
    print(f"{len(scripts)} repro script(s) in {out}/")
    if args.timed:
        print(f"{len(scripts)} timed script(s) beside them (CELL.timed.py: the checked artifact timed)")
    return 0


def timed_name(script: Path) -> Path:
    """``CELL.timed.py`` beside the script ``CELL.py``."""
    return script.with_name(f"{script.stem}.timed.py")


def write_all(files: dict[Path, str]) -> None:
    """Write every file or none: each into a temp file beside it, then each moved into place; where one cannot be
    written (a full disk, a name too long, a folder in the way) every file of this call is removed and the one that
    failed is an ``InputError`` (``--out``)."""
    staged: dict[Path, Path] = {}
    placed: list[Path] = []
    target = next(iter(files), Path())
    try:
        for target, text in files.items():
            handle, name = tempfile.mkstemp(dir=target.parent, prefix=".repro-", suffix=".tmp")
            staged[target] = Path(name)
            with os.fdopen(handle, "w") as stream:
                stream.write(text)
        for target, temp in staged.items():
            os.replace(temp, target)
            placed.append(target)
    except OSError as error:
        for path in [*staged.values(), *placed]:
            with contextlib.suppress(OSError):
                path.unlink()
        raise InputError(target, "--out", f"cannot write it: {error.strerror or error}: no script written") from None
