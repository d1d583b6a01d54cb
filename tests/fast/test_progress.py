"""The run's progress line (harness/plugin/progress.py): the cells done and the time left, estimated from the
paths' cell times of a previous run or of this one, printed every few seconds on the controller."""

import json
import re
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.plugin.collect import RECORD_PROPERTY
from harness.plugin.confirming import Confirmer
from harness.plugin.processes import CellProcesses
from harness.plugin.progress import Estimate, Progress, duration, previous_times
from tests.conftest import make_record
from tests.fakes import FakeCells
from tests.fast.test_records_report import results
from tests.fast.test_scheduling import run_fake_matrix


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeCells:
    cells = FakeCells()
    monkeypatch.setattr(CellProcesses, "make_process", cells)
    monkeypatch.setattr(Confirmer, "submit", lambda self, record, env: None)
    monkeypatch.setattr(Confirmer, "confirm", lambda self, results, scripts: [])
    return cells


def test_the_time_left_weighs_each_cell_by_its_paths_time():
    previous = Estimate({"aoti_strict": 10.0, "eager": 1.0}, workers=2)
    todo = Counter(aoti_strict=2, eager=4)
    assert previous.left(todo, Counter(), 0.0) == (2 * 10 + 4 * 1) / 2  # nothing done yet: over the workers
    # then scaled by this run's pace: 1 aoti cell (10 s then) done in 5 s, 14 s of the previous run's left
    assert previous.left(Counter(aoti_strict=1, eager=4), Counter(aoti_strict=1), 5.0) == 7.0
    fresh = Estimate({}, workers=1)
    assert fresh.left(Counter(eager=3), Counter(), 0.0) is None  # no previous run, nothing done: no estimate
    fresh.add("eager", 2.0)
    assert fresh.left(Counter(eager=3), Counter(), 0.0) == 6.0  # this run's mean so far
    assert fresh.cost("compile") == 2.0  # a path not seen yet costs this run's mean cell time
    assert fresh.left(Counter(eager=3, compile=1), Counter(eager=1), 4.0) == 4.0 * 8 / 2
    assert [duration(s) for s in (0.2, 40, 185, 3900)] == ["1 s", "40 s", "3 min", "1 h 05 min"]


def test_previous_times_come_from_the_report_dir_else_reuse_else_baseline(tmp_path: Path):
    def write(name: str, seconds: float) -> Path:
        cells = [make_record("add", s, p, status="pass", seconds=seconds) for s in ("a", "b") for p in ("eager",)]
        file = tmp_path / name
        file.write_text(json.dumps(results(*cells)))
        return file

    report, reuse, baseline = write("results.json", 3.0), write("reuse.json", 5.0), write("baseline.json", 7.0)
    options = SimpleNamespace(results_file=report, reuse=reuse, baseline=baseline)
    assert previous_times(options) == {"eager": 3.0}
    report.write_text("{not json")  # unreadable: the next one
    assert previous_times(options) == {"eager": 5.0}
    assert previous_times(SimpleNamespace(results_file=report, reuse=None, baseline=baseline)) == {"eager": 7.0}
    assert previous_times(SimpleNamespace(results_file=tmp_path / "none", reuse=None, baseline=None)) == {}


def report(case: str, path: str, seconds: float) -> pytest.TestReport:
    record = make_record(case, "raw_jit", path, status="pass", seconds=seconds)
    properties = [(RECORD_PROPERTY, record)]
    return pytest.TestReport(
        f"m.toml::{record['id']}", ("m.toml", 0, ""), {}, "passed", None, "call", user_properties=properties
    )


CELLS = [f"{case}-raw_jit-{path}" for case in ("add", "sin") for path in ("eager", "compile")]


