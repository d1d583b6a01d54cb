"""Issue 26, faults and small things of a run: Ctrl-C and SIGTERM exit 130 and clean up, dead runs' temp folders go,
a failed write stops the run at once keeping every record, ``--co`` is not a failed run, the kept-records line."""

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.__main__ import main
from harness.execution import tempdirs
from harness.records.log import RecordLog
from harness.records.results import SCHEMA
from tests.conftest import GOOD_CELL, REPO, TOLERANCES
from tests.fast.test_run_faults import _owned_by


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_failed_write_stops_the_run_at_once_and_keeps_every_record(workers, tmp_path, capsys, monkeypatch):
    """records.jsonl's third record cannot be written (a full disk): the run stops there, with -n 0 and 2 (the
    records writer is on the controller, this process)."""
    cases = '["tests.fixtures.good", "tests.fixtures.slow", "tests.fixtures.flaky"]'
    matrix = tmp_path / "m.toml"
    styles = '["control", "triton_op"]'
    matrix.write_text(GOOD_CELL.replace('["tests.fixtures.good"]', cases).replace('["control"]', styles))
    matrix.write_text(matrix.read_text() + TOLERANCES)
    out = tmp_path / "out"
    log = out / "records.jsonl"
    written: list[str] = []
    unwritten: list[str] = []
    append = RecordLog.append

    def full_disk(self: RecordLog, record) -> None:
        if len(written) == 2:
            unwritten.append(record.id)
            raise OSError(errno.ENOSPC, "No space left on device")
        append(self, record)
        written.append(record.id)

    monkeypatch.setattr(RecordLog, "append", full_disk)
    sigterm = signal.getsignal(signal.SIGTERM)
    code = main(["run", "--matrix", str(matrix), "--report-dir", str(out), "-n", workers, "-q"])
    assert signal.getsignal(signal.SIGTERM) is sigterm  # the run's SIGTERM handler lasts as long as the run
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert code == 6 and len(err) == 1, err
    assert err[0].startswith(f"error: {log}: (write): No space left on device") and "the run stops" in err[0]
    rescued = json.loads(Path(err[0].rpartition(" are in ")[2]).read_text())
    ran = [cell["id"] for cell in rescued["cells"]]
    # every record so far kept, the one that could not be written too; the run went no further
    assert sorted(ran) == sorted(written + unwritten) and len(unwritten) == 1
    assert rescued["schema"] == SCHEMA and rescued["environment"]["complete"] is False
    assert [json.loads(line)["record"]["id"] for line in log.read_text().splitlines()[1:]] == written  # on disk
    assert not (out / "results.json").exists()  # nothing derived from a run that stopped


@pytest.mark.parametrize(("signals", "workers"), [(1, "0"), (2, "2")])
def test_sigterm_cleans_up_as_ctrl_c_and_exits_130(signals, workers, tmp_path):
    """Once, or twice 0.5 s apart (a supervisor's second try) to a run of xdist workers, each mid-cell: their
    harness-cells-* folders were left (issue 36)."""
    matrix = tmp_path / "m.toml"
    matrix.write_text(
        GOOD_CELL.replace('"tests.fixtures.good"', '"tests.fixtures.slow"')
        .replace('"control"', '"control", "triton_op"')
        + TOLERANCES
    )
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead = tempdirs.make("harness-zygote-")  # a run killed before it could remove its folder
    (dead / tempdirs.OWNER).write_text(f"{gone.pid} 1")
    out = tmp_path / "out"
    run = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", "--matrix", str(matrix), "--report-dir", str(out), "-n", workers],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 300
    while len([name for name in _owned_by(run.pid) if name.startswith("harness-cells")]) < max(1, int(workers)):
        assert run.poll() is None and time.monotonic() < deadline, "the run ended before its first cell"
        time.sleep(0.2)
    time.sleep(1)  # every worker in its cell
    made = _owned_by(run.pid)
    assert not dead.exists()  # the run removed the dead run's folder at its start
    os.kill(run.pid, signal.SIGTERM)  # the controller only, as a CI system's timeout does
    for _ in range(signals - 1):
        time.sleep(0.5)
        os.kill(run.pid, signal.SIGTERM)
    assert run.wait(timeout=120) == 130
    assert _owned_by(run.pid) == []  # its zygote's and its cell process's folders removed
    assert [name for name in made if (Path(tempdirs.tempfile.gettempdir()) / name).exists()] == []  # the workers' too
