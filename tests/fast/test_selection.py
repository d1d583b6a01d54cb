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





def test_list_and_report_select_by_k_as_run_does_whatever_the_case(tmp_path, capsys):
    """pytest's ``-k`` matches names case-insensitively: ``run -k SIN`` ran the sin cells while ``list -k SIN`` and
    ``report -k SIN`` said no cell matches."""
    from harness.__main__ import main
    from tests.conftest import TOLERANCES
    from tests.fast.test_bad_inputs import HEAD, results_file

    matrix, chart = tmp_path / "m.toml", tmp_path / "c.md"
    matrix.write_text(HEAD + TOLERANCES)
    assert main(["list", "--matrix", str(matrix), "-k", "SIN and Control"]) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.split() == ["sin-control-cpu_fallback"]
    code = main(["report", "--results", str(results_file(tmp_path)), "-k", "SIN and not EAGER", "--out", str(chart)])
    assert code == 0, capsys.readouterr().err
    assert "sin" in chart.read_text()
