"""Issue 61: SIGINT or SIGTERM at any stage of any command exits 130 with nothing left running (harness/interrupt.py):
the command line's handlers, a run interrupted while its session starts, an interrupt torch's import lost, a zygote
interrupted while it starts, the gate's re-run interrupted. Signals sent to the command line's own processes:
tests/process/test_signals.py."""

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness import interrupt
from harness.__main__ import main
from harness.cli import rerun
from harness.cli.rerun import run_to_end
from harness.execution import tempdirs, zygote
from harness.plugin.confirming import Confirmer
from harness.plugin.processes import CellProcesses
from tests.conftest import harness_main, typed
from tests.fakes import FakeCells


@pytest.fixture
def handlers() -> Iterator[None]:
    """This process's SIGINT and SIGTERM handlers, given back after the test."""
    found = {each: signal.getsignal(each) for each in interrupt.SIGNALS}
    yield
    for each, handler in found.items():
        signal.signal(each, handler)


def interrupted(signum: int, caught: Callable[[KeyboardInterrupt], int]) -> Callable[[], int]:
    """A command that sends this process ``signum`` and returns what ``caught`` makes of the interrupt."""

    def command() -> int:
        try:
            os.kill(os.getpid(), signum)
            time.sleep(5)  # the handler runs here
        except KeyboardInterrupt as error:
            return caught(error)
        raise AssertionError("not interrupted")

    return command


def reraise(error: KeyboardInterrupt) -> int:
    raise error


@pytest.mark.parametrize("signum", interrupt.SIGNALS)
def test_either_signal_interrupts_a_command_which_exits_130(signum: int, handlers: None, capsys):
    assert interrupt.run(interrupted(signum, reraise)) == 130
    assert [signal.getsignal(each) for each in interrupt.SIGNALS] == [interrupt.noted] * 2  # then only noted
    os.kill(os.getpid(), signal.SIGTERM)
    assert "harness: SIGTERM: stopping already" in capsys.readouterr().err
    assert interrupt.run(lambda: 3) == 3  # a command no signal interrupted keeps its status


def test_an_interrupt_lost_or_turned_into_another_error_still_exits_130(handlers: None):
    """torch's import of numpy loses an interrupt and goes on; Python 3.11 raises one met while a class is made as a
    RuntimeError; pytest ends a session interrupted before it started with 2, which reads as bad input."""

    def lost(error: KeyboardInterrupt) -> int:
        with pytest.raises(KeyboardInterrupt):
            interrupt.check()  # where the harness looks again: once torch is imported
        return 2

    def turned(error: KeyboardInterrupt) -> int:
        raise RuntimeError("Error calling __set_name__") from error

    assert interrupt.run(interrupted(signal.SIGINT, lost)) == 130
    assert interrupt.run(interrupted(signal.SIGTERM, turned)) == 130
    assert interrupt.run(lambda: interrupt.check() or 4) == 4  # a command no signal interrupted goes on

    def fails() -> int:
        raise RuntimeError("not an interrupt")

    with pytest.raises(RuntimeError, match="not an interrupt"):
        interrupt.run(fails)


def test_a_run_interrupted_while_its_session_starts_exits_130_and_says_nothing(matrix: Path, tmp_path, monkeypatch):
    """Ctrl-C just after the ``matrix:`` line (the session starting: its zygote, xdist's workers) exited 2, with
    pytest's report of where the interrupt landed."""

    def ctrl_c(prefix: str) -> Path:
        raise KeyboardInterrupt

    monkeypatch.setattr(CellProcesses, "make_process", FakeCells())
    monkeypatch.setattr(Confirmer, "submit", lambda self, record, env: None)
    monkeypatch.setattr(tempdirs, "make", ctrl_c)  # the session's first step
    done = harness_main("run", "--matrix", str(matrix), "--report-dir", str(tmp_path / "out"), "-n", "0")
    assert done.returncode == 130
    said = [line for line in done.stderr.splitlines() if not line.startswith("harness: checking case ")]  # a slow check
    assert said == [f"matrix: {matrix} (--matrix)"] and "KeyboardInterrupt" not in done.stdout


