"""Issue 43, "the first hour, fixed": what a new user met in their first hour with the harness, each answered
here (the other points are tested beside their kind: matrix-file typos in test_config.py, ``pytest FILE.toml`` in
test_plain_pytest.py, a --report-dir that is a file in test_bad_inputs.py)."""

import json
from pathlib import Path

import pytest

from harness.__main__ import main
from tests.fast.test_chart import BOOM, PASS, cells
from tests.fast.test_records_report import results

GOALS = {"fullgraph": ["fullgraph"], "deploy": ["aoti_standalone"]}


def write(file: Path, data: dict) -> Path:
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(json.dumps(data))
    return file


def ran(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_which_repro_report_and_gate_read_the_last_run_without_results(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    commands = [["which", "--goals", "fullgraph"], ["repro"], ["report"], ["gate", "--baseline", "b.json"]]
    for command in commands:
        code, _, err = ran(capsys, *command)
        key = "--current" if command[0] == "gate" else "--results"
        assert code == 2 and len(err.splitlines()) == 1, err
        assert err.startswith(
            f"error: command line: {key}: no results found: looked for reports/latest/results.json (or "
            "reports/latest/records.jsonl), reports/results.json (or reports/records.jsonl); run `python -m harness "
            f"run` first, or give {key} DIR/results.json for a run with --report-dir DIR"
        ), err
    # no run yet, a reference in reports/: read
    both = cells({"raw_jit": {"fullgraph": PASS}, "triton_op": {"fullgraph": PASS}})
    write(tmp_path / "reports" / "results.json", results(*both, goals=GOALS))
    code, out, err = ran(capsys, "which", "--goals", "fullgraph")
    assert code == 0 and "use: raw_jit, triton_op (passed" in out
    assert err == "results: reports/results.json (no run in reports/latest/: give --results FILE for another)\n"
    # the last run's (where run writes by default) comes first
    one = cells({"raw_jit": {"fullgraph": PASS}, "triton_op": {"fullgraph": BOOM}})
    write(tmp_path / "reports" / "latest" / "results.json", results(*one, goals=GOALS))
    code, out, err = ran(capsys, "which", "--goals", "fullgraph")
    assert code == 0 and "use: raw_jit (passed" in out
    assert err == "results: reports/latest/results.json (the last run's: give --results FILE for another)\n"
    code, out, err = ran(capsys, "repro")  # (these records name no case module: no script, but the folder's there)
    assert code == 0 and out == "0 repro script(s) in reports/latest/repros/\n", err  # beside the results it read


def test_which_says_not_measured_for_a_goal_whose_paths_did_not_run(tmp_path: Path, capsys):
    """As the chart's "not answered", not ``use: none`` (which reads as: every style fails it)."""
    file = write(tmp_path / "results.json", results(*cells({"raw_jit": {"fullgraph": PASS}}), goals=GOALS))
    code, out, _ = ran(capsys, "which", "--results", str(file), "--goals", "fullgraph,deploy")
    assert code == 0 and out.splitlines()[-1] == (
        "use: not measured (deploy needs aoti_standalone: not run in these results; run them: --paths "
        "aoti_standalone)"
    )
    code, out, _ = ran(capsys, "which", "--results", str(file), "--goals", "fullgraph")
    assert code == 0 and out.splitlines()[2].startswith("use: raw_jit (passed")
