"""Empty file and folder names, an --out naming gate's other inputs or a hard link of an input, a case id that is
no string, a timeout past what a wait can hold. Each was a traceback, a silently different file (the working
directory, a default), or a user's file written over."""

import os

import pytest

from harness.__main__ import main
from tests.conftest import REPO
from tests.fast.test_bad_inputs import one_line, results_file


@pytest.mark.parametrize(
    ("command", "option"),
    [
        (["report", "--results", ""], "--results"),
        (["report", "--results", "{good}", "--out", ""], "--out"),
        (["which", "--goals", "run eagerly", "--results", ""], "--results"),
        (["repro", "--results", "{good}", "--out", ""], "--out"),
        (["history", ""], "results"),
        (["merge", "{good}", "--out", ""], "--out"),
        (["gate", "--baseline", "", "--current", "{good}"], "--baseline"),
        (["gate", "--baseline", "{good}", "--current", ""], "--current"),
        (["gate", "--baseline", "{good}", "--current", "{good}", "--known", " "], "--known"),
        (["list", "--matrix", ""], "--matrix"),
        (["run", "--report-dir", "", "--cases", "sin"], "--report-dir"),
        (["run", "--cache-dir", "", "--cases", "sin"], "--cache-dir"),
    ],
)
def test_an_empty_file_name_is_one_line_never_a_traceback_or_the_default(command, option, tmp_path, capsys,
                                                                        monkeypatch):
    monkeypatch.chdir(tmp_path)  # a run into '' wrote results.json, matrix.md and repros/ here
    good = results_file(tmp_path, "good.json")
    args = [arg.format(good=good) for arg in command]
    one_line(capsys, main(args), f"command line: {option}: ", "expected a f")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["good.json"]


@pytest.mark.parametrize("option", ["--known", "--matrix"])
def test_gate_out_naming_its_known_or_matrix_file_keeps_the_file(option, tmp_path, capsys):
    good, other = results_file(tmp_path), results_file(tmp_path, "other.json")
    mine = tmp_path / "mine.toml"
    own = "# the user's own file\n" + (REPO / "matrix.toml").read_text()  # a matrix that loads: gate reads it first
    mine.write_text(own)
    args = ["gate", "--baseline", str(good), "--current", str(other), "--rerun", "0", option, str(mine)]
    one_line(capsys, main([*args, "--out", str(mine)]), f"{mine}: --out: ", f"is the {option} file")
    assert mine.read_text() == own


def test_an_out_hard_linked_to_the_results_keeps_them(tmp_path, capsys):
    good = results_file(tmp_path)
    before = good.read_text()
    os.link(good, tmp_path / "chart.md")
    one_line(capsys, main(["report", "--results", str(good), "--out", str(tmp_path / "chart.md")]), "--out", "over it")
    assert good.read_text() == before


@pytest.mark.parametrize("case_id", ["5", "None"])
def test_a_case_id_that_is_no_string_is_one_line(case_id, tmp_path, monkeypatch, capsys):
    package = tmp_path / f"id_{case_id.lower()}"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "mod.py").write_text(
        "from tests.fixtures.broken import broken\n"
        f"CASE = broken('placeholder', id={case_id})\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    one_line(capsys, main(["list", "--cases", f"{package.name}.mod"]), "--cases[0]", f"bad case id {case_id}")


def test_a_timeout_past_what_a_wait_holds_is_one_line(tmp_path, capsys):
    matrix = tmp_path / "matrix.toml"
    matrix.write_text(
        'cases = ["sin"]\nstyles = ["control"]\n[paths]\ncpu_fallback = { device = "cpu", timeout = 1e300 }\n'
        '[tolerances]\nfloat32 = { atol = 1e-5, rtol = 1e-5 }\n'
    )
    one_line(capsys, main(["list", "--matrix", str(matrix)]), "paths.cpu_fallback.timeout", "<= 1e+06")