@pytest.mark.parametrize("file", ["m.toml", ""])
def test_a_line_every_few_seconds_as_the_workers_reports_arrive(file: str):
    """Under xdist the controller learns the cells from the workers' collection, then gets each cell's report.
    Issue 61: a node id's file part is the matrix file's path from pytest's root folder, and nothing where the file
    lies outside it: the packaged matrix of an installed harness run without a ./matrix.toml, or a --matrix
    elsewhere. The cells were counted only where the file part named the matrix file, and no line ever came."""
    now = [0.0]
    lines: list[str] = []
    estimate = Estimate({"eager": 1.0, "compile": 4.0}, 2)  # a previous run's mean cell times
    progress = Progress(lines.append, estimate, 10.0, lambda: frozenset(CELLS), lambda: now[0])
    ids = [f"{file}::{cell}" for cell in CELLS]
    progress.pytest_xdist_node_collection_finished(None, [*ids, "tests/test_x.py::test_x", "::test_y[a-b-c]"])
    progress.pytest_xdist_node_collection_finished(None, ids[:1])  # the second worker's: the same cells
    for at, case, path, seconds in ((3, "add", "compile", 6.0), (12, "add", "eager", 2.0), (13, "sin", "eager", 2.0)):
        now[0] = at
        progress.pytest_runtest_logreport(report(case, path, seconds))
    # one line 10 s in: since the first cell ended (3 s), an eager cell (1 s before) took 9 s: the compile and
    # eager cells left (4 + 1 s before) take 45 s at that pace
    assert lines == ["[harness] 2/4 cells done, the rest in ~45 s"]
    now[0] = 30
    progress.pytest_runtest_logreport(report("sin", "compile", 6.0))
    assert len(lines) == 1  # nothing left: the run's own summary follows


def test_a_run_prints_its_progress_when_asked(fake: FakeCells, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    code, _ = run_fake_matrix(tmp_path, "--progress", "0.000001")
    out = capsys.readouterr().out
    assert code == 0
    assert [line.split(",")[0] for line in out.splitlines() if line.startswith("[harness] ") and "/4" in line] == [
        f"[harness] {n}/4 cells done" for n in (1, 2, 3)
    ]
    for name, quiet in (("default", ()), ("off", ("--progress", "0"))):  # not a terminal: every 30 s; 0: never
        (tmp_path / name).mkdir()
        code, _ = run_fake_matrix(tmp_path / name, *quiet)
        assert code == 0 and "cells done" not in capsys.readouterr().out


def test_a_nan_in_an_earlier_results_file_is_ignored_for_the_estimate_and_refused_as_input(
    fake: FakeCells, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    """Issue 44: a NaN in the report folder's earlier results.json killed the next run in its progress line (exit 3)
    and its records never reached records.jsonl. As the estimate's source it is left out; as input (``--reuse``,
    ``--baseline``, ``report``) it is one line naming the file and key, exit 2."""
    assert run_fake_matrix(tmp_path)[0] == 0
    earlier = tmp_path / "out" / "results.json"
    damaged = re.sub(r'"seconds": [0-9.e-]+', '"seconds": NaN', earlier.read_text())
    assert damaged.count("NaN") == 4
    earlier.write_text(damaged)
    (tmp_path / "damaged.json").write_text(damaged)
    capsys.readouterr()
    code, data = run_fake_matrix(tmp_path, "--progress", "0.000001")
    out = capsys.readouterr().out
    assert code == 0 and data["environment"]["complete"] is True, out[-2000:]
    assert "INTERNALERROR" not in out and "[harness] 1/4 cells done" in out
    lines = (tmp_path / "out" / "records.jsonl").read_text().splitlines()
    assert len([line for line in lines if '"id": ' in line]) == 4
    for option in ("--reuse", "--baseline"):
        (tmp_path / option).mkdir()
        code, _ = run_fake_matrix(tmp_path / option, option, str(tmp_path / "damaged.json"))
        err = capsys.readouterr().err
        assert code == 2 and f"{tmp_path / 'damaged.json'}: cells[0].seconds: expected a finite number, got nan" in err
    previous = SimpleNamespace(results_file=tmp_path / "damaged.json", reuse=None, baseline=None)
    assert previous_times(previous) == {}
    estimate = Estimate({}, workers=1)
    estimate.add("eager", float("nan"))
    assert estimate.left(Counter(eager=1), Counter(), 0.0) is None  # no usable time: no estimate, no crash


def test_a_record_reaches_records_jsonl_before_any_other_plugin_sees_its_report(
    fake: FakeCells, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    def broken(self: Progress, now: float) -> str:
        raise RuntimeError("a progress line that fails")

    monkeypatch.setattr(Progress, "line", broken)
    code, _ = run_fake_matrix(tmp_path, "--progress", "0.000001")
    assert code == 3  # pytest's internal error: the plugin's bug shows
    lines = (tmp_path / "out" / "records.jsonl").read_text().splitlines()
    assert len([line for line in lines if '"id": ' in line]) >= 1  # the cell that ended first is kept
