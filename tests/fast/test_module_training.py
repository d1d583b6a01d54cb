"""The training paths on ops as libraries ship them: an ``nn.Module`` with a weight parameter (its reference holds
the same weight, and the weight's gradient is compared) and a backward that reads its grad as if contiguous (the
paths give every output grad in a non-contiguous layout too). The cell and its repro script, run in this process,
agree."""

from pathlib import Path

import pytest

from harness.case import load_case
from harness.repro.script import script_source
from tests.conftest import make_record, typed
from tests.fast.test_cells import MATRIX, run

MODULE = "tests.fixtures.module_weight"
ENV = {"device": "cpu", "torch": "t", "triton": "x", "paths": {"train_eager": {"device": "cpu"}}}


def repro(case_id: str, capsys: pytest.CaptureFixture[str]) -> str:
    """Run the train_eager script of ``case_id`` as ``__main__`` in this process: what it printed."""
    record = make_record(case_id, "as_shipped", "train_eager", module=MODULE, status="wrong", error_type="E", error="e")
    source = script_source(typed(record), ENV, MATRIX.tolerances)
    capsys.readouterr()
    exec(compile(source, f"{case_id}.py", "exec"), {"__name__": "__main__"})
    return capsys.readouterr().out


def test_a_module_with_a_weight_trains_right_in_the_cell_and_its_repro(tmp_path: Path, capsys):
    cell = run(load_case(MODULE, "rms_norm_module"), "as_shipped", "train_eager", tmp_path, device="cpu")
    assert (cell["status"], cell["error"]) == ("pass", None)
    assert repro("rms_norm_module", capsys).strip() == "no failure: rms_norm_module-as_shipped-train_eager passes here"


def test_a_wrong_weight_gradient_is_wrong_in_the_cell_and_its_repro(tmp_path: Path, capsys):
    case_id = "rms_norm_module_wrong_weight_grad"
    cell = run(load_case(MODULE, case_id), "as_shipped", "train_eager", tmp_path, device="cpu")
    assert cell["status"] == "wrong" and cell["error"].startswith("gradient of weight: Tensor-likes are not close!")
    with pytest.raises(AssertionError, match=r"^wrong numbers: gradient of weight: Tensor-likes are not close!"):
        repro(case_id, capsys)


def test_a_backward_reading_its_grad_as_contiguous_is_wrong_with_a_non_contiguous_grad(tmp_path: Path, capsys):
    case_id = "contiguous_grad_scale"
    cell = run(load_case(MODULE, case_id), "as_shipped", "train_eager", tmp_path, device="cpu")
    assert cell["status"] == "wrong"
    assert cell["error"].startswith("gradient of input 0 (non-contiguous output grad): Tensor-likes are not close!")
    with pytest.raises(AssertionError, match=r"^wrong numbers: gradient of input 0 \(non-contiguous output grad\): "):
        repro(case_id, capsys)
