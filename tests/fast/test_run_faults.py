"""Issue 26, faults and small things of a run: Ctrl-C and SIGTERM exit 130 and clean up, dead runs' temp folders go,
a failed write stops the run at once keeping every record, ``--co`` is not a failed run, the kept-records line."""

import errno
import os
import signal
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.__main__ import main
from harness.execution import tempdirs
from harness.plugin.session import exit_status
from harness.plugin.writer import kept_line
from harness.records.log import RecordLog


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


def fake_config() -> SimpleNamespace:
    """The little of a pytest config ``MatrixSession`` reads, in a session that registered no other plugin."""
    plugins = SimpleNamespace(get_plugin=lambda name: None)
    return SimpleNamespace(option=SimpleNamespace(collectonly=False), pluginmanager=plugins, stash=pytest.Stash())


def test_a_second_sigterm_does_not_cut_the_clean_up_short(capsys):
    """Issue 36: the first SIGTERM interrupts the run as Ctrl-C; one more, while it cleans up, is only noted."""
    from harness.plugin.session import MatrixSession

    session = MatrixSession(fake_config(), lambda: None)
    try:
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler runs here
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.1)
    finally:
        session.pytest_unconfigure(session.config)
    assert "harness: SIGTERM: stopping already, cleaning up" in capsys.readouterr().err


def test_an_interrupted_run_keeps_noting_sigterm_until_its_process_ends():
    """Issue 44: a second SIGTERM after pytest's last line ended the process with the signal, not 130 (the run's
    handler was already given back); tests/process/test_interrupted.py sends it."""
    from harness.interrupt import noted
    from harness.plugin.session import MatrixSession

    found = signal.getsignal(signal.SIGTERM)
    session = MatrixSession(fake_config(), lambda: None)
    try:
        with pytest.raises(KeyboardInterrupt) as interrupt:
            raise KeyboardInterrupt
        session.pytest_keyboard_interrupt(interrupt)
        session.pytest_unconfigure(session.config)
        assert signal.getsignal(signal.SIGTERM) is noted
    finally:
        signal.signal(signal.SIGTERM, found)
    finished = MatrixSession(fake_config(), lambda: None)
    finished.pytest_unconfigure(finished.config)
    assert signal.getsignal(signal.SIGTERM) is found  # a run that was not interrupted gives it back


def test_a_run_stopped_by_maxfail_under_xdist_is_a_failed_run_not_a_signal():
    """-x (--maxfail) under xdist: its controller stops by raising ``Interrupted("stopping after 1 failures")``, a
    KeyboardInterrupt; the run exits 1 as it does without xdist, not 130 (a signal)."""
    from xdist.dsession import Interrupted

    from harness.plugin.session import MatrixSession

    found = signal.getsignal(signal.SIGTERM)
    try:
        session = MatrixSession(fake_config(), lambda: None)
        with pytest.raises(KeyboardInterrupt) as stop:
            raise Interrupted("stopping after 1 failures")
        session.pytest_keyboard_interrupt(stop)
        assert session.stopped and not session.interrupted
        signalled = MatrixSession(fake_config(), lambda: None)
        with pytest.raises(KeyboardInterrupt) as interrupt:
            raise Interrupted("KeyboardInterrupt")
        signalled.pytest_keyboard_interrupt(interrupt)
        assert signalled.interrupted and not signalled.stopped
    finally:
        signal.signal(signal.SIGTERM, found)
