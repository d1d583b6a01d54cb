"""The cell process: a crash or a hang costs only its own cell, and the next cell gets a fresh process."""

import os
from pathlib import Path

import pytest

from tests.conftest import cell_spec

GOOD = cell_spec("tests.fixtures.good", "triton_op")


def test_cell_processes_share_the_cores_among_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """torch's intra-op threads per cell process: the cores divided among the workers (at least 1), unless the
    caller's environment or matrix.toml's [environment] sets OMP_NUM_THREADS."""

    from harness.matrix.config import load_matrix
    from harness.plugin.processes import cell_environment
    from tests.conftest import REPO

    matrix = load_matrix(REPO / "matrix.toml")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 32)
    assert cell_environment(matrix.environment, tmp_path, 14)["OMP_NUM_THREADS"] == "2"
    assert cell_environment(matrix.environment, tmp_path, 30)["OMP_NUM_THREADS"] == "1"
    assert cell_environment(matrix.environment, tmp_path)["OMP_NUM_THREADS"] == "32"
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    assert "OMP_NUM_THREADS" not in cell_environment(matrix.environment, tmp_path, 30)  # the caller's own setting stays


