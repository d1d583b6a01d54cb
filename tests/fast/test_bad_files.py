"""Issue 36: a folder where a file belongs, an existing file where a folder belongs, and a results.json that
cannot be derived (a full disk, an immutable folder) are one line naming the file, never a traceback."""

import errno
import json
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
