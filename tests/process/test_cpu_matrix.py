"""The real matrix, run on this machine through the CLI, exactly as users run it; asserts on its records."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from harness.matrix.config import load_matrix
from harness.records import files as records
from harness.spec import KEPT_PATHS
from tests.conftest import REPO, run_harness


def read_results(file: Path) -> dict:
    """A results file as JSON, as the reader types and upgrades it."""
    return records.read_results(file).to_data()


MATRIX = load_matrix(REPO / "matrix.toml")
CPU_PATHS = [spec.id for spec in MATRIX.paths if spec.device == "cpu"]
pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU-machine run")


def test_pytest_collects_the_same_ids_as_list():
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "matrix.toml", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    collected = [line.split("::")[1] for line in done.stdout.splitlines() if line.startswith("matrix.toml::")]
    assert sorted(collected) == sorted(MATRIX.cell_ids()) and len(set(collected)) == len(collected)
    # scheduled: the paths that keep no artifact for the timing phase first (a GPU fault there loses none), then
    # those that do; longest path first in each
    keys = [(path in KEPT_PATHS, -MATRIX.path(path).timeout) for path in (cell.rsplit("-", 1)[1] for cell in collected)]
    assert keys == sorted(keys) and keys[0][0] is False and keys[-1][0] is True


def test_selection_runs_only_the_selected_cells(tmp_path: Path):
    done = run_harness("run", "--report-dir", str(tmp_path), "-q", "-k", "sin-triton_op-cpu_")
    assert done.returncode == 0, done.stdout[-2000:]
    cells = read_results(tmp_path / "results.json")["cells"]
    assert sorted(c["id"] for c in cells) == ["sin-triton_op-cpu_compile", "sin-triton_op-cpu_fallback"]