def test_an_interrupt_torch_lost_as_it_imported_stops_the_run_before_its_first_cell(
    matrix: Path, tmp_path: Path, monkeypatch, handlers: None
):
    """torch imports numpy catching every exception: an interrupt then is lost, and the run went on to its end."""
    cells = FakeCells()
    monkeypatch.setattr(CellProcesses, "make_process", cells)

    def lost(error: KeyboardInterrupt) -> int:
        return main(["run", "--matrix", str(matrix), "--report-dir", str(tmp_path / "out"), "-n", "0"])

    assert interrupt.run(interrupted(signal.SIGINT, lost)) == 130
    assert cells.runs == []


class StartingZygote:
    """A zygote process that has not printed its first line yet."""

    def __init__(self, argv: list[str], **kwargs: object) -> None:
        self.address = argv[3]
        self.stdout = open(os.devnull)
        self.killed = self.waited = False
        started.append(self)

    def kill(self) -> None:
        self.killed = True

    def wait(self) -> int:
        self.waited = True
        return -9


started: list[StartingZygote] = []


def test_a_zygote_interrupted_while_it_starts_is_stopped_and_its_folder_removed(tmp_path: Path, monkeypatch):
    """It was left running (and serving, where it had not yet asked to die with its starter) and its temp folder
    was left."""

    def ctrl_c(fd: int, deadline: float) -> Iterator[str]:
        raise KeyboardInterrupt
        yield ""

    monkeypatch.setattr(zygote.subprocess, "Popen", StartingZygote)
    monkeypatch.setattr(zygote, "read_lines", ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        zygote.start({}, tmp_path / "zygote.log", until="imported")
    process = started.pop()
    assert (process.killed, process.waited) == (True, True)
    assert not Path(process.address).parent.exists()


def test_an_interrupted_re_run_is_stopped_with_what_it_started(tmp_path: Path, handlers: None):
    """The gate's re-run of a cell (``python -m harness run``), here a shell that leaves a child behind when it
    ends on SIGTERM: the gate, interrupted while it waits, stops it and its process group. Its re-run was killed
    alone, and its zygote and cell processes were left; under SIGTERM the gate died at once, leaving all of it."""
    pids = tmp_path / "pids"
    script = f"sleep 60 & echo $! > {pids}; trap 'exit 0' TERM; while :; do sleep 0.1; done"

    def sigterm_once_started() -> None:
        while not pids.exists() or not pids.read_text().strip():
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGTERM)

    interrupt.install()
    threading.Thread(target=sigterm_once_started, daemon=True).start()
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_to_end(["sh", "-c", script])
    left = int(pids.read_text())
    deadline = time.monotonic() + 5
    while zygote._alive(left) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not zygote._alive(left)
    assert time.monotonic() - start < 10


def test_an_interrupt_torch_lost_as_it_imported_starts_no_re_run(handlers: None):
    """The gate imports torch for this machine's stamp before it re-runs a cell: an interrupt that import lost
    started the re-run, which then ran to its end."""

    def lost(error: KeyboardInterrupt) -> int:
        with pytest.raises(KeyboardInterrupt):
            rerun._run_cells(["good-control-cpu_fallback"], typed({"cells": []}), "m.toml")
        return 1

    assert interrupt.run(interrupted(signal.SIGTERM, lost)) == 130


@pytest.mark.parametrize("signum", interrupt.SIGNALS)
def test_an_interrupt_python_drops_is_delivered_again_where_it_lands(
    signum: int, handlers: None, capsys, monkeypatch: pytest.MonkeyPatch
):
    """A signal handled while a weakref callback runs (importlib's module locks run one while modules import)
    raised ``KeyboardInterrupt`` there, which Python dropped with "Exception ignored in ..." and went on: a
    command finished its work and printed it, and a plain pytest run slept out a slow case import (both red in a
    clean clone's tests session). Now SIGINT comes again a moment later, where it lands."""
    monkeypatch.setattr("sys.unraisablehook", __import__("sys").unraisablehook)  # given back after the test

    class Dropping:
        def __del__(self) -> None:  # where Python cannot raise: it reports the exception as unraisable
            os.kill(os.getpid(), signum)
            time.sleep(0.5)  # the handler runs here, in __del__

    def command() -> int:
        Dropping()  # made and dropped at once: its __del__ runs, and the interrupt raised there is lost
        time.sleep(5)  # where the interrupt delivered again lands
        raise AssertionError("not interrupted")

    started = time.monotonic()
    assert interrupt.run(command) == 130 and time.monotonic() - started < 4
    assert "Exception ignored" not in capsys.readouterr().err
