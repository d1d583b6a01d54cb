"""The naive design the benchmark compares with: a fresh Python for one cell, which imports torch, runs the
cell with the harness's own code (same inputs, same comparison) and exits.

Usage: python -m bench.naive_cell MATRIX CELL_ID OUT_JSON
"""

import json
import sys
import tempfile
import time
from pathlib import Path


def main(matrix_file: str, cell_id: str, out: str) -> None:
    start = time.perf_counter()
    from harness.case import load_case
    from harness.cell.runner import device_name, run_cell
    from harness.matrix.config import load_matrix
    from harness.records.record import Record

    spec = next(spec for spec in load_matrix(matrix_file).cells if spec.id == cell_id)
    with tempfile.TemporaryDirectory() as workdir:
        outcome = run_cell(load_case(spec.module, spec.case), spec, Path(workdir), {})
    outcome.seconds = time.perf_counter() - start
    Path(out).write_text(json.dumps(Record.of(spec, outcome).to_dict() | {"device": device_name()}, default=repr))


if __name__ == "__main__":
    main(*sys.argv[1:4])
