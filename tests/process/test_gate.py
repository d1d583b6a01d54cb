"""The upgrade gate: properties of the diff, known failures, flakes, and the CLI's exit codes on real files."""

from pathlib import Path

from tests.conftest import make_record
from tests.fast.test_gate import results_file, run_gate


def test_a_regression_that_passes_when_re_run_is_flaky(write_matrix, tmp_path: Path):
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
    done = run_gate(
        "--baseline", str(old), "--current", str(new), "--matrix", str(matrix), "--rerun", "1", "--out", str(out)
    )
    assert done.returncode == 1, done.stdout + done.stderr  # flaky fails by default
    assert "## Flaky" in out.read_text() and cell in out.read_text() and "pass on re-run 1" in out.read_text()
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
