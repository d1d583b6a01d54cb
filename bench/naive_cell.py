"""The naive design the benchmark compares with: a fresh Python for one cell, which imports torch, runs the
cell with the harness's own code (same inputs, same comparison) and exits.

Usage: python -m bench.naive_cell MATRIX MODULE CASE STYLE PATH OUT_JSON
"""

import json
import sys
import tempfile
import time
from pathlib import Path


def main(matrix_file: str, module: str, case_id: str, style: str, path_id: str, out: str) -> None:
    start = time.perf_counter()
    from harness.case import load_case
    from harness.cell import device_name, run_cell
    from harness.config import load_matrix

    matrix = load_matrix(matrix_file)
    spec = matrix.path(path_id)
    with tempfile.TemporaryDirectory() as workdir:
        record = run_cell(
            load_case(module, case_id), style, path_id, spec.device, matrix.tolerances, Path(workdir), {}, spec.examples
        )
    record.update(id=f"{case_id}-{style}-{path_id}", device=device_name(), seconds=time.perf_counter() - start)
    Path(out).write_text(json.dumps(record, default=repr))


if __name__ == "__main__":
    main(*sys.argv[1:7])
