"""The worked examples in examples/: user kernels outside harness/ and cases/, through the CLI, on CPU."""

from pathlib import Path

import torch

from harness.matrix.config import load_matrix
from tests.conftest import REPO, run_harness
from tests.fast.test_examples import read_results


def test_rmsnorm_runs_through_the_harness(write_matrix, tmp_path: Path):
    matrix = write_matrix(
        ["examples.rmsnorm"],
        ["raw_jit", "triton_op", "custom_op", "control"],
        {"cpu_fallback": ("cpu", 120), "eager": ("cuda", 120)},
    )
    done = run_harness("run", "--matrix", str(matrix), "--report-dir", str(tmp_path / "out"), "-n", "0", "-q")
    assert done.returncode == 0, done.stdout[-2000:]
    status = {c["id"]: c["status"] for c in read_results(tmp_path / "out" / "results.json")["cells"]}
    assert status["simple_rmsnorm-triton_op-cpu_fallback"] == "pass"
    assert status["simple_rmsnorm-custom_op-cpu_fallback"] == "pass"
    assert status["simple_rmsnorm-control-cpu_fallback"] == "pass"
    assert status["simple_rmsnorm-raw_jit-cpu_fallback"] == "error"
    expected_eager = "pass" if torch.cuda.is_available() else "skip"
    assert all(status[f"simple_rmsnorm-{s}-eager"] == expected_eager for s in ("raw_jit", "triton_op", "control"))


def test_cases_option_adds_a_module_with_several_cases(tmp_path: Path):
    """``--cases MODULE`` on the repository's matrix: only the module's cases run, every style, a CPU path."""
    done = run_harness(
        "run",
        "--cases",
        "examples.activations",
        "--paths",
        "cpu_fallback",
        "--report-dir",
        str(tmp_path),
        "-n",
        "0",
        "-q",
    )
    assert done.returncode == 0, done.stdout[-2000:]
    cells = read_results(tmp_path / "results.json")["cells"]
    assert {c["case"] for c in cells} == {"gelu_mul", "silu_mul"}
    assert len(cells) == 2 * len(load_matrix(REPO / "matrix.toml").styles)
    status = {c["id"]: c["status"] for c in cells}
    for case in ("gelu_mul", "silu_mul"):
        assert status[f"{case}-triton_op-cpu_fallback"] == status[f"{case}-control-cpu_fallback"] == "pass"
        assert status[f"{case}-raw_jit-cpu_fallback"] == "error"


def test_builtin_rmsnorm_and_the_example_run_together(tmp_path: Path):
    """The built-in rmsnorm (float eps, two outputs, Triton backward kernel) and the example's simple one, side by side
    (``--cases`` with a case id and a module): the library styles' CPU kernels and the control pass on CPU."""
    done = run_harness(
        *("run", "--cases", "rmsnorm,examples.rmsnorm", "--styles", "triton_op,custom_op,control"),
        *("--paths", "cpu_fallback", "--report-dir", str(tmp_path), "-n", "0", "-q"),
    )
    assert done.returncode == 0, done.stdout[-2000:]
    status = {c["id"]: c["status"] for c in read_results(tmp_path / "results.json")["cells"]}
    assert len(status) == 6 and set(status.values()) == {"pass"}, status
