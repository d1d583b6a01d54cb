"""The ``repro`` command: a standalone script per distinct failure of a results file, or per cell named
(harness/repro/), comparing with the matrix's tolerances."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.errors import InputError
from harness.matrix.config import load_matrix
from harness.records.files import read_results
from harness.repro.failures import write_repros


def write_repro_scripts(args: argparse.Namespace) -> int:
    """Write the scripts of ``args.results`` into ``args.out`` (default: repros/ beside the results)."""
    results = Path(args.results)
    out = Path(args.out) if args.out else results.parent / "repros"
    if args.timed and not args.cells:
        raise InputError("command line", "--timed", "name the cells to time (repro --timed CELL ...)")
    loaded, tolerances = read_results(results), load_matrix(args.matrix).tolerances
    try:
        written = write_repros(loaded, tolerances, out, args.cells)
    except OSError as error:  # --out names a file, or a folder that cannot be written
        raise InputError(out, "--out", f"cannot write scripts there: {error.strerror or error}") from None
    print(f"{len(written)} repro script(s) in {out}/")
    if args.timed:
        from harness.cli.timed_repro import write_timed

        print(f"{len(write_timed(written))} timed script(s) beside them (CELL.timed.py: the checked artifact timed)")
    return 0
