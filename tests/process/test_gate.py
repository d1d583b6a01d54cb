"""The upgrade gate: properties of the diff, known failures, flakes, and the CLI's exit codes on real files."""

from pathlib import Path

import pytest

from harness.cli import rerun
from tests.conftest import make_record
from tests.fast.test_gate import results_file, run_gate


def test_a_regression_that_passes_when_re_run_is_flaky(write_matrix, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The first gate re-runs the cell for real (``python -m harness run``, about 35 s on CI's two cores); the gates
    with --allow-flaky and --strict re-run the same cells of the same files and are given what that re-run saw
    (each had run the same command again), so each flag is judged on a real re-run's statuses."""
    import torch
    import triton

    matrix = write_matrix(["tests.fixtures.good"], ["triton_op"], {"cpu_fallback": ("cpu", 120)})
    cell = "good-triton_op-cpu_fallback"
    passed = make_record("good", "triton_op", "cpu_fallback", status="pass")
    failed = {**passed, "status": "error", "error_type": "RuntimeError", "stage": "run"}
    here = {"device": "cpu", "torch": torch.__version__, "triton": triton.__version__}  # re-run only where measured
    old, new = (
        results_file(tmp_path / "old.json", [passed], **here),
        results_file(tmp_path / "new.json", [failed], **here),
    )
    out = tmp_path / "gate.md"
    seen: list[tuple[list[str], dict]] = []
    calls: list[list[str]] = []
    real = rerun._run_once

    def once(cells: list[str], current, matrix_file: str) -> dict:
        calls.append(list(cells))
        if seen:  # the same re-run again: what the real one saw
            assert (cells, matrix_file) == (seen[0][0], str(matrix))
            return dict(seen[0][1])
        seen.append((list(cells), real(cells, current, matrix_file)))
        return dict(seen[0][1])

    monkeypatch.setattr(rerun, "_run_once", once)
    done = run_gate(
        "--baseline", str(old), "--current", str(new), "--matrix", str(matrix), "--rerun", "1", "--out", str(out)
    )
    assert done.returncode == 1, done.stdout + done.stderr  # flaky fails by default
    assert "## Flaky" in out.read_text() and cell in out.read_text() and "pass on re-run 1" in out.read_text()
    assert [cells for cells, _ in seen] == [[cell]]  # one real re-run of the regression, which passed
    assert {cell: status.value for cell, status in seen[0][1].items()} == {cell: "pass"}
    allowed = run_gate(
        "--baseline", str(old), "--current", str(new), "--matrix", str(matrix), "--rerun", "1", "--out", str(out),
        "--allow-flaky",
    )  # fmt: skip
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    strict = run_gate(
        "--baseline",
        str(old),
        "--current",
        str(new),
        "--matrix",
        str(matrix),
        "--rerun",
        "1",
        "--out",
        str(out),
        "--strict",
        "--allow-flaky",
    )
    assert strict.returncode == 1
    assert calls == [[cell]] * 3  # each gate re-ran the regression, once for real
