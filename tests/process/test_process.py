"""The cell process: a crash or a hang costs only its own cell, and the next cell gets a fresh process."""

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from harness.execution import zygote
from harness.execution.cellprocess import CellProcess
from tests.conftest import cell_spec, run_harness
from tests.fast.test_process import GOOD


def test_crash_and_hang_are_recorded_and_the_next_cell_still_runs(tmp_path: Path):
    process = CellProcess(tmp_path / "logs" / "main.log", {}, None)
    try:
        assert process.run(GOOD).status == "pass"
        first_pid = process.pid

        crash = process.run(cell_spec("tests.fixtures.crash", "triton_op"))
        assert (crash.status, crash.error_type) == ("crash", "SIGSEGV")
        assert "cell process died of SIGSEGV" in crash.error
        assert "Fatal Python error: Segmentation fault" in crash.error  # faulthandler's stack, from the log

        assert process.run(GOOD).status == "pass"
        assert process.pid != first_pid

        hang = process.run(cell_spec("tests.fixtures.hang", "triton_op", timeout=3))
        assert (hang.status, hang.error_type) == ("timeout", "Timeout")
        assert "no result after 3 s" in hang.error and 3 <= hang.seconds < 30
        assert process.pid is None  # the hung process was killed

        assert process.run(GOOD).status == "pass"
    finally:
        process.close()


def test_a_process_above_the_memory_bound_is_replaced(tmp_path: Path):
    process = CellProcess(tmp_path / "logs" / "main.log", {}, None, max_rss_mb=1)
    try:
        first = process.run(GOOD)
        assert first.status == "pass" and first.measurements.replaced_above_rss_mb == 1
        assert process.pid is None  # replaced: the next cell starts a new one
        second = process.run(GOOD)
        assert second.status == "pass" and second.measurements.pid != first.measurements.pid
    finally:
        process.close()


