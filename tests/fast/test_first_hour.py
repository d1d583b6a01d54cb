"""Issue 43, "the first hour, fixed": what a new user met in their first hour with the harness, each answered
here (the other points are tested beside their kind: matrix-file typos in test_config.py, ``pytest FILE.toml`` in
test_plain_pytest.py, a --report-dir that is a file in test_bad_inputs.py)."""

import json
from pathlib import Path

import pytest

from harness.__main__ import main
from tests.conftest import GOOD_CELL, TOLERANCES, make_record
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
        "use: not answered, not measured (deploy needs aoti_standalone: not run in these results; run them: --paths "
        "aoti_standalone)"
    )
    code, out, _ = ran(capsys, "which", "--results", str(file), "--goals", "fullgraph")
    assert code == 0 and out.splitlines()[2].startswith("use: raw_jit (passed")


def test_a_case_is_named_by_its_id_or_its_module_wherever_a_case_is_named(tmp_path: Path, monkeypatch, capsys):
    """``mygelu`` defines ``gelu_alpha``: --cases takes either, for run and list (the matrix file's cases) and for
    report and which (the records' modules); a case id the matrix lacks is told how a case of one's own is named."""
    (tmp_path / "mygelu.py").write_text("from tests.fixtures.cases import make_case\nCASE = make_case('gelu_alpha')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    matrix = tmp_path / "m.toml"
    matrix.write_text(GOOD_CELL.replace("tests.fixtures.good", "mygelu") + TOLERANCES)
    for name in ("mygelu", "gelu_alpha"):
        code, out, err = ran(capsys, "list", "--matrix", str(matrix), "--cases", name)
        assert (code, out) == (0, "gelu_alpha-control-cpu_fallback\n"), err
    code, _, err = ran(capsys, "list", "--cases", "gelu_alpha")  # the default matrix, without mygelu
    assert code == 2 and err.rstrip().endswith(
        "; a case not in the matrix file is named by its module (--cases mygelu runs the cases mygelu defines)"
    )
    records = [make_record(case, "control", "eager", module=module, status="pass") for case, module in
               [("gelu_alpha", "mygelu"), ("gelu_beta", "mygelu"), ("sin", "cases.sin")]]  # fmt: skip
    file = write(tmp_path / "r" / "results.json", results(*records, goals={"eager": ["eager"]}))
    for name in ("mygelu", "gelu_alpha,gelu_beta"):
        code, out, err = ran(capsys, "which", "--results", str(file), "--goals", "eager", "--cases", name)
        assert code == 0 and out.splitlines()[1] == "cases: gelu_alpha, gelu_beta", err
    code, _, err = ran(capsys, "report", "--results", str(file), "--cases", "mygelu", "--out", str(tmp_path / "c.md"))
    assert code == 0 and "per case: gelu_alpha 1 of 1 · gelu_beta 1 of 1." in (tmp_path / "c.md").read_text()
    code, _, err = ran(capsys, "which", "--results", str(file), "--goals", "eager", "--cases", "mygelo")
    assert code == 2 and "unknown case 'mygelo' (did you mean 'mygelu'?)" in err


MISMATCH = (
    "output: Tensor-likes are not close!; Mismatched elements: 3001 / 3001 (100.0%); Greatest absolute difference: "
    "{abs} at index (10,) (up to 1e-05 allowed); Greatest relative difference: 0.5 at index (3,) (up to 1e-05 allowed)"
)


def wrong(case: str, style: str, path: str, diff: float) -> dict:
    fields = {"error_type": "Mismatch", "error": MISMATCH.format(abs=diff), "stage": "compare"}
    return make_record(case, style, path, status="wrong", **fields)


def test_gate_gives_each_wrong_cells_magnitude_and_names_a_wrong_kernel_once(tmp_path: Path, capsys):
    """``leaky`` is wrong in every style on every path while its control passes: one line says its kernel is
    wrong, above the list; ``sin`` wrong in one cell is a wrapping problem, not its kernel's."""
    styles, paths = ("raw_jit", "triton_op", "custom_op"), ("eager", "compile")
    cells = [(c, s, p) for c in ("leaky", "sin") for s in ("control", *styles) for p in paths]
    passed = [make_record(c, s, p, status="pass") for c, s, p in cells]
    now = [
        wrong(c, s, p, 2.25 if s == "custom_op" else 1.5) if (c == "leaky" or (s, p) == ("raw_jit", "compile"))
        and s != "control" else make_record(c, s, p, status="pass")
        for c, s, p in cells
    ]  # fmt: skip
    env = {"torch": "2.11.0", "triton": "3.6.0", "device": "NVIDIA H200", "commit": "abc"}
    old = write(tmp_path / "old.json", results(*passed, **env))
    new = write(tmp_path / "new.json", results(*now, **{**env, "torch": "2.13.0"}))
    code, out, _ = ran(capsys, "gate", "--baseline", str(old), "--current", str(new), "--out", str(tmp_path / "g.md"))
    assert code == 1
    kernel = [line for line in out.splitlines() if "kernel of case" in line]
    assert kernel == [
        "**The kernel of case leaky is wrong** (wrong in every style on eager, max abs diff 2.25; its control "
        "passes): fix the kernel first, its cells below are that one bug."
    ]
    assert out.index(kernel[0]) < out.index("## Wrong numbers")
    rows = {line.split("|")[1].strip(): line.split("|")[4].strip() for line in out.splitlines() if "❗" in line}
    assert len(rows) == 7 and rows["leaky-custom_op-eager"] == "output: max abs 2.25, max rel 0.5, 3001 / 3001 elements"
    assert rows["sin-raw_jit-compile"] == "output: max abs 1.5, max rel 0.5, 3001 / 3001 elements"
    assert "| how wrong" in out
