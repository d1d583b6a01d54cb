"""The worked example in examples/: a user kernel outside harness/ and cases/, through the CLI, on CPU."""

from pathlib import Path

import torch

from examples.rmsnorm import CASE
from harness.records import read_results
from tests.conftest import run_harness


def test_rmsnorm_backward_matches_autograd():
    x, weight = (t.double().requires_grad_() for t in CASE.make_inputs(13, "cpu", 0))
    out = CASE.reference(x, weight)
    grad = torch.randn_like(out)
    out.backward(grad)
    grad_x, grad_w = CASE.backward((x.detach(), weight.detach()), out.detach(), grad)
    torch.testing.assert_close(grad_x, x.grad)
    torch.testing.assert_close(grad_w, weight.grad)


def test_rmsnorm_runs_through_the_harness(write_matrix, tmp_path: Path):
    matrix = write_matrix(
        ["examples.rmsnorm"],
        ["raw_jit", "triton_op", "custom_op", "control"],
        {"cpu_fallback": ("cpu", 120), "eager": ("cuda", 120)},
    )
    done = run_harness("run", "--matrix", str(matrix), "--report-dir", str(tmp_path / "out"), "-n", "0", "-q")
    assert done.returncode == 0, done.stdout[-2000:]
    status = {c["id"]: c["status"] for c in read_results(tmp_path / "out" / "results.json")["cells"]}
    assert status["examples.rmsnorm-triton_op-cpu_fallback"] == "pass"
    assert status["examples.rmsnorm-custom_op-cpu_fallback"] == "pass"
    assert status["examples.rmsnorm-control-cpu_fallback"] == "pass"
    assert status["examples.rmsnorm-raw_jit-cpu_fallback"] == "error"
    expected_eager = "pass" if torch.cuda.is_available() else "skip"
    assert all(status[f"examples.rmsnorm-{s}-eager"] == expected_eager for s in ("raw_jit", "triton_op", "control"))
