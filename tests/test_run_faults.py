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
from types import SimpleNamespace

import pytest

from harness.__main__ import main
from harness.execution import tempdirs
from harness.plugin.session import exit_status
from harness.plugin.writer import kept_line
from harness.records.log import RecordLog
from tests.conftest import REPO, TOLERANCES

HEAD = 'cases = ["tests.fixtures.good"]\nstyles = ["control"]\n'
HEAD += '[paths]\ncpu_fallback = { device = "cpu", timeout = 60 }\n'


@pytest.fixture
def matrix(tmp_path: Path) -> Path:
    file = tmp_path / "m.toml"
    file.write_text(HEAD + TOLERANCES)
    return file


def test_ctrl_c_exits_130(matrix, tmp_path, monkeypatch):
    def interrupted(args, plugins=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(pytest, "main", interrupted)
    assert main(["run", "--matrix", str(matrix), "--report-dir", str(tmp_path / "out")]) == 130
    # inside the session: pytest's INTERRUPTED (2, the code of bad input too) becomes 130, whatever was recorded
    assert exit_status(pytest.ExitCode.INTERRUPTED, None, tmp_path, None, interrupted=True) == (130, "")


def test_collect_only_is_not_a_failed_run(matrix, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "0", "--co", "-q"]) == 0
    assert "good-control-cpu_fallback" in capsys.readouterr().out
    assert not (out / "results.json").exists()


@pytest.mark.parametrize(("reused", "resumed", "line"), [(0, 3, "3 record(s) of the resumed run (--resume)")])
def test_the_kept_line_names_only_what_was_kept(reused, resumed, line):
    assert kept_line(reused, resumed, None) == f"[harness] not run, kept: {line}"
    assert kept_line(0, 0, None) is None


def unused_pid() -> int:
    """A pid no process has now (the highest free one): a run that ended, without starting a process."""
    pid = int(Path("/proc/sys/kernel/pid_max").read_text()) - 1
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:  # another user's process
            pass
        pid -= 1