def test_run_forks_standalone_loads_from_a_torch_only_server(write_matrix, tmp_path: Path):
    """Through `harness run` (the zygote's standalone server): a pure-PyTorch package loads and runs in the fresh
    child; a package calling an op only the cell process registered (custom_op) does not. aoti_strict and
    aoti_standalone of a case and style share one package, and the verdicts stay those of separate builds."""
    paths = {"aoti_standalone": ("cpu", 300), "aoti_strict": ("cpu", 300)}
    matrix = write_matrix(["sin"], ["control", "custom_op"], paths)
    out = tmp_path / "out"
    done = run_harness("run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "2", "-q", timeout=600)
    results = json.loads((out / "results.json").read_text())
    records = {(cell["style"], cell["path"]): cell for cell in results["cells"]}
    assert done.returncode == 0, done.stderr[-2000:]
    marks = results["environment"]["start_marks"]  # the run's start, step by step, before its first cell
    first = min(cell["measurements"]["started"] for cell in results["cells"])
    assert marks["command"] < marks["session"] < marks["first_collected"] <= marks["last_collected"] < first, marks
    ended = min(cell["measurements"]["ended"] for cell in results["cells"])  # a first cell waits for the zygote
    assert marks["command"] < marks["zygote_serving"] < ended, marks
    for path in paths:
        assert records["control", path]["status"] == "pass", records["control", path]["error"]
    assert records["custom_op", "aoti_strict"]["status"] == "pass"  # the op is registered in this process
    assert "Could not find schema for mylib::sin" in records["custom_op", "aoti_standalone"]["error"]
    for style in ("control", "custom_op"):  # custom_op's package calls the op, which both processes registered alike
        built_by = [records[style, path]["measurements"].get("package_built_by") for path in paths]
        assert set(built_by) in ({f"sin-{style}-aoti_standalone", None}, {f"sin-{style}-aoti_strict", None})
    zygote_log = (out / "logs" / "zygote.log").read_text()  # the zygote started early: its log kept once it stops
    assert " ready: " in zygote_log and "no longer fits" not in zygote_log  # the one started early, kept
    assert "--- cell" not in zygote_log  # the cells ran in forks, not the zygote


def test_a_worker_whose_zygote_is_gone_starts_its_own(tmp_path: Path):
    log = tmp_path / "logs" / "main.log"
    process = CellProcess(log, {}, None, zygote_address=str(tmp_path / "gone" / "socket"))
    try:
        assert process.run(GOOD).status == "pass"
        assert process.own_zygote is not None and "no zygote at" in log.read_text()
        assert "ready: import torch" in log.read_text()  # the zygote's own start, timed, in the log
    finally:
        process.close()


def test_connect_waits_for_a_starting_zygote_not_for_a_dead_one(tmp_path: Path):
    dead = subprocess.Popen(["true"])
    time.sleep(0.5)  # exited, not reaped: a zombie
    start = time.monotonic()
    with pytest.raises(FileNotFoundError):
        zygote.connect(str(tmp_path / "none" / "socket"), {}, starting_pid=dead.pid)
    assert time.monotonic() - start < 5
    dead.wait()

    process, address = zygote.start({}, tmp_path / "zygote.log", until="imported")
    try:
        request = {"workdir": "-", "log_file": str(tmp_path / "cell.log")}
        conn = zygote.connect(address, request, starting_pid=process.pid)
        assert isinstance(conn.recv(), int)  # the forked cell process's pid: the zygote served once it could
        conn.close()
    finally:
        process.kill()
        process.wait()


def test_xdist_workers_import_no_torch(write_matrix, tmp_path: Path):
    """A matrix run's xdist workers get the controller's plan and never import torch, Triton or a case module
    (their imports beside the zygote's made a run's start 20-45 s long); their cells still run and record."""
    probe = tmp_path / "workerprobe.py"
    probe.write_text(
        "import os, sys\n"
        "def pytest_sessionfinish(session):\n"
        "    worker = getattr(session.config, 'workerinput', {}).get('workerid')\n"
        "    if worker:\n"
        "        heavy = sorted(m for m in ('torch', 'triton', 'cases.sin') if m in sys.modules)\n"
        "        with open(os.environ['WORKER_PROBE_OUT'], 'a') as out:\n"
        "            out.write(f'{worker} {heavy}\\n')\n"
    )
    matrix = write_matrix(["sin"], ["control", "raw_jit"], {"cpu_fallback": ("cpu", 120)})
    out, seen = tmp_path / "out", tmp_path / "seen.txt"
    env = {"PYTHONPATH": f"{tmp_path}:{os.environ.get('PYTHONPATH', '')}", "WORKER_PROBE_OUT": str(seen)}
    done = run_harness(
        "run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "2", "-p", "workerprobe", "-q", env=env
    )
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert sorted(seen.read_text().split("\n")[:-1]) == ["gw0 []", "gw1 []"]
    records = json.loads((out / "results.json").read_text())["cells"]
    assert {cell["id"]: cell["status"] for cell in records}["sin-control-cpu_fallback"] == "pass"
    assert {cell["measurements"].get("worker") for cell in records} <= {"gw0", "gw1"}


def _holders(log: Path) -> list[str]:
    """The processes writing to ``log`` (a cell process's stdout and stderr are its log)."""
    holders = []
    for fd in Path("/proc").glob("[0-9]*/fd/1"):
        try:
            if Path(os.readlink(fd)) == log.resolve():
                holders.append(fd.parent.parent.name)
        except OSError:
            pass
    return holders


def _until(condition, seconds: float = 120) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_after_its_first_replacement_a_worker_starts_the_next_child_ahead(tmp_path: Path):
    logs = tmp_path / "logs"
    process = CellProcess(logs / "main.log", {}, None)
    crash = cell_spec("tests.fixtures.crash", "triton_op")
    try:
        assert process.run(GOOD).status == "pass" and process.spare is None  # never replaced: nothing ahead
        assert process.run(crash).status == "crash"
        replaced = process.run(GOOD)  # the first replacement is waited for, then a spare starts behind it
        assert replaced.status == "pass" and replaced.measurements.process_start > 0
        assert process.spare is not None and _until(lambda: _holders(logs / "main.spare1.log"))
        assert process.run(crash).status == "crash"
        adopted = process.run(GOOD)  # the spare: already started
        assert adopted.status == "pass" and adopted.measurements.pid == int(_holders(logs / "main.spare1.log")[0])
        assert f"--- cell {GOOD.id}" in (logs / "main.spare1.log").read_text()
        assert _until(lambda: _holders(logs / "main.spare2.log"))  # and the next one behind it
    finally:
        process.close()
    assert _until(lambda: not _holders(logs / "main.spare2.log"), 10)  # closing ends the spare too


def test_a_child_begun_and_never_used_ends_with_its_process(tmp_path: Path):
    log = tmp_path / "logs" / "main.attempt2.log"
    process = CellProcess(log, {}, None)
    process.begin()
    assert _until(lambda: _holders(log))
    process.close()
    assert _until(lambda: not _holders(log), 10)
