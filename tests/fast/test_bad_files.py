"""Issue 36: a folder where a file belongs, an existing file where a folder belongs, and a results.json that
cannot be derived (a full disk, an immutable folder) are one line naming the file, never a traceback."""

import errno
import json
import os
from pathlib import Path

import pytest

from harness.__main__ import main
from harness.records.log import LOG_NAME, RecordLog
from harness.records.record import Record
from tests.fast.test_bad_inputs import one_line, results_file


@pytest.mark.parametrize(
    "command",
    [
        ["list", "--matrix", "{dir}"],
        ["run", "--matrix", "{dir}", "--report-dir", "{tmp}/out"],
        ["report", "--results", "{dir}"],
        ["gate", "--baseline", "{dir}", "--current", "{good}", "--rerun", "0", "--out", "{tmp}/gate.md"],
        ["history", "{dir}", "--out", "{tmp}/history.md"],
        ["repro", "--results", "{dir}"],
    ],
)
def test_a_folder_given_as_an_input_file_is_one_line(command, tmp_path, capsys):
    folder, good = tmp_path / "folder", results_file(tmp_path)
    folder.mkdir()
    args = [arg.format(dir=folder, tmp=tmp_path, good=good) for arg in command]
    one_line(capsys, main(args), f"{folder}: (file): ", "a folder, not a file")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", [["report", "--results", "{good}"], ["merge", "{good}"]])
def test_a_folder_given_as_an_output_file_is_one_line(command, tmp_path, capsys):
    folder, good = tmp_path / "folder", results_file(tmp_path)
    (folder / "inside").mkdir(parents=True)  # not empty: nothing may replace it
    args = [*(arg.format(good=good) for arg in command), "--out", str(folder)]
    one_line(capsys, main(args), f"{folder}: --out: ", "cannot write it")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["folder", "results.json"]  # no folder.tmp left
    assert [path.name for path in folder.iterdir()] == ["inside"]


def test_repro_out_naming_an_existing_file_is_one_line(tmp_path, capsys):
    good, file = results_file(tmp_path), tmp_path / "a-file"
    file.write_text("mine\n")
    one_line(capsys, main(["repro", "--results", str(good), "--out", str(file)]), f"{file}: --out: ", "cannot write")
    assert file.read_text() == "mine\n"


def _records_log(folder: Path) -> Path:
    """A finished run's records.jsonl (one record) and no results.json beside it."""
    from tests.conftest import make_record

    log = RecordLog(folder / LOG_NAME)
    env = {"torch": "2.13", "triton": "3.7.1", "device": "cpu", "expected_cells": ["sin-control-cpu_fallback"]}
    log.start(env, [Record.from_dict(make_record("sin", "control", "cpu_fallback", status="pass"))])
    log.end({"complete": True})
    return log.file


