"""Scheduling, re-runs and crash records without processes: ``CellProcesses`` over fake cell processes
(tests/fakes.py), alone and under a whole ``python -m harness run`` in this process."""

import inspect
import json
import threading
from pathlib import Path

import pytest
import torch

from harness.__main__ import main
from harness.execution.cellprocess import CellProcess
from harness.execution.machine import versions
from harness.matrix.config import load_matrix
from harness.plugin.confirming import Confirmer
from harness.plugin.processes import CellProcesses, CellRunner, assigned_gpu
from harness.records.record import Record
from harness.records.reuse import cell_keys
from tests.conftest import cell_spec, matrix_text
from tests.fakes import FakeCells, FakeProcess, FakeRun, fake_config

WRONG, GOOD = cell_spec("tests.fixtures.wrong", "triton_op"), cell_spec("tests.fixtures.good", "triton_op")


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeCells:
    """Every cell process this test makes is a fake (a matrix run through ``main`` included)."""
    cells = FakeCells()
    monkeypatch.setattr(CellProcesses, "make_process", cells)
    monkeypatch.setattr(Confirmer, "submit", lambda self, record, env: None)  # no repro script is run
    monkeypatch.setattr(Confirmer, "confirm", lambda self, results, scripts: [])
    return cells


def test_the_cell_process_and_the_fake_are_both_cell_runners(tmp_path: Path):
    for runner in (CellProcess, FakeProcess):
        for method in ("run", "stop", "close"):
            assert inspect.signature(getattr(runner, method)) == inspect.signature(getattr(CellRunner, method))
    real = CellProcess(tmp_path / "main.log", {}, None)  # starts nothing until its first cell
    real.close()
    assert real.device is None and CellProcesses.make_process is CellProcess


def test_a_wrong_cell_is_rerun_each_attempt_in_a_fresh_process(fake: FakeCells, tmp_path: Path):
    fake.statuses[WRONG.id] = ["wrong", "pass", "wrong", "pass"]
    processes = CellProcesses(fake_config(tmp_path, (WRONG,), reruns=3))
    outcome = processes.run(WRONG)
    assert (outcome.status, outcome.outcomes) == ("wrong", ["wrong", "pass", "wrong", "pass"])
    # attempts 2 and 3 in processes of their own, closed after them; the last in the worker's own, restarted
    assert fake.runs == [
        FakeRun(0, WRONG.id, 1),
        FakeRun(1, WRONG.id, 2),
        FakeRun(2, WRONG.id, 3),
        FakeRun(0, WRONG.id, 4),
    ]
    assert [(p.log_name, p.closed, p.stopped) for p in fake.processes] == [
        ("main", False, 1),
        ("main.attempt2", True, 0),
        ("main.attempt3", True, 0),
    ]
    # every attempt's process begun before the second attempt ran: their starts overlap
    assert [p.begun_after for p in fake.processes] == [1, 1, 1]
    assert outcome.measurements.ended == 4.5 and outcome.measurements.worker == "main"  # the bar spans all
    assert Record.of(WRONG, outcome).to_dict()["outcomes"] == ["wrong", "pass", "wrong", "pass"]


def test_cells_share_the_workers_process_and_a_pass_runs_once(fake: FakeCells, tmp_path: Path):
    processes = CellProcesses(fake_config(tmp_path, (GOOD, WRONG), reruns=2, workerid="gw1"))
    assert processes.run(GOOD).outcomes is None
    fake.statuses[WRONG.id] = ["wrong", "wrong", "wrong"]
    assert processes.run(WRONG).outcomes == ["wrong", "wrong", "wrong"]
    assert processes.run(GOOD).status == "pass"
    assert [(run.process, run.attempt) for run in fake.runs] == [(0, 1), (0, 1), (1, 2), (0, 3), (0, 1)]
    assert [p.log_name for p in fake.processes] == ["gw1", "gw1.attempt2"] and processes.device == "fake-device"
    processes.pytest_unconfigure(None)
    assert fake.processes[0].closed


def test_a_cuda_fault_stops_the_cell_process_and_a_wrong_cell_does_not(fake: FakeCells, tmp_path: Path):
    fault = cell_spec("tests.fixtures.cuda_fault", "triton_op")
    fake.statuses.update({fault.id: ["cuda_fault"], WRONG.id: ["wrong"]})
    processes = CellProcesses(fake_config(tmp_path, (GOOD, WRONG, fault)))
    assert processes.run(WRONG).status == "wrong" and fake.processes[0].stopped == 0  # a verdict: it goes on
    outcome = processes.run(fault)
    assert (outcome.status, outcome.cuda_fault, fake.processes[0].stopped) == ("error", True, 1)
    assert processes.run(GOOD).status == "pass" and fake.processes[0].stopped == 1  # the next cell: a fresh one


