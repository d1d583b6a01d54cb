"""Reproducers: a generated script of a failing CPU cell fails the same way on its own (harness not importable)."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cell.paths import PATHS
from harness.kernel.styles import KNOWN_STYLES
from harness.matrix.config import load_matrix
from harness.records.results import read_results
from harness.report.repro import failure_signature, repro_source
from tests.conftest import REPO, harness_main, make_record, run_harness, typed

MATRIX = load_matrix(REPO / "matrix.toml")
# run the script as __main__ with every harness import failing: it must need torch and triton only
NO_HARNESS = "import sys; sys.modules['harness'] = None; path = sys.argv[1]; "
NO_HARNESS += "exec(compile(open(path).read(), path, 'exec'), {'__name__': '__main__'})"


@pytest.mark.process
def test_failing_cpu_cells_reproduce_on_their_own(write_matrix, tmp_path: Path):
    """One script per distinct failure, listing the cells it stands for; each fails as its cell did."""
    matrix = write_matrix(
        ["sin", "examples.activations"], ["raw_jit", "triton_op", "triton_op_autotune"], {"cpu_compile": ("cpu", 300)}
    )
    out = tmp_path / "out"
    done = run_harness("run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "0", "-q")
    assert done.returncode == 0, done.stdout[-2000:]
    failing = {cell.id: cell for cell in read_results(out / "results.json").cells if cell.status != "pass"}
    signatures = {failure_signature(cell) for cell in failing.values()}
    scripts = sorted((out / "repros").glob("*.py"))
    assert len(failing) >= 3 and len(scripts) == len(signatures) < len(failing)
    listed = []
    for script in scripts:
        text = script.read_text()
        assert "import harness" not in text and "from harness" not in text
        cell = failing[text.split("Reproducer for ", 1)[1].split(",")[0]]
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


def test_failures_differing_only_in_names_and_numbers_share_a_signature():
    def failed(case: str, style: str, error: str):
        record = make_record(case, style, "aoti_standalone", status="error", stage="run", error_type="E", error=error)
        return typed(record)

    schema = "Could not find schema for harness::{}_custom_op"
    assert failure_signature(failed("add", "custom_op", schema.format("add"))) == failure_signature(
        failed("softmax", "custom_op", schema.format("softmax"))
    )
    flops = "flops: FlopCounterMode counted 0 for the op, the case declares {}"
    assert failure_signature(failed("add", "raw_jit", flops.format(3001))) == failure_signature(
        failed("matmul", "autotune", flops.format(5_577_142))
    )
    assert failure_signature(failed("add", "raw_jit", "boom")) != failure_signature(failed("add", "raw_jit", "bang"))


@pytest.mark.parametrize("style", list(KNOWN_STYLES))
def test_every_style_and_path_has_a_complete_script(style: str):
    """The script of any cell parses and defines what its main() calls (no name left undefined): the style's
    decorator stack and wrapper, the op as shipped, or the control."""
    env = {"device": "d", "torch": "t", "triton": "x", "commit": "c"}
    decorator, wrapper = KNOWN_STYLES[style]
    functions = {wrapper} if decorator is None else {decorator, wrapper}  # control(CASE) or as_shipped(CASE)
    for path in PATHS:
        record = make_record("add", style, path, module="cases.add", status="error", error_type="E", error="e")
        tree = ast.parse(repro_source(typed(record), env, MATRIX.tolerances))
        defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.ClassDef)}
        assert {*functions, path, "Cell", "Case", "main"} <= defined