@pytest.mark.parametrize(
    ("error", "words"),
    [(OSError(errno.ENOSPC, "No space left on device"), "No space left"), (PermissionError(1, "denied"), "denied")],
)
def test_report_that_cannot_derive_results_json_stops_as_a_run_does(error, words, tmp_path, capsys, monkeypatch):
    """A full disk (the temp file half-written, then ENOSPC) or an immutable folder: one line naming results.json
    and exit 6, as a run in that state; no results.json.tmp left behind, records.jsonl untouched."""
    log = _records_log(tmp_path)
    before = log.read_text()
    write_text = Path.write_text

    def failing(self: Path, text: str, *args, **kwargs) -> int:
        if self.name == "results.json.tmp":
            write_text(self, "")  # the file is made, then the disk is full
            raise error
        return write_text(self, text, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", failing)
    code = main(["report", "--results", str(log)])
    err = one_line(capsys, code, f"{tmp_path / 'results.json'}: (write): ", words, expected_code=6)
    assert str(log) in err
    assert sorted(path.name for path in tmp_path.iterdir()) == [LOG_NAME]
    assert log.read_text() == before and json.loads(before.splitlines()[-1]) == {"end": {"complete": True}}


def _log_with(folder: Path, *lines: str) -> Path:
    """A records.jsonl of an environment line, one record and ``lines``."""
    from tests.conftest import make_record

    env = {"torch": "2.13", "triton": "3.7.1", "device": "cpu", "expected_cells": ["sin-control-cpu_fallback"]}
    record = make_record("sin", "control", "cpu_fallback", status="pass")
    log = folder / LOG_NAME
    log.write_text("\n".join([json.dumps({"environment": env}), json.dumps({"record": record}), *lines]) + "\n")
    return log


DEEP = "[" * 200_000 + "]" * 200_000


@pytest.mark.parametrize(
    ("damage", "key", "words"),
    [
        ("case_dash", "cells[0].case: ", "not an id (no '-', not empty): 'si-n'"),
        ("expected_id", "environment.expected_cells[1]: ", "not a cell id (case-style-path): 'sin_control'"),
        ("end_expected", "line 3.end.expected_cells: ", "expected a list, got 5"),
        ("end_complete", "line 3.end.complete: ", "expected bool"),
        ("deep_json", "(json): ", "nested too deep to read"),
        ("deep_line", "line 3: ", "nested too deep to read"),
    ],
)
def test_damaged_records_are_one_line(damage, key, words, tmp_path, capsys):
    """Issue 44: each of these was a traceback (ValueError, TypeError, RecursionError) in report, which, gate."""
    if damage == "case_dash":
        file = results_file(tmp_path, case="si-n", id="si-n-control-cpu_fallback")
    elif damage == "expected_id":
        file = results_file(tmp_path, env={"expected_cells": ["sin-control-cpu_fallback", "sin_control"]})
    elif damage == "deep_json":
        file = tmp_path / "results.json"
        file.write_text(DEEP)
    else:
        end = {"end_expected": '{"end": {"expected_cells": 5}}', "end_complete": '{"end": {"complete": "yes"}}'}
        file = _log_with(tmp_path, end.get(damage, DEEP), '{"end": {}}')
    good = results_file(tmp_path, "good.json")
    out = tmp_path / "out"
    for command in (
        ["report", "--results", str(file), "--out", str(out / "c.md")],
        ["which", "--results", str(file), "--goals", "g"],
        ["gate", "--baseline", str(good), "--current", str(file), "--rerun", "0", "--out", str(out / "g.md")],
    ):
        one_line(capsys, main(command), f"{file}: {key}", words)
    assert not out.exists()


@pytest.mark.parametrize("nested", ["[", "{b="])
def test_a_toml_file_nested_too_deep_is_one_line(nested, tmp_path, capsys):
    deep = "a = " + nested * 5000 + "1" + ("]" if nested == "[" else "}") * 5000 + "\n"
    matrix, known, good = tmp_path / "m.toml", tmp_path / "known.toml", results_file(tmp_path)
    matrix.write_text(deep)
    known.write_text(deep)
    one_line(capsys, main(["list", "--matrix", str(matrix)]), f"{matrix}: (syntax): ", "nested too deep")
    gate = ["gate", "--baseline", str(good), "--current", str(good), "--rerun", "0", "--known", str(known)]
    one_line(capsys, main([*gate, "--out", str(tmp_path / "g.md")]), f"{known}: (syntax): ", "nested too deep")


def test_the_rescue_write_on_a_full_disk_is_one_line(tmp_path, monkeypatch):
    """Issue 44: a write failed and the rescue copy in the temp folder failed too (a full disk): a traceback."""
    import tempfile

    from harness.plugin.reportdir import ReportDir

    made: list[str] = []
    mkstemp = tempfile.mkstemp

    def half_written(*args, **kwargs):
        fd, name = mkstemp(*args, dir=tmp_path, **kwargs)
        made.append(name)
        return fd, name

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(tempfile, "mkstemp", half_written)
    monkeypatch.setattr(json, "dump", full)
    folder = ReportDir(tmp_path / "out")
    line = folder.write_failed(tmp_path / "out" / LOG_NAME, OSError(errno.ENOSPC, "No space left on device"), {})
    assert folder.failed == line and "\n" not in line
    assert line.startswith(f"{tmp_path / 'out' / LOG_NAME}: (write): No space left on device: the run stops; its 0")
    assert f"could not be saved in {tempfile.gettempdir()} either (No space left on device)" in line
    assert made and not Path(made[0]).exists()  # the half-written rescue file is not left behind


@pytest.mark.parametrize(
    "command",
    [
        ["report", "--results", "{fifo}", "--out", "{tmp}/c.md"],
        ["which", "--results", "{fifo}", "--goals", "g"],
        ["gate", "--baseline", "{good}", "--current", "{fifo}", "--rerun", "0", "--out", "{tmp}/g.md"],
        ["gate", "--baseline", "{good}", "--current", "{good}", "--known", "{fifo}", "--out", "{tmp}/g.md"],
        ["list", "--matrix", "{fifo}"],
        ["report", "--results", "{log}"],
    ],
)
def test_a_fifo_given_as_an_input_file_is_one_line_not_a_hang(command, tmp_path, capsys):
    """Issue 44: opening a FIFO waits for a writer forever. The command runs in a thread: were it to hang, the
    test opens the FIFO for writing (the command goes on) and fails."""
    import threading

    fifo, good = tmp_path / "fifo", results_file(tmp_path)
    os.mkfifo(fifo)
    (tmp_path / "logs").mkdir()
    log = tmp_path / "logs" / LOG_NAME
    os.mkfifo(log)
    args = [arg.format(fifo=fifo, tmp=tmp_path, good=good, log=log) for arg in command]
    codes: list[int] = []
    done = threading.Thread(target=lambda: codes.append(main(args)), daemon=True)
    done.start()
    done.join(20)
    if done.is_alive():
        for pipe in (fifo, log):
            try:
                os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:  # ENXIO: no reader waits on this one
                pass
        done.join(20)
        pytest.fail(f"{command[0]} waited on the FIFO")
    named = log if "{log}" in command else fifo
    one_line(capsys, codes[0], f"{named}: (file): ", "a FIFO, not a regular file")


@pytest.mark.parametrize(
    "command",
    [
        ["report", "--results", "{good}", "--out", "{good}"],
        ["gate", "--baseline", "{good}", "--current", "{other}", "--rerun", "0", "--out", "{good}"],
        ["gate", "--baseline", "{other}", "--current", "{good}", "--rerun", "0", "--out", "{good}"],
    ],
)
def test_an_out_naming_an_input_file_is_one_line_and_the_file_is_kept(command, tmp_path, capsys):
    good, other = results_file(tmp_path), results_file(tmp_path, "other.json")
    before = good.read_text()
    args = [arg.format(good=good, other=other) for arg in command]
    one_line(capsys, main(args), f"{good}: --out: ", "would write over it")
    assert good.read_text() == before


@pytest.mark.parametrize(
    ("command", "named"),
    [
        (["report", "--results", "{a}/results.json", "--out", "{a}/records.jsonl"], "{a}/records.jsonl"),
        (["history", "{a}/results.json", "{b}/results.json", "--out", "{b}/results.json"], "{b}/results.json"),
        (["history", "{a}/results.json", "--out", "{a}/records.jsonl"], "{a}/records.jsonl"),
        (["merge", "{a}/results.json", "{b}/results.json", "--out", "{a}/records.jsonl"], "{a}/records.jsonl"),
        (["merge", "{a}/results.json", "{b}/results.json", "--out", "{b}/merged.json"], "{b}/matrix.md"),
    ],
)
def test_an_out_naming_a_file_of_an_input_run_is_one_line_and_the_run_is_kept(command, named, tmp_path, capsys):
    """A run's folder: its results.json, its records.jsonl, its chart. Each command wrote over the one named (a log
    written over made its results.json unreadable after; a merge into a share's folder replaced its chart)."""
    folders = {key: tmp_path / key for key in "ab"}
    for folder in folders.values():
        folder.mkdir()
        _records_log(folder)
        os.utime(folder / LOG_NAME, (1, 1))  # older than results.json, which is read
        results_file(folder)
        (folder / "matrix.md").write_text("# the run's chart\n")
    before = {file: file.read_bytes() for folder in folders.values() for file in folder.iterdir()}
    args = [arg.format(**folders) for arg in command]
    one_line(capsys, main(args), f"{named.format(**folders)}: --out: ", "would write over it")
    assert {file: file.read_bytes() for folder in folders.values() for file in folder.iterdir()} == before


def test_report_of_records_of_the_users_naming_writes_no_results_beside_them(tmp_path, capsys):
    """Only a run's own records.jsonl is its report folder's: another run's results.json beside a log the user
    named otherwise is left as it is."""
    folder = tmp_path / "u"
    folder.mkdir()
    log = _records_log(tmp_path).rename(folder / "mylog.jsonl")
    unrelated = results_file(folder)
    before = unrelated.read_text()
    assert main(["report", "--results", str(log), "--out", str(folder / "chart.md")]) == 0
    assert unrelated.read_text() == before and (folder / "chart.md").exists()
    assert "results: none derived (mylog.jsonl is no run's records.jsonl" in capsys.readouterr().out