def test_a_pass_whose_check_at_the_bandwidth_size_faulted_the_gpu_stops_its_process(fake: FakeCells, tmp_path: Path):
    fake.statuses.update({GOOD.id: ["poisoned"]})
    processes = CellProcesses(fake_config(tmp_path, (GOOD, WRONG)))
    outcome = processes.run(GOOD)
    assert (outcome.status, outcome.cuda_fault, fake.processes[0].stopped) == ("pass", False, 1)  # verdict kept


@pytest.mark.parametrize(
    ("first", "baseline", "reruns", "outcomes"),
    [
        ("pass", "error", 1, ["pass", "pass"]),  # unlike its baseline: re-run
        ("error", "pass", 2, ["error", "error", "error"]),
        ("pass", "pass", 2, None),  # as the baseline
        ("skip", "pass", 2, None),  # a skip is never suspect
        ("crash", None, 2, None),  # a crash is its own verdict: re-run only when the baseline differs
        ("wrong", None, 0, None),  # [run] reruns = 0: never
    ],
)
def test_which_cells_are_rerun(
    fake: FakeCells, tmp_path: Path, first: str, baseline: str | None, reruns: int, outcomes: list | None
):
    fake.statuses[GOOD.id] = [first]
    expected = {GOOD.id: baseline} if baseline else {}
    outcome = CellProcesses(fake_config(tmp_path, (GOOD,), reruns=reruns, baseline=expected)).run(GOOD)
    assert (outcome.status, outcome.outcomes) == (first, outcomes)
    assert len(fake.runs) == len(outcomes or [first])


def test_a_crashed_cell_is_recorded_as_crash(fake: FakeCells, tmp_path: Path):
    fake.statuses[GOOD.id] = ["crash"]
    record = Record.of(GOOD, CellProcesses(fake_config(tmp_path, (GOOD,))).run(GOOD), "k")
    assert (record.status, record.error_type, record.key) == ("crash", "SIGSEGV", "k")


def test_each_worker_gets_one_gpu_round_robin(fake: FakeCells, tmp_path: Path):
    assert [assigned_gpu(f"gw{n}", ("4", "6", "7")) for n in range(5)] == ["4", "6", "7", "4", "6"]
    assert assigned_gpu("main", ("4", "6")) == "4" and assigned_gpu("gwx", ("4", "6")) == "4"
    assert assigned_gpu("gw3", ()) is None  # fewer than two GPUs: no restriction
    fake.statuses[WRONG.id] = ["wrong"]
    CellProcesses(fake_config(tmp_path, (WRONG,), reruns=2, gpus=("4", "6"), workerid="gw3")).run(WRONG)
    assert [p.gpu for p in fake.processes] == ["6", "6"]  # the re-run's fresh process too


