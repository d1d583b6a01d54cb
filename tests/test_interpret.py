"""``python -m harness run --interpret``: Triton's CPU interpreter runs the kernels, CUDA paths run on CPU tensors,
the results say so, and a gate refuses to compare such a run with one on the device."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.errors import InputError
from harness.records import files as records
from harness.report.gate import check_comparable
from tests.conftest import REPO, run_harness, typed
from tests.test_cells import run


def read_results(file: Path) -> dict:
    """A results file as JSON, as the reader types and upgrades it."""
    return records.read_results(file).to_data()


@pytest.mark.process
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


def test_gate_compares_two_interpreted_runs():
    cells = [{"id": "sin-raw_jit-eager", "case": "sin", "style": "raw_jit", "path": "eager", "status": "pass"}]
    interpreted = typed({"environment": {"triton_interpret": True}, "cells": cells})
    check_comparable(interpreted, interpreted, "a.json", "b.json")
    with pytest.raises(InputError, match=r"^a\.json: environment\.triton_interpret: false, the baseline's true: "):
        check_comparable(interpreted, typed({"environment": {}, "cells": cells}), "b.json", "a.json")


def test_cuda_path_runs_on_cpu_under_the_interpreter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    record = run("sin", "control", "eager", tmp_path)  # eager is a CUDA path
    assert record["status"] == "pass", record


# Training through backward kernels, run by Triton's interpreter in a fresh process (TRITON_INTERPRET is read when a
# kernel is decorated): the launcher launches the case's backward kernel, triton_op and custom_op call their backward
# op, whose Triton kernel runs (no CPU kernel is registered under the interpreter). layernorm with a bias: its
# HAS_BIAS branch.
INTERPRETED_TRAINING = """
import dataclasses, tempfile, torch
from pathlib import Path
from tests.test_cells import run
from harness.case import load_cases


(layernorm,) = load_cases("cases.layernorm")
def with_bias(rows, device, seed):
    x, weight, _, eps = layernorm.make_inputs(rows, device, seed)
    return x, weight, torch.randn(weight.shape, generator=torch.Generator().manual_seed(seed)), eps
biased = dataclasses.replace(layernorm, id="layernorm_bias", make_inputs=with_bias)

for case in ("rmsnorm", "sin_triton_backward", biased):
    for style in ("raw_jit", "triton_op", "custom_op"):
        record = run(case, style, "train_eager", Path(tempfile.mkdtemp()), device="cpu")
        print(getattr(case, "id", case), style, record["status"], record["error"])
"""


@pytest.mark.process
def test_backward_kernels_train_under_the_interpreter():
    done = subprocess.run(
        [sys.executable, "-c", INTERPRETED_TRAINING],
        cwd=REPO,
        env={**os.environ, "TRITON_INTERPRET": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if line.endswith(" None")]
    assert len(lines) == 9 and all(" pass " in line for line in lines), done.stdout
