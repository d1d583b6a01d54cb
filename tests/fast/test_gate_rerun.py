"""Issue 36: the gate re-runs a regression only where torch, triton, the device and the interpreter setting are
the current file's, and counts a re-run only when its own stamp is that too; elsewhere the regression stands."""

import hashlib
import json
import subprocess
from pathlib import Path

import pytest
import torch
import triton

from harness.cli import rerun
from tests.conftest import GOOD_CELL, TOLERANCES, harness_main, make_record
from tests.fast.test_gate import results_file

CELL = "good-triton_op-cpu_fallback"
HERE = {"device": "cpu", "torch": torch.__version__, "triton": triton.__version__}


@pytest.fixture
def reruns(monkeypatch) -> list[dict]:
    """Each re-run the gate starts (its environment stamp to write, set by the test), as a fake ``run`` whose
    results.json says the regressed cell passed."""
    started: list[dict] = [dict(HERE)]

    def fake_run(command: list[str]) -> None:
        out = Path(command[command.index("--report-dir") + 1])
        record = make_record("good", "triton_op", "cpu_fallback", status="pass")
        data = {"schema": 2, "environment": started[0], "cells": [record]}
        (out / "results.json").write_text(json.dumps(data))
        started.append({"command": command})

    monkeypatch.setattr(rerun, "run_to_end", fake_run)
    return started


def run_gate(tmp_path: Path, *options: str, **stamp) -> subprocess.CompletedProcess:
    passed = make_record("good", "triton_op", "cpu_fallback", status="pass")
    failed = {**passed, "status": "error", "error_type": "RuntimeError", "stage": "run"}
    old = results_file(tmp_path / "old.json", [passed], **HERE)
    new = results_file(tmp_path / "new.json", [failed], **{**HERE, **stamp})
    args = ["--baseline", str(old), "--current", str(new), "--rerun", "1", "--out", str(tmp_path / "gate.md")]
    return harness_main("gate", *args, *options)


@pytest.mark.parametrize(
    ("stamp", "there", "here"),
    [
        ({"triton": "3.99.0"}, "triton 3.99.0", f"triton {triton.__version__}"),
        ({"torch": "2.99.0"}, "torch 2.99.0", f"torch {torch.__version__}"),
        ({"device": "NVIDIA H200"}, "device NVIDIA H200", "device cpu"),
    ],
)
def test_a_regression_measured_elsewhere_is_not_re_run_and_stands(stamp, there, here, tmp_path, reruns):
    done = run_gate(tmp_path, **stamp)
    assert done.returncode == 1, done.stderr
    assert f"was measured with {there}, this machine has {here}: the regressions stand" in done.stderr
    assert len(reruns) == 1  # no re-run started
    assert (
        "## Regressions" in (tmp_path / "gate.md").read_text() and "## Flaky" not in (tmp_path / "gate.md").read_text()
    )


def test_an_interpreter_setting_unlike_the_current_runs_is_not_re_run(tmp_path, reruns, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # every run here would be an interpreter run; the current was not
    done = run_gate(tmp_path)
    assert done.returncode == 1 and "triton_interpret False, this machine has triton_interpret True" in done.stderr
    assert len(reruns) == 1


def test_a_re_run_under_the_current_runs_stamp_can_find_a_flake(tmp_path, reruns, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    done = run_gate(tmp_path, "--allow-flaky")  # a flaky error passes the gate only when allowed
    assert done.returncode == 0, done.stderr
    assert "--interpret" not in reruns[1]["command"]
    assert "pass on re-run 1" in (tmp_path / "gate.md").read_text()


def test_a_re_run_that_measured_something_else_does_not_count(tmp_path, reruns, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    reruns[0]["triton"] = "0.0.0"  # the re-run's own stamp: not the current run's
    done = run_gate(tmp_path)
    assert done.returncode == 1 and "## Flaky" not in (tmp_path / "gate.md").read_text()


def test_stamps_compare_the_interpreter_setting_as_a_flag():
    assert rerun.stamp_differs({**HERE, "triton_interpret": None}, {**HERE, "triton_interpret": False}) is None
    assert rerun.stamp_differs(HERE, {**HERE, "triton": "9"}) == (f"triton {triton.__version__}", "triton 9")


def test_a_re_run_of_a_case_module_named_on_the_command_line_is_given_it_again(tmp_path, reruns, monkeypatch):
    """The run was ``run --cases mykb``: its re-run's node ids were no cells of the matrix file's selection, the
    re-run exited 2 and the regression stood, silently."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    done = run_gate(tmp_path, "--allow-flaky", argv=["run", "--cases", "mykb", "-n", "1", "--cases=other"])
    assert done.returncode == 0, done.stderr
    command = reruns[1]["command"]
    assert command[command.index("--cases") : command.index("--cases") + 3] == ["--cases", "mykb", "--cases=other"]


def test_a_re_run_that_measured_nothing_says_so(tmp_path, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(rerun, "run_to_end", lambda command: None)  # it wrote no results
    done = run_gate(tmp_path)
    assert done.returncode == 1
    assert "gate: the re-run of 1 cell(s) measured nothing: they stand as measured" in done.stderr


def test_a_re_run_reads_the_matrix_the_current_run_read(tmp_path, reruns, monkeypatch):
    """The run was ``run --matrix ci/matrix.toml`` and the gate was given no --matrix: its re-runs read
    ./matrix.toml or the packaged one, whose cells the regressions are not (the re-runs measured nothing) or whose
    tolerances are others. They read the run's own file, while it holds the text the run read."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    own = tmp_path / "ci.toml"
    own.write_text('cases = ["good"]\n')
    digest = hashlib.sha256(own.read_bytes()).hexdigest()[:16]  # as the run records its matrix file
    done = run_gate(tmp_path, "--allow-flaky", matrix=str(own), matrix_digest=digest)
    assert done.returncode == 0, done.stderr
    command = reruns[1]["command"]
    assert command[command.index("--matrix") + 1] == str(own)
    own.write_text('cases = ["good", "other"]\n')  # edited since: not what the run read
    run_gate(tmp_path, "--allow-flaky", matrix=str(own), matrix_digest=digest)
    command = reruns[2]["command"]
    assert command[command.index("--matrix") + 1] != str(own)
    given = tmp_path / "given.toml"
    given.write_text(GOOD_CELL + TOLERANCES)  # a matrix that loads: the gate reads the one it is given
    digest = hashlib.sha256(own.read_bytes()).hexdigest()[:16]
    run_gate(tmp_path, "--allow-flaky", "--matrix", str(given), matrix=str(own), matrix_digest=digest)
    command = reruns[3]["command"]
    assert command[command.index("--matrix") + 1] == str(given)
