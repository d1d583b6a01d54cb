"""Reproducers: a generated script of a failing CPU cell fails the same way on its own (harness not importable)."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from harness.config import load_matrix
from harness.paths import PATHS
from harness.records import new_record, read_results
from harness.repro import repro_source
from harness.styles import KNOWN_STYLES
from tests.conftest import REPO, run_harness

MATRIX = load_matrix(REPO / "matrix.toml")
# run the script as __main__ with every harness import failing: it must need torch and triton only
NO_HARNESS = "import sys; sys.modules['harness'] = None; path = sys.argv[1]; "
NO_HARNESS += "exec(compile(open(path).read(), path, 'exec'), {'__name__': '__main__'})"


def test_failing_cpu_cells_reproduce_on_their_own(write_matrix, tmp_path: Path):
    matrix = write_matrix(
        ["sin", "examples.activations"], ["raw_jit", "triton_op", "triton_op_autotune"], {"cpu_compile": ("cpu", 300)}
    )
    out = tmp_path / "out"
    done = run_harness("run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "0", "-q")
    assert done.returncode == 0, done.stdout[-2000:]
    failing = [cell for cell in read_results(out / "results.json")["cells"] if cell["status"] != "pass"]
    assert len(failing) >= 3 and sorted(p.stem for p in (out / "repros").glob("*.py")) == sorted(
        cell["id"] for cell in failing
    )
    for cell in failing:
        script = out / "repros" / f"{cell['id']}.py"
        assert "import harness" not in script.read_text() and "from harness" not in script.read_text()
        ran = subprocess.run(
            [sys.executable, "-c", NO_HARNESS, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300
        )
        assert ran.returncode == 1, (cell["id"], ran.stdout, ran.stderr[-2000:])
        assert cell["error_type"] in ran.stderr, (cell["id"], ran.stderr[-2000:])
        assert cell["error"].splitlines()[0][:80] in ran.stderr, (cell["id"], ran.stderr[-2000:])


@pytest.mark.parametrize("style", list(KNOWN_STYLES))
def test_every_style_and_path_has_a_complete_script(style: str):
    """The script of any cell parses and defines what its main() calls (no name left undefined): the style's
    decorator stack and wrapper, or the control."""
    env = {"device": "d", "torch": "t", "triton": "x", "commit": "c"}
    decorator, wrapper = KNOWN_STYLES[style]
    functions = {"control"} if decorator is None else {decorator, wrapper}
    for path in PATHS:
        record = new_record("add", style, path, module="cases.add", status="error", error_type="E", error="e")
        tree = ast.parse(repro_source(record, env, MATRIX.tolerances))
        defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.ClassDef)}
        assert {*functions, path, "Cell", "Case", "main"} <= defined
