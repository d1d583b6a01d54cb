"""Reproducers: a generated script of a failing CPU cell fails the same way on its own (harness not importable), and
every script of any style and path is complete: each name it uses is defined or imported."""

import subprocess
import sys
from pathlib import Path

from harness.records.files import read_results
from harness.repro.failures import failure_signature
from tests.conftest import harness_main, run_harness
from tests.fast.test_repro import NO_HARNESS


def test_failing_cpu_cells_reproduce_on_their_own(write_matrix, tmp_path: Path):
    """One script per distinct failure, listing the cells it stands for; each fails as its cell did."""
    matrix = write_matrix(
        ["sin", "examples.activations"], ["raw_jit", "triton_op", "triton_op_autotune"], {"cpu_compile": ("cpu", 300)}
    )
    out = tmp_path / "out"
    done = run_harness("run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "0", "-q")
    assert done.returncode == 0, done.stdout[-2000:]  # every failure reproduced by its script: no suspect
    failing = {cell.id: cell for cell in read_results(out / "results.json").cells if cell.status != "pass"}
    assert {cell.confirmation["reproduced"] for cell in failing.values()} == {True}
    assert f"failures reproduced by their repro script: {len(failing)} of {len(failing)}" in done.stdout
    signatures = {failure_signature(cell) for cell in failing.values()}
    scripts = sorted((out / "repros").glob("*.py"))
    assert len(failing) >= 3 and len(scripts) == len(signatures) < len(failing)
    listed = []
    for script in scripts:
        text = script.read_text()
        assert "import harness" not in text and "from harness" not in text
        cell = failing[text.split('"""', 1)[1].split(":")[0]]
        assert cell.confirmation["script"] == f"repros/{script.name}"
        listed += [cell.id, *(c for c in failing if c != cell.id and c in text)]
        ran = subprocess.run(
            [sys.executable, "-c", NO_HARNESS, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300
        )
        assert ran.returncode == 1, (cell.id, ran.stdout, ran.stderr[-2000:])
        assert cell.error_type in ran.stderr, (cell.id, ran.stderr[-2000:])
        assert cell.error.splitlines()[0][:80] in ran.stderr, (cell.id, ran.stderr[-2000:])
    assert sorted(listed) == sorted(failing)  # every failing cell is named by exactly one script

    on_demand = tmp_path / "one"
    cell_id = sorted(failing)[0]
    made = harness_main("repro", cell_id, "--results", str(out / "results.json"), "--out", str(on_demand))
    assert made.returncode == 0 and [p.name for p in on_demand.glob("*.py")] == [f"{cell_id}.py"], made.stderr
    unknown = harness_main("repro", "nosuch-cell-id", "--results", str(out / "results.json"), "--out", str(on_demand))
    assert unknown.returncode == 2 and unknown.stderr.count("\n") == 1 and "nosuch-cell-id" in unknown.stderr
