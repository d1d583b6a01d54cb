"""Selecting cells the way pytest does (node ids, -k), --cases naming modules, and cells re-run within a run."""

from pathlib import Path

import pytest

from harness.errors import InputError
from harness.matrix.config import load_matrix, select
from tests.conftest import REPO

MATRIX = load_matrix(REPO / "matrix.toml")


def test_cases_name_a_module_with_or_without_a_dot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "mykernels.py").write_text("from tests.fixtures.good import CASE\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    chosen = select(MATRIX, cases=["mykernels", "sin"], cuda=False)
    assert chosen.cases == ("sin", "good") and chosen.modules["good"] == "mykernels"
    assert next(cell.module for cell in chosen.cells if cell.case == "good") == "mykernels"
    with pytest.raises(InputError, match=r"^command line: --cases\[0\]: unknown case 'nosuchcase' \(neither"):
        select(MATRIX, cases=["nosuchcase"], cuda=False)


