"""The ``custom_op`` styles' fake: the case's ``fake`` where it declares one, else its reference. A reference that
keeps its input's strides, beside a launcher that allocates a contiguous output, is an incorrect fake (opcheck's
fake-tensor test and Inductor reject it); the case's ``fake`` of the launcher's layout passes. Cells run in this
process under Triton's interpreter."""

from pathlib import Path

import pytest

from harness.repro.script import script_source
from harness.spec import Status
from tests.conftest import make_record, typed
from tests.fast.test_cells import MATRIX, run
from tests.fast.test_wrong_kernel import case_module

SOURCE = """import torch
import triton
import triton.language as tl

from harness.case import Case


@triton.jit
def cube_kernel(x_ptr, y_ptr, s0, s1, n1, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * s0 + cols * s1, mask=cols < n1)
    tl.store(y_ptr + row * n1 + cols, x * x * x, mask=cols < n1)


def launch(kernel, x, **meta):
    y = torch.empty(x.shape, device=x.device, dtype=x.dtype)  # contiguous, whatever x's strides
    kernel[(x.shape[0],)](x, y, x.stride(0), x.stride(1), x.shape[1], **meta)
    return y


def reference(x):
    return x * x * x  # keeps x's strides


def make_inputs(size, device, seed):
    base = torch.randn(7, size, generator=torch.Generator().manual_seed(seed))
    return (base.to(device).t(),)  # a transposed view
FAKE
CASE = Case(id="CASE_ID", kernel=cube_kernel, launch=launch, reference=reference, make_inputs=make_inputs,
            arg_names=("x",), sizes=(5,), meta={"BLOCK": 8}FIELD)
"""
FAKE = """

def fake(x):
    return torch.empty(x.shape, device=x.device, dtype=x.dtype)

"""


def cube(folder: Path, with_fake: bool):
    name = "cube_fake" if with_fake else "cube_reference"
    source = SOURCE.replace("CASE_ID", name).replace("FAKE", FAKE if with_fake else "")
    return case_module(folder, source.replace("FIELD", ", fake=fake" if with_fake else ""), name).CASE


def test_the_case_fake_is_the_custom_ops_fake_and_its_script_registers_it(tmp_path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    reference_only = run(cube(tmp_path, False), "custom_op", "opcheck", tmp_path, device="cpu")
    assert reference_only["status"] == Status.ERROR and "test_faketensor" in reference_only["error"]
    assert run(cube(tmp_path, True), "custom_op", "opcheck", tmp_path, device="cpu")["status"] == Status.PASS
    record = make_record("cube_fake", "custom_op", "opcheck", module="cube_fake", status="error", error_type="E")
    source = script_source(typed(record), {"device": "cpu", "torch": "t", "triton": "x"}, MATRIX.tolerances)
    assert "def fake(x):" in source and "    return fake(x)" in source


def test_an_issue_report_of_a_failure_on_the_reference_as_fake_says_the_fake_is_the_cases():
    from harness.records.results import Results
    from harness.repro.issue import issue_text

    error = "expected stride 70==1 at dim=1 ... This error most often comes from an incorrect fake (aka meta) kernel"
    cell = typed(make_record("cube", "custom_op", "compile", status="error", error_type="AssertionError", error=error))
    script = "@cube.register_fake\ndef _(x):\n    return {}(x)\n"
    report = issue_text(cell, Results({"device": "cpu"}, [cell]), script.format("reference"))
    assert "> The op's fake here is the case's reference (the case declares no `fake`)" in report
    assert "The op's fake" not in issue_text(cell, Results({"device": "cpu"}, [cell]), script.format("fake"))
