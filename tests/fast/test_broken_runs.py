"""A run whose cell processes cannot start stops at once, keeps what it recorded and says why in one line (exit
6); the gate refuses a run that broke or is incomplete, on either side (exit 2)."""

import json
import sys
import time
from pathlib import Path

import pytest

from harness.__main__ import main
from harness.errors import EXIT_BAD_INPUT, EXIT_RUN_BROKE
from harness.execution import zygote
from harness.plugin.confirming import Confirmer
from harness.plugin.processes import CellProcesses
from tests.conftest import make_record, matrix_text
from tests.fakes import FakeCells
from tests.fast.test_gate import results_file, run_gate

CAUSE = "ImportError: cannot import name 'triton_key' from 'triton.runtime.cache'"


def run_matrix(tmp_path: Path) -> tuple[int, dict]:
    """``python -m harness run`` in this process over 6 cells (good and wrong, 3 styles, one path): its exit
    status and results.json."""
    matrix = tmp_path / "m.toml"
    cases = ["tests.fixtures.good", "tests.fixtures.wrong"]
    matrix.write_text(matrix_text(cases, ["triton_op", "custom_op", "control"], {"cpu_fallback": ("cpu", 60)}))
    out = tmp_path / "out"
    code = main(["run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "0", "-q", "-p", "no:cacheprovider"])
    return code, json.loads((out / "results.json").read_text())


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeCells:
    cells = FakeCells()
    monkeypatch.setattr(CellProcesses, "make_process", cells)
    monkeypatch.setattr(Confirmer, "submit", lambda self, record, env: None)
    monkeypatch.setattr(Confirmer, "confirm", lambda self, results, scripts: [])
    return cells


def errors(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]


def test_a_fork_server_that_cannot_start_stops_the_run_at_its_first_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    starts = []

    def fail(*args, **kwargs):
        starts.append(args)
        raise zygote.ZygoteFailed(f"the cell processes' fork server exited 1 while starting: {CAUSE}")

    monkeypatch.setattr(zygote, "start", fail)
    began = time.monotonic()
    code, data = run_matrix(tmp_path)
    lines = errors(capsys)
    assert code == EXIT_RUN_BROKE and len(lines) == 1, lines
    assert CAUSE in lines[0] and "the run stopped there: 5 selected cell(s) not run" in lines[0]
    assert len(starts) == 1  # the run's own; no cell starts another to fail the same way
    (cell,) = data["cells"]  # the cell it ran is kept, with why
    assert (cell["status"], cell["error_type"]) == ("error", "CellProcessFailed") and CAUSE in cell["error"]
    assert data["environment"]["complete"] is False and len(data["environment"]["expected_cells"]) == 6
    assert time.monotonic() - began < 10


def test_cell_processes_that_never_start_stop_the_run(fake: FakeCells, tmp_path: Path, capsys):
    fake.in_turn = ["not_started"] * 6
    code, data = run_matrix(tmp_path)
    lines = errors(capsys)
    assert code == EXIT_RUN_BROKE and len(lines) == 1 and "ImportError: cannot import name 'knobs'" in lines[0]
    assert len(fake.runs) == 1 and [cell["error_type"] for cell in data["cells"]] == ["CellProcessFailed"]


def test_after_cells_ran_a_cell_process_that_fails_to_start_is_tried_once_more(fake: FakeCells, tmp_path: Path):
    fake.in_turn = ["pass", "not_started", "pass", "not_started", "not_started", "pass"]
    code, data = run_matrix(tmp_path)
    assert code == EXIT_RUN_BROKE  # it broke: a cell measured nothing
    statuses = [(cell["status"], cell.get("error_type")) for cell in data["cells"]]
    assert sorted(statuses, key=str) == sorted([("pass", None)] * 2 + [("error", "CellProcessFailed")] * 3, key=str)
    assert len(fake.runs) == 5  # two in a row failed: the sixth cell is not run


def test_the_gate_refuses_a_baseline_or_current_run_that_broke(tmp_path: Path):
    ran = [make_record("sin", "triton_op", "cpu_compile", status="pass"), make_record("sin", "control", "cpu_compile")]
    good = results_file(tmp_path / "good.json", ran, complete=True)
    failure = "the cell processes' fork server failed while starting: " + CAUSE
    dead = [make_record("sin", "triton_op", "cpu_compile", status="error", error_type="CellProcessFailed",
                        stage="build", error=failure)]
    broke = results_file(tmp_path / "broke.json", dead, torch="2.8.0", complete=False,
                         expected_cells=[cell["id"] for cell in ran])
    for baseline, current in ((broke, good), (good, broke)):
        done = run_gate("--baseline", str(baseline), "--current", str(current), "--out", str(tmp_path / "g.md"))
        assert done.returncode == EXIT_BAD_INPUT, done.stdout
        assert done.stderr.strip().splitlines() == [
            f"error: {broke}: cells: the run broke: 1 of 1 cell(s) measured nothing: their cell processes failed to "
            f"start ({failure}); the run stopped there: 1 selected cell(s) not run; not gated"
        ]


def test_the_gate_refuses_an_incomplete_run(tmp_path: Path):
    ran = [make_record("sin", "triton_op", "cpu_compile", status="pass"), make_record("sin", "control", "cpu_compile")]
    ids = [cell["id"] for cell in ran]
    good = results_file(tmp_path / "good.json", ran, complete=True, expected_cells=ids)
    part = results_file(tmp_path / "part.json", ran[:1], complete=False, expected_cells=ids)
    for baseline, current in ((part, good), (good, part)):
        done = run_gate("--baseline", str(baseline), "--current", str(current), "--out", str(tmp_path / "g.md"))
        assert done.returncode == EXIT_BAD_INPUT, done.stdout
        assert done.stderr.strip().splitlines() == [
            f"error: {part}: environment.complete: false: the run is incomplete (1 of 2 selected cells recorded); "
            "not gated"
        ]
    assert run_gate("--baseline", str(good), "--current", str(good), "--out", str(tmp_path / "g.md")).returncode == 0


def test_the_cause_of_a_failed_start_is_the_exception_line_of_its_log(tmp_path: Path):
    log = tmp_path / "zygote.log"
    log.write_text("old run\nRuntimeError: an earlier run's\n")
    offset = log.stat().st_size
    traceback = ['Traceback (most recent call last):', '  File "zygote.py", line 203, in _hash_sources',
                 '    from triton.runtime.cache import triton_key', f"{CAUSE} (/v/triton/runtime/cache.py)", ""]
    with open(log, "a") as file:
        file.write("\n".join(traceback))
    assert zygote.cause(log, offset) == f"{CAUSE} (/v/triton/runtime/cache.py) (see {log})"
    fatal = "Fatal Python error: init_fs_encoding\nModuleNotFoundError: No module named 'encodings'\n\nThread:\n"
    log.write_text(fatal)
    assert zygote.cause(log).startswith("ModuleNotFoundError: No module named 'encodings' (see ")
    log.write_text("killed\n")
    assert zygote.cause(log) == f"killed (see {log})"


def test_a_fork_server_that_dies_while_starting_says_why_to_every_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The workers connect to the run's fork server while it starts; one that died before it served leaves its
    exception beside its socket, and each worker's connect raises it rather than start a fork server of its own
    to fail the same way."""
    def fail() -> None:
        raise ImportError(CAUSE.removeprefix("ImportError: "))

    monkeypatch.setattr(zygote, "_die_with_parent", lambda: None)
    monkeypatch.setattr(zygote, "_prepare", lambda address: fail())
    address = str(tmp_path / "socket")
    with pytest.raises(ImportError):
        zygote.main(address, json.dumps(sys.path))
    with pytest.raises(zygote.ZygoteFailed) as failed:
        zygote.connect(address, {}, starting_pid=None)
    assert str(failed.value) == f"the cell processes' fork server failed while starting: {CAUSE}"
    (tmp_path / zygote.FAILED_FILE).unlink()
    with pytest.raises(FileNotFoundError):  # gone without a word: the worker may start its own
        zygote.connect(address, {}, starting_pid=None)
