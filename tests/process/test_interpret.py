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


def test_the_kernels_the_interpreter_rewrote_for_an_earlier_cell_are_forgotten():
    """A compiled call reaching a kernel's first launch in a user's fresh process traces the interpreter's rewrite
    of it (Dynamo stops there); one this process launched for an earlier cell would trace on into the launch, and the
    cell's error would depend on the cells before it."""
    done = run_interpreted(
        "from triton.runtime.interpreter import InterpretedFunction\n"
        "from harness.case import load_case\n"
        "from harness.cell import runner\n"
        "case = load_case('cases.add', 'add')\n"
        "runner.build(case, 'raw_jit', {}).op(*case.make_inputs(100, 'cpu', 0))  # an earlier cell's launch\n"
        "print(len(InterpretedFunction.rewritten_fn))\n"
        "runner.fresh_autotune()\n"
        "print(len(InterpretedFunction.rewritten_fn))\n"
    )
    assert done.stdout.split() == ["1", "0"], done.stderr[-2000:]
