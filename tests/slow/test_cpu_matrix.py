"""The real matrix, run on this machine through the CLI, exactly as users run it; asserts on its records."""

import fcntl
import json
import pickle
import subprocess
from pathlib import Path

import pytest
import torch

from harness.execution.machine import versions
from harness.records.reuse import cell_keys
from harness.spec import STATUSES
from tests.conftest import run_harness
from tests.process.test_cpu_matrix import CPU_PATHS, MATRIX, read_results

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU-machine run")



@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> tuple[subprocess.CompletedProcess, Path]:
    """The run, made once for the session: under xdist the first worker to ask makes it and the others wait for it
    (each worker made its own: the same 2-3 minutes twice on CI's two cores)."""
    if worker_id == "master":
        out = tmp_path_factory.mktemp("reports")
        return run_harness("run", "--report-dir", str(out), "-n", "2", "-q", timeout=1500), out
    shared = tmp_path_factory.getbasetemp().parent  # this session's, beside each worker's own folder
    out, made = shared / "cpu-run-reports", shared / "cpu-run.pickle"
    with open(shared / "cpu-run.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not made.exists():
            made.write_bytes(pickle.dumps(run_harness("run", "--report-dir", str(out), "-n", "2", "-q", timeout=1500)))
        return pickle.loads(made.read_bytes()), out

def test_every_cell_has_a_record(cpu_run):
    done, out = cpu_run
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    data = read_results(out / "results.json")
    assert [cell["id"] for cell in data["cells"]] == MATRIX.cell_ids()
    env = data["environment"]
    assert env["complete"] is True and env["device"] == "cpu" and env["workers"] == 2
    assert env["torch"] == torch.__version__ and env["wall_seconds"] > 0


def test_cuda_cells_skip_and_cpu_cells_run(cpu_run):
    cells = read_results(cpu_run[1] / "results.json")["cells"]
    for cell in cells:
        if cell["path"] in CPU_PATHS:
            assert cell["status"] != "skip", cell
        else:
            assert (cell["status"], cell["reason"]) == ("skip", "no CUDA device"), cell


def test_cpu_outcomes_are_the_measured_ones(cpu_run):
    cells = {cell["id"]: cell for cell in read_results(cpu_run[1] / "results.json")["cells"]}
    for case in MATRIX.cases:
        for path in CPU_PATHS:
            assert cells[f"{case}-control-{path}"]["status"] == "pass"
        for style, (_, wrapper) in MATRIX.style_axes.items():
            fallback, compiled = cells[f"{case}-{style}-cpu_fallback"], cells[f"{case}-{style}-cpu_compile"]
            if wrapper == "launcher":  # a Triton kernel on CPU tensors, whatever its decorators
                assert (fallback["status"], fallback["stage"]) == ("error", "run"), fallback
            elif wrapper in ("triton_op", "custom_op"):  # the registered CPU kernel
                assert fallback["status"] == "pass", fallback
                # triton_op is decomposed into its Triton body under torch.compile; custom_op stays opaque
                assert compiled["status"] == ("error" if wrapper == "triton_op" else "pass"), compiled


def test_chart_is_drawn_from_the_records(cpu_run):
    out = cpu_run[1]
    chart = (out / "matrix.md").read_text()
    assert "Measured on **cpu** (CPU run)" in chart and "Incomplete" not in chart
    counts = chart.split("Cells passing on every attempt, per case: ", 1)[1].split(".\n", 1)[0]
    assert [item.split(" ")[0] for item in " ".join(counts.split()).split(" · ")] == list(MATRIX.cases)
    redrawn = out / "again.md"
    assert run_harness("report", "--results", str(out / "results.json"), "--out", str(redrawn)).returncode == 0
    assert redrawn.read_text() == chart


def test_each_record_is_its_cell_with_its_key(cpu_run):
    """Each record names its cell as the matrix does, carries the key --reuse compares, and says where it ran."""
    raw = json.loads((cpu_run[1] / "results.json").read_text())
    keys, specs = cell_keys(MATRIX, versions(), "cpu"), {spec.id: spec for spec in MATRIX.cells}
    for cell in raw["cells"]:
        spec = specs[cell["id"]]
        assert (cell["case"], cell["style"], cell["path"], cell["module"]) == (
            spec.case,
            spec.style,
            spec.path.id,
            spec.module,
        )
        assert cell["key"] == keys[spec.id] and cell["status"] in STATUSES
        assert (cell["error"] is None) == (cell["status"] in ("pass", "skip")), cell
        assert cell["measurements"]["worker"] in ("gw0", "gw1") and cell["seconds"] >= 0
