"""``python -m harness run --interpret``: Triton's CPU interpreter runs the kernels, CUDA paths run on CPU tensors,
the results say so, and a gate refuses to compare such a run with one on the device."""

from pathlib import Path

import pytest

from harness.errors import InputError
from harness.records import files as records
from harness.report.gate import check_comparable
from tests.conftest import typed
from tests.fast.test_cells import run


def read_results(file: Path) -> dict:
    """A results file as JSON, as the reader types and upgrades it."""
    return records.read_results(file).to_data()


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
from tests.fast.test_cells import run
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


