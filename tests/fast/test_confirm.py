"""Confirmation: every failure is run again as its user-shaped repro script, outside the harness. A failure the
script shows is confirmed; one it does not show is a harness suspect: listed first in the chart, named in the
summary, and the run exits 7. A pass must hold on every call of the artifact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.case import load_case
from harness.cell.runner import run_cell
from harness.plugin.processes import CellProcesses
from harness.records.confirmation import reproduced
from tests.conftest import cell_spec, harness_main, make_record, typed
from tests.fakes import FakeCells

SCHEMA = "Could not find schema for ns::op"
WRONG = "AssertionError: wrong numbers: output, call 1: Tensor-likes are not close!"


@pytest.mark.parametrize(
    ("status", "fields", "returncode", "output", "expected"),
    [
        ("wrong", {}, 1, WRONG, True),
        ("wrong", {}, 1, "RuntimeError: boom", False),
        ("wrong", {}, 0, "no failure: x passes here", False),
        ("graph_break", {}, 1, "AssertionError: graph break: the kernel ran outside the compiled graph", True),
        ("blind", {}, 1, "AssertionError: FlopCounterMode counted 0 for the op, the case declares 7", True),
        ("error", {"error_type": "Unsupported"}, 1, "torch._dynamo.exc.Unsupported: Attempted to call", True),
        ("error", {"error_type": "Unsupported"}, 1, "RuntimeError: something else", False),
        ("error", {"error_type": "E", "error": SCHEMA}, 1, f"x: {SCHEMA}", True),
        ("timeout", {}, None, "", True),
        ("timeout", {}, 1, "RuntimeError: boom", False),
        ("crash", {}, -11, "", True),
        ("error", {"error_type": "AcceleratorError", "cuda_fault": True}, 1, "CUDA error: an illegal memory", True),
    ],
)
def test_a_script_reproduces_only_the_failure_its_cell_recorded(status, fields, returncode, output, expected):
    record = typed(make_record("sin", "raw_jit", "eager", status=status, **fields))
    assert reproduced(record, returncode, output) is expected


def test_a_pass_holds_on_every_call(tmp_path: Path):
    """A CPU kernel right on its first call and wrong on its second (within one cell): never a pass."""
    case = load_case("tests.fixtures.wrong_second_call", "wrong_second_call")
    outcome = run_cell(case, cell_spec("tests.fixtures.wrong_second_call", "triton_op"), tmp_path, {}, "cpu")
    assert (outcome.status, outcome.stage) == ("wrong", "compare"), outcome.error
    assert outcome.error.startswith("output, call 2: ")
    control = run_cell(case, cell_spec("tests.fixtures.wrong_second_call", "control"), tmp_path, {}, "cpu")
    assert control.status == "pass" and control.measurements.calls == 2


def test_no_confirm_runs_no_script(write_matrix, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(CellProcesses, "make_process", FakeCells(statuses={"good-control-cpu_fallback": ["error"]}))
    monkeypatch.setattr("harness.plugin.confirming.run_scripts", pytest.fail)
    monkeypatch.setattr("harness.plugin.confirming.run_script", pytest.fail)
    matrix = write_matrix(["tests.fixtures.good"], ["control"], {"cpu_fallback": ("cpu", 120)})
    out = tmp_path / "out"
    done = harness_main("run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "0", "--no-confirm")
    assert done.returncode == 0, done.stdout[-2000:]
    assert "confirmation" not in json.loads((out / "results.json").read_text())["cells"][0]


def test_a_scripts_error_line_is_its_exception_even_when_the_traceback_header_was_cut():
    from harness.execution.confirm import ScriptRun

    tail = "    check()\ntorch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
    tail += "RuntimeError: in-place\n\n"
    tail += "Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace"
    assert ScriptRun(1, tail, 1.0).last_line == "RuntimeError: in-place"
    whole = "Traceback (most recent call last):\n  File 'x.py', line 3\n" + tail
    assert ScriptRun(1, whole, 1.0).last_line == "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:"
    assert ScriptRun(0, "warning: x\nno failure: c passes here", 1.0).last_line == "no failure: c passes here"
