"""A run killed mid-way keeps every finished record; report draws it as incomplete; --resume finishes it."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, harness_main, run_harness
from tests.fast.test_interrupted import read_results


def test_sigkill_keeps_records_and_resume_runs_only_the_missing(write_matrix, tmp_path: Path):
    cases = ["tests.fixtures.good", "tests.fixtures.slow"]
    matrix = write_matrix(cases, ["triton_op", "control"], {"cpu_fallback": ("cpu", 120)})
    out = tmp_path / "reports"
    results = out / "results.json"
    run = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "0", "-q"],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 300
    while not ((out / "records.jsonl").exists() and len(read_results(results)["cells"]) >= 2):
        assert run.poll() is None and time.monotonic() < deadline, "the run ended before it could be killed"
        time.sleep(0.2)
    os.killpg(run.pid, signal.SIGKILL)  # the whole run: controller and cell process
    run.wait()

    kept = read_results(results)
    good, slow = "good", "slow"
    assert [c["id"] for c in kept["cells"]] == [f"{good}-triton_op-cpu_fallback", f"{good}-control-cpu_fallback"]
    assert kept["environment"]["complete"] is False

    assert harness_main("report", "--results", str(results)).returncode == 0
    chart = (out / "matrix.md").read_text()
    missing = f"Missing: {slow}-triton_op-cpu_fallback, {slow}-control-cpu_fallback"
    assert f"**Incomplete run**: 2 of 4 cells recorded. {missing}" in chart

    resumed = run_harness("run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "0", "-q", "--resume")
    assert resumed.returncode == 0, resumed.stdout[-2000:]
    assert "2 passed, 2 deselected" in resumed.stdout
    final = read_results(results)
    assert [c["id"] for c in final["cells"]] == [
        f"{case}-{style}-cpu_fallback" for case in (good, slow) for style in ("triton_op", "control")
    ]
    assert final["cells"][:2] == kept["cells"]  # kept as they were, not run again
    assert final["environment"]["complete"] is True and final["environment"]["resumed_cells"] == 2
    assert "Incomplete" not in (out / "matrix.md").read_text()


def test_shards_merge_into_the_whole_run(write_matrix, tmp_path: Path):
    matrix = write_matrix(
        ["tests.fixtures.good", "tests.fixtures.wrong"], ["triton_op", "control"], {"cpu_fallback": ("cpu", 120)}
    )
    whole, shards = tmp_path / "whole", [tmp_path / "s1", tmp_path / "s2"]
    assert run_harness("run", "--matrix", str(matrix), "--report-dir", str(whole), "-n", "0").returncode == 0
    for index, out in enumerate(shards, start=1):
        done = run_harness("run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "0", "--shard", f"{index}/2")
        assert done.returncode == 0, done.stdout[-2000:]
        assert len(read_results(out / "results.json")["cells"]) == 2
    merged = tmp_path / "merged" / "results.json"
    done = harness_main("merge", *(str(out / "results.json") for out in shards), "--out", str(merged))
    assert done.returncode == 0, done.stderr
    expected = read_results(whole / "results.json")
    result = read_results(merged)
    assert [(c["id"], c["status"]) for c in result["cells"]] == [(c["id"], c["status"]) for c in expected["cells"]]
    assert result["environment"]["complete"] is True and result["environment"]["shards"] == 2
    chart = (merged.parent / "matrix.md").read_text()
    assert "❗WRONG 5/5 [1]" in chart and "Incomplete" not in chart  # re-run 4 times: wrong every time

    shard = str(shards[0] / "results.json")
    again = harness_main("merge", shard, shard, "--out", str(merged))
    assert again.returncode == 2 and f"environment.shard: share 1/2 is {shard} too" in again.stderr  # one share twice
    assert harness_main("run", "--matrix", str(matrix), "--shard", "3/2").returncode == 2


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_during_confirmation_stops_the_run_at_once_keeping_every_record(stop, write_matrix, tmp_path: Path):
    """Issue 41: a SIGTERM while the repro scripts ran took 127 s to stop the run, and the scripts it killed were
    charted as suspects. Here the cell errs at once (``-p tests.fixtures.erring_cells``) and its script hangs (up to
    its path's 300 s): SIGTERM or Ctrl-C stops the run within 10 s (1.4 s measured; 41 s, its path's timeout of 40
    s, before, and no results.json), exit 130, the record kept and "not confirmed", no suspect, no script left.
    Issue 44: another SIGTERM after pytest's last line (``-p tests.fixtures.slow_exit``) leaves the exit at 130."""
    matrix = write_matrix(["tests.fixtures.hang"], ["triton_op"], {"cpu_fallback": ("cpu", 300)})
    out = tmp_path / "reports"
    command = ["run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "0", "-p", "tests.fixtures.erring_cells"]
    command += ["-p", "tests.fixtures.slow_exit"]
    run = subprocess.Popen(
        [sys.executable, "-m", "harness", *command],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
    )
    try:
        deadline = time.monotonic() + 120
        servers: set[str] = set()
        while not scripts_running(out, run.pid, servers):
            assert run.poll() is None and time.monotonic() < deadline, "the run ended before its script started"
            time.sleep(0.2)
        time.sleep(1)  # the script's Python starts
        start = time.monotonic()
        run.send_signal(stop)
        printed = "".join(iter(run.stdout.readline, "slow_exit: exiting\n"))  # type: ignore[union-attr]
        took = time.monotonic() - start
        run.send_signal(signal.SIGTERM)
        run.wait(timeout=60)
    finally:
        run.kill()
        for pid in scripts_running(out, run.pid, servers):
            os.kill(pid, signal.SIGKILL)
    assert (run.returncode, took < 10) == (130, True), (took, printed[-3000:])
    cell = read_results(out / "results.json")["cells"][0]
    assert (cell["id"], cell["status"]) == ("hang-triton_op-cpu_fallback", "error")
    assert cell["confirmation"]["reproduced"] is None
    assert cell["confirmation"]["line"] == "not confirmed: the run was stopped before the script ended"
    assert "HARNESS SUSPECTS" not in printed and "not confirmed" in printed
    assert scripts_running(out, run.pid, servers) == []


def scripts_running(out: Path, run_pid: int, servers: set[str]) -> list[int]:
    """The processes running a repro script of the run ``run_pid`` writing into ``out``: a fresh Python given the
    script, or a child of the run's scripts' fork server (a session leader forked from the server, whose socket is
    named in its command line; ``servers`` keeps those seen while the run lived)."""
    ps = subprocess.run(["ps", "-ww", "-eo", "pid=,ppid=,sid=,args="], capture_output=True, text=True).stdout
    rows = {int(line.split()[0]): line.split(None, 3) for line in ps.splitlines() if len(line.split(None, 3)) == 4}
    started = {pid for pid, (_, ppid, _, args) in rows.items() if int(ppid) == run_pid and "harness-scripts-" in args}
    servers.update(re.findall(r"\S*harness-scripts-\w+/socket", " ".join(rows[pid][3] for pid in started)))
    return [
        pid
        for pid, (_, _, sid, args) in rows.items()
        if f"{out / '.confirming'}/" in args
        or (int(sid) == pid and pid not in started and any(server in args for server in servers))
    ]
