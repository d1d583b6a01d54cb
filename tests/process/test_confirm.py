"""Confirmation: every failure is run again as its user-shaped repro script, outside the harness. A failure the
script shows is confirmed; one it does not show is a harness suspect: listed first in the chart, named in the
summary, and the run exits 7. A pass must hold on every call of the artifact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.errors import EXIT_SUSPECTS
from harness.plugin.processes import CellProcesses
from tests.conftest import harness_main
from tests.fakes import FakeCells


def test_a_failure_the_harness_made_up_is_a_suspect(write_matrix, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A deliberately broken harness (fake cell processes that report an error for a cell that passes): the cell's
    repro script, run for real, shows no failure, so the cell is a suspect, the chart lists it first and the run
    exits 7."""
    fake = FakeCells(statuses={"good-control-cpu_fallback": ["error"]})
    monkeypatch.setattr(CellProcesses, "make_process", fake)
    matrix = write_matrix(["tests.fixtures.good"], ["control"], {"cpu_fallback": ("cpu", 120)})
    out = tmp_path / "out"
    done = harness_main("run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "0")
    assert done.returncode == EXIT_SUSPECTS, done.stdout[-2000:]
    record = json.loads((out / "results.json").read_text())["cells"][0]
    assert record["confirmation"]["reproduced"] is False
    assert record["confirmation"]["line"] == "no failure: good-control-cpu_fallback passes here"
    assert "HARNESS SUSPECTS, not reproduced outside the harness (1): good-control-cpu_fallback" in done.stdout
    chart = (out / "matrix.md").read_text()
    assert chart.index("Harness suspects (1)") < chart.index("## Which style")
    assert not (out / "repros").glob("*.py").__next__().read_text().count("import harness")