def run_fake_matrix(tmp_path: Path, *args: str) -> tuple[int, dict]:
    """``python -m harness run`` in this process over cases good and wrong, with fake cell processes."""
    matrix = tmp_path / "m.toml"
    if not matrix.exists():
        cases = ["tests.fixtures.good", "tests.fixtures.wrong"]
        text = matrix_text(cases, ["triton_op", "control"], {"cpu_fallback": ("cpu", 60)})
        matrix.write_text(text + "[run]\nreruns = 2\n")
    out = tmp_path / "out"
    code = main(
        ["run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "0", "-q", "-p", "no:cacheprovider", *args]
    )
    results = out / "results.json"
    return code, json.loads(results.read_text()) if results.exists() else {}


def test_a_run_records_every_verdict_without_a_process(fake: FakeCells, tmp_path: Path):
    fake.statuses.update({"good-triton_op-cpu_fallback": ["crash"], "wrong-triton_op-cpu_fallback": ["wrong", "pass"]})
    code, data = run_fake_matrix(tmp_path)
    assert code == 0 and data["environment"]["complete"] is True
    cells = {cell["id"]: cell for cell in data["cells"]}
    assert {cell: (record["status"], record.get("outcomes")) for cell, record in cells.items()} == {
        "good-triton_op-cpu_fallback": ("crash", None),
        "good-control-cpu_fallback": ("pass", None),
        "wrong-triton_op-cpu_fallback": ("wrong", ["wrong", "pass", "pass"]),
        "wrong-control-cpu_fallback": ("pass", None),
    }
    assert len(fake.runs) == 6 and not (tmp_path / "out" / "logs" / "zygote.log").exists()
    keys = cell_keys(load_matrix(tmp_path / "m.toml"), versions(), "cpu")
    assert {cell: record["key"] for cell, record in cells.items()} == keys  # what --reuse compares
    assert {record["measurements"]["worker"] for record in cells.values()} == {"main"}
    chart = (tmp_path / "out" / "matrix.md").read_text()
    assert "💥" in chart and "❗WRONG 1/3" in chart


def test_a_lost_worker_is_recorded_as_crash(fake: FakeCells, tmp_path: Path):
    """pytest-xdist's own report of a worker that died mid-cell becomes that cell's record (WorkerLost)."""
    code, data = run_fake_matrix(tmp_path, "-p", "tests.fixtures.lost_worker")
    assert code == 0 and data["environment"]["complete"] is True
    lost = {cell["id"]: cell for cell in data["cells"] if cell["case"] == "good"}
    assert sorted(lost) == ["good-control-cpu_fallback", "good-triton_op-cpu_fallback"]
    for cell, record in lost.items():
        assert (record["status"], record["error_type"]) == ("crash", "WorkerLost")
        assert "worker 'gw1' crashed while running '" in record["error"] and record["error"].endswith(f"::{cell}'")
        assert record["key"] and record["module"] == "tests.fixtures.good"
    assert {run.cell for run in fake.runs} == {"wrong-triton_op-cpu_fallback", "wrong-control-cpu_fallback"}


def test_resume_refuses_another_torch_and_runs_only_the_missing(
    fake: FakeCells, tmp_path: Path, capsys: pytest.CaptureFixture
):
    assert run_fake_matrix(tmp_path, "--styles", "control")[0] == 0
    results = tmp_path / "out" / "results.json"
    data = json.loads(results.read_text())
    results.write_text(json.dumps({**data, "environment": {**data["environment"], "torch": "1.0.0"}}))
    fake.runs.clear()
    capsys.readouterr()
    code, _ = run_fake_matrix(tmp_path, "--resume")
    err = capsys.readouterr().err.strip()
    assert code == 2 and not fake.runs and len(err.splitlines()) == 1
    assert err.endswith(
        f"{results}: environment.torch: a run of torch 1.0.0 cannot be resumed under torch {torch.__version__}"
    )
    results.write_text(json.dumps(data))
    code, resumed = run_fake_matrix(tmp_path, "--resume")
    assert code == 0 and resumed["environment"]["resumed_cells"] == 2
    assert sorted(run.cell for run in fake.runs) == ["good-triton_op-cpu_fallback", "wrong-triton_op-cpu_fallback"]


def test_resume_refuses_records_of_cells_the_selection_does_not_hold(
    fake: FakeCells, tmp_path: Path, capsys: pytest.CaptureFixture
):
    """Issue 36: a hand-edited records.jsonl with a CUDA cell on a CPU host gave 14 records for 13 cells; a run
    resumed with a narrower selection kept the other cells' records too."""
    from tests.conftest import make_record

    assert run_fake_matrix(tmp_path, "--styles", "control")[0] == 0
    log = tmp_path / "out" / "records.jsonl"
    intact = log.read_text()
    cuda_cell = make_record("good", "control", "eager", status="pass", module="tests.fixtures.good")
    for text, args, outside in (
        (intact + json.dumps({"record": cuda_cell}) + "\n", [], "good-control-eager"),
        (intact, ["--styles", "triton_op"], "good-control-cpu_fallback"),
    ):
        log.write_text(text)
        fake.runs.clear()
        capsys.readouterr()
        code, _ = run_fake_matrix(tmp_path, "--resume", *args)
        err = capsys.readouterr().err.strip()
        assert code == 2 and not fake.runs and len(err.splitlines()) == 1, err
        assert f"{tmp_path / 'out' / 'results.json'}: cells: " in err and "cells this run does not select" in err
        assert outside in err
        assert log.read_text() == text  # the folder's records left as they were


def test_a_process_keeping_artifacts_is_set_aside_for_a_re_run_not_stopped(fake: FakeCells, tmp_path: Path):
    """Its kept artifacts are timed in the timing phase (harness/plugin/timing.py); the re-run gets a fresh one."""
    fake.statuses[WRONG.id] = ["wrong", "pass"]
    processes = CellProcesses(fake_config(tmp_path, (WRONG,), reruns=1))
    first = processes._cell_process()
    first.pid = 41  # type: ignore[attr-defined]
    processes.pending["earlier-eager"] = 41
    processes.run(WRONG)
    assert processes.retired == [first] and first.stopped == 0
    assert [run.process for run in fake.runs] == [0, 1]


def test_a_run_inside_a_process_that_goes_on_does_not_end_it_over_a_running_thread(fake: FakeCells, tmp_path: Path):
    """Only pytest as the process's own program leaves without waiting for a thread that is not a daemon (a case
    module's that never ends): a run in a test, an xdist worker or another program returns to it (the full suite's
    workers had been ended with the run's status, 'node down: Not properly terminated')."""
    release = threading.Event()
    waiting = threading.Thread(target=release.wait, name="still-running")
    waiting.start()
    try:
        code, data = run_fake_matrix(tmp_path)
    finally:
        release.set()
        waiting.join()
    assert code == 0 and data["environment"]["complete"] is True
