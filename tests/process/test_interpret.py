"""``python -m harness run --interpret``: Triton's CPU interpreter runs the kernels, CUDA paths run on CPU tensors,
the results say so, and a gate refuses to compare such a run with one on the device."""

import json
from pathlib import Path

from tests.conftest import run_harness, run_interpreted
from tests.fast.test_interpret import INTERPRETED_TRAINING, read_results


def test_interpreted_run_is_recorded_and_not_gated_against_a_device_run(tmp_path: Path):
    out = tmp_path / "out"
    done = run_harness(
        *("run", "--cases", "sin", "--styles", "raw_jit,triton_op,control", "--paths", "eager", "--interpret"),
        *("--report-dir", str(out), "-n", "0", "-q"),
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    results = read_results(out / "results.json")
    status = {cell["id"]: cell["status"] for cell in results["cells"]}
    # the raw kernel runs on CPU tensors; triton_op registers no CPU kernel there, so its Triton kernel runs too
    assert status == {"sin-raw_jit-eager": "pass", "sin-triton_op-eager": "pass", "sin-control-eager": "pass"}
    assert results["environment"]["triton_interpret"] is True and results["environment"]["device"] == "cpu"
    assert "interpreter" in (out / "matrix.md").read_text()

    device_run = tmp_path / "device.json"
    device_run.write_text(json.dumps({**results, "environment": {**results["environment"], "triton_interpret": False}}))
    gate = run_harness("gate", "--baseline", str(device_run), "--current", str(out / "results.json"))
    assert gate.returncode == 2, gate.stdout
    assert gate.stderr == (
        f"error: {out / 'results.json'}: environment.triton_interpret: true, the baseline's false: a run in Triton's "
        "CPU interpreter (--interpret) cannot be gated against a run on the device\n"
    )


def test_backward_kernels_train_under_the_interpreter():
    done = run_interpreted(INTERPRETED_TRAINING)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if line.endswith(" None")]
    assert len(lines) == 9 and all(" pass " in line for line in lines), done.stdout