def test_dead_runs_temp_folders_are_removed_and_live_ones_kept(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    live = tempdirs.make("harness-zygote-")
    dead = tempdirs.make("harness-cells-")
    (dead / tempdirs.OWNER).write_text(f"{unused_pid()} 1")
    reused_pid = tempdirs.make("harness-zygote-")  # a live pid, but not the process that made the folder
    (reused_pid / tempdirs.OWNER).write_text(f"{os.getpid()} 1")
    unowned = tmp_path / "harness-zygote-old"
    unowned.mkdir()
    assert tempdirs.remove_dead() == sorted([dead, reused_pid])
    assert live.exists() and unowned.exists() and not dead.exists() and not reused_pid.exists()


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_failed_write_stops_the_run_at_once_and_keeps_every_record(workers, tmp_path, capsys, monkeypatch):
    """records.jsonl's third record cannot be written (a full disk): the run stops there, with -n 0 and 2 (the
    records writer is on the controller, this process)."""
    cases = '["tests.fixtures.good", "tests.fixtures.slow", "tests.fixtures.flaky"]'
    matrix = tmp_path / "m.toml"
    matrix.write_text(HEAD.replace('["tests.fixtures.good"]', cases).replace('["control"]', '["control", "triton_op"]'))
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
    assert rescued["schema"] == 2 and rescued["environment"]["complete"] is False
    assert [json.loads(line)["record"]["id"] for line in log.read_text().splitlines()[1:]] == written  # on disk
    assert not (out / "results.json").exists()  # nothing derived from a run that stopped


@pytest.mark.process
def test_a_failed_write_after_the_last_record_exits_6_with_every_record(matrix, tmp_path, capsys):
    """results.json cannot be derived at the end (a non-empty folder in its place): exit 6, one line, the
    records kept in records.jsonl and in the file the line names."""
    out = tmp_path / "out"
    (out / "results.json" / "blocker").mkdir(parents=True)  # os.replace cannot put a file over a non-empty folder
    code = main(["run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "0", "-q"])
    captured = capsys.readouterr()
    err = [line for line in captured.err.splitlines() if line.startswith("error:")]
    assert code == 6 and len(err) == 1, err
    assert err[0].startswith(f"error: {out / 'results.json'}: (write): ") and "the run stops" in err[0]
    rescued = json.loads(Path(err[0].rpartition(" are in ")[2]).read_text())
    assert [cell["id"] for cell in rescued["cells"]] == ["good-control-cpu_fallback"]
    assert '"good-control-cpu_fallback"' in (out / "records.jsonl").read_text()
    assert (captured.out + captured.err).count(err[0].removeprefix("error: ")) == 1  # said once (issue 36)


@pytest.mark.parametrize("when", ["mid-run", "at the end"])
def test_a_failed_write_is_said_once(when, matrix, tmp_path, capsys, monkeypatch):
    """Issue 36: the line of a failed records write was printed twice (pytest's stop banner, or the summary, and
    the command line's ``error:``); once now, on stderr, whether the write fails mid-run or at the end."""
    from harness.plugin.processes import CellProcesses
    from harness.records import files as results
    from tests.fakes import FakeCells

    def full_disk(*args, **kwargs) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(CellProcesses, "make_process", FakeCells())
    if when == "mid-run":
        monkeypatch.setattr(RecordLog, "append", full_disk)
    else:
        monkeypatch.setattr("harness.plugin.writer.write_results", full_disk)
    out = tmp_path / "out"
    code = main(["run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "0", "-q", "-p", "no:cacheprovider"])
    captured = capsys.readouterr()
    err = [line for line in captured.err.splitlines() if line.startswith("error:")]
    assert code == 6 and len(err) == 1, captured
    file = out / ("records.jsonl" if when == "mid-run" else "results.json")
    assert err[0].startswith(f"error: {file}: (write): No space left on device: the run stops")
    assert (captured.out + captured.err).count(err[0].removeprefix("error: ")) == 1, captured
    assert "-> " not in captured.out  # not the summary's line of a run that wrote its results
    rescued = Path(err[0].rpartition(" are in ")[2])
    assert results.read_results(rescued).cells[0].id == "good-control-cpu_fallback"
    rescued.unlink()


@pytest.mark.process
@pytest.mark.slow
@pytest.mark.parametrize(("signals", "workers"), [(1, "0"), (2, "2")])
def test_sigterm_cleans_up_as_ctrl_c_and_exits_130(signals, workers, tmp_path):
    """Once, or twice 0.5 s apart (a supervisor's second try) to a run of xdist workers, each mid-cell: their
    harness-cells-* folders were left (issue 36)."""
    matrix = tmp_path / "m.toml"
    matrix.write_text(
        HEAD.replace('"tests.fixtures.good"', '"tests.fixtures.slow"').replace('"control"', '"control", "triton_op"')
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


def _owned_by(pid: int) -> list[str]:
    """The names of the harness temp folders that process ``pid`` or one of its children (xdist workers) made."""
    children = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout.split()
    found = []
    for folder in Path(tempdirs.tempfile.gettempdir()).glob("harness-*"):
        try:
            if (folder / tempdirs.OWNER).read_text().partition(" ")[0] in (str(pid), *children):
                found.append(folder.name)
        except OSError:
            continue
    return found


@pytest.mark.process
@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--max-rss-mb", "-5"], "--max-rss-mb: expected a number of MiB >= 0"),
        ([], "--report-dir: another run (pid 4242) writes there"),
        (["--cache-dir", "{matrix}"], "--cache-dir: a file, not a folder"),
    ],
)
def test_pytest_itself_refuses_a_locked_report_dir_and_a_negative_max_rss(args, words, matrix, tmp_path):
    import fcntl

    out = tmp_path / "out"
    out.mkdir()
    with open(out / ".lock", "w") as other_run:
        other_run.write("4242\n")
        other_run.flush()
        fcntl.flock(other_run, fcntl.LOCK_EX)
        command = [sys.executable, "-m", "pytest", "-p", "harness.plugin", "-p", "no:benchmark", str(matrix)]
        done = subprocess.run(
            [
                *command,
                "--matrix",
                str(matrix),
                "--report-dir",
                str(out),
                "-n",
                "0",
                *(a.format(matrix=matrix) for a in args),
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode in (2, 4) and words in done.stderr, done.stderr[-2000:]
    assert not (out / "results.json").exists()


def test_a_second_sigterm_does_not_cut_the_clean_up_short(capsys):
    """Issue 36: the first SIGTERM interrupts the run as Ctrl-C; one more, while it cleans up, is only noted."""
    from harness.plugin.session import MatrixSession

    session = MatrixSession(SimpleNamespace(option=SimpleNamespace(collectonly=False)), lambda: None)
    try:
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler runs here
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.1)
    finally:
        session.pytest_unconfigure(session.config)
    assert "the run is stopping already, cleaning up" in capsys.readouterr().err
