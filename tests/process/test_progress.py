"""The progress line of a run under xdist, as an installed user sees it (harness/plugin/progress.py)."""

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO


def test_the_progress_line_comes_with_the_packaged_matrix_and_no_matrix_toml_here(tmp_path: Path):
    """Issue 61: run from a folder without a ./matrix.toml, the packaged matrix's node ids are ``::CELL`` (the file
    lies outside pytest's root folder), and the controller counted no cell: no progress line ever came."""
    selection = ["--cases", "tests.fixtures.good", "--styles", "control", "--paths", "cpu_fallback,cpu_compile"]
    done = subprocess.run(
        [sys.executable, "-m", "harness", "run", *selection, "-n", "1", "--progress", "0.000001"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},  # the fixture's module, as a user's own is
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "(the packaged default (no ./matrix.toml here))" in done.stderr
    assert "[harness] 1/2 cells done" in done.stdout
