"""A session of the matrix, the same under plain ``pytest`` and ``python -m harness run``: what it collects, its
inputs checked before it starts, its report folder locked, SIGTERM taken as Ctrl-C (harness/interrupt.py), and its
exit status:

====  ==========================================================================================================
0     every selected cell got a record (a failing cell is a measurement, not a failure of the run: ``gate`` it);
      or ``--collect-only``
1     the run did not record every selected cell
2     unusable input, before any cell runs: one line naming the file (or ``command line``) and the key; also a
      selection of no cell
6     the harness failed to measure (harness/report/broken.py), or a write into --report-dir failed (the run
      stops at once; the line says where every record so far was saved)
7     a harness suspect: a failure its repro script, run outside the harness, did not show
8     ``--fail-on STATUSES``: a cell ended with one of them on some attempt (``--fail-on wrong``: wrong numbers)
130   interrupted: Ctrl-C, SIGTERM, or pytest stopping the session early
3, 4  pytest's own: an internal error, a usage error of one of pytest's options
====  ==========================================================================================================

A session runs the matrix when an argument names the matrix file or a cell of it, when pytest collects the folder
of a ./matrix.toml for want of arguments, or when it is given no file argument and a harness option (or is
``python -m harness run``): it then collects the matrix file (``--matrix``, else ./matrix.toml, else the packaged
one)."""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from harness import interrupt
from harness.errors import (
    EXIT_BAD_INPUT,
    EXIT_FAILED_ON,
    EXIT_INTERRUPTED,
    EXIT_RUN_BROKE,
    EXIT_SUSPECTS,
    InputError,
)
from harness.kernel.interpreter import INTERPRET_ENV
from harness.plugin.inputs import inputs
from harness.plugin.options import asked_for, options, runs_matrix
from harness.plugin.processes import CANNOT_START, start_early
from harness.plugin.reportdir import report_dir
from harness.plugin.values import check_cache_dir
from harness.records.confirmation import is_suspect
from harness.records.results import Results
from harness.report.broken import run_broke
from harness.spec import Status

SHOWN = 10  # cells named in the --fail-on line, at most
NOTHING_SELECTED = "no cell matches the selection"
ARGS_INPUT = "harness_args"  # xdist workerinput: the controller's arguments (the matrix file it added)


class RunCommand:
    """Handed to ``pytest.main`` by ``python -m harness run``: a session given no file argument runs the matrix;
    ``started``: when the command began (``time.perf_counter``), where the run's wall starts."""

    def __init__(self, started: float | None = None) -> None:
        self.started = started


def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """Before the session: the matrix file as its argument where it has none and asks for the matrix, then every
    input checked (bad input: ``error: ...``, one line, exit 2) and the report folder locked. A worker takes
    its controller's arguments."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        config.args = list(workerinput.get(ARGS_INPUT, config.args))
        return None
    if config.option.help or config.option.version:
        return None
    try:
        given = options(config)
        command = any(isinstance(plugin, RunCommand) for plugin in config.pluginmanager.get_plugins())
        if config.args_source != pytest.Config.ArgsSource.ARGS and (command or asked_for(config)):
            config.args = [str(given.matrix_file)]
        if runs_matrix(config) or command:  # run: a node id of another file is an error, not another run
            _take_sigterm(config)
            _check(config)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:  # a signal while the case modules import (torch: seconds), before the session
        return EXIT_INTERRUPTED
    return None


MAXFAIL_STOP = "stopping after "  # xdist's Interrupted once -x/--maxfail's failures are reached ("... 1 failures")
sigterm_key = pytest.StashKey[Any]()  # the SIGTERM handler the run found, given back once it ends


def _take_sigterm(config: pytest.Config) -> None:
    """SIGTERM as Ctrl-C from before the case modules import, under plain pytest too (whose own handling starts
    with its session), keeping the handler found for the end of the run (``MatrixSession``); no interrupt lost
    while they import (``interrupt.keep_lost``)."""
    if threading.current_thread() is threading.main_thread() and sigterm_key not in config.stash:
        config.stash[sigterm_key] = signal.signal(signal.SIGTERM, interrupt.interrupt)
        interrupt.keep_lost()


def _check(config: pytest.Config) -> None:
    given = options(config)
    if given.interpret:  # before the cases are imported (Triton reads it when a kernel is decorated) and the cell
        os.environ[INTERPRET_ENV] = "1"  # processes start: they inherit it, and the results record it
    here = str(config.invocation_params.dir)
    if here not in sys.path:  # as under `python -m pytest`: a user's case modules
        sys.path.insert(0, here)
    check_cache_dir(given.cache_dir)
    start_early(config)  # the run's zygote, while the case modules import
    from harness.plugin.confirming import start_early_scripts  # its imports are the controller's alone

    start_early_scripts(config)  # and, on a GPU, the scripts' fork server
    inputs(config).check()
    if not config.option.collectonly:  # one run at a time writes into a report folder
        folder = report_dir(config)
        folder.lock()
        config.add_cleanup(folder.unlock)
    print(f"matrix: {given.matrix_file} ({given.matrix_source})", file=sys.stderr)  # the input is good: say which


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist, on the controller of a run of the matrix: each worker collects what the controller does."""
    if runs_matrix(node.config):
        node.workerinput[ARGS_INPUT] = list(node.config.args)


exit_key = pytest.StashKey[int]()  # the run's exit status, for pytest_unconfigure (harness/plugin/__init__.py)


class MatrixSession:
    """On the controller of a run of the matrix: SIGTERM as Ctrl-C while it runs, and its exit status."""

    def __init__(self, config: pytest.Config, results: Any) -> None:
        self.config = config
        self.results = results  # () -> the run's results, None when it wrote none
        self.interrupted = False
        self.finished = False  # pytest's session finished: it does not when interrupted before it started
        self.stopped = False  # a pytest process stopped the session: cell processes cannot start (processes.py)
        self.sigterm: Any = None
        if not config.option.collectonly and threading.current_thread() is threading.main_thread():
            found = signal.signal(signal.SIGTERM, interrupt.interrupt)
            self.sigterm = config.stash.get(sigterm_key, found)

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        if str(excinfo.value).startswith(CANNOT_START):  # a worker's stop, which xdist's controller raises so
            self.stopped = True
            return
        if str(excinfo.value).startswith(MAXFAIL_STOP):  # -x or --maxfail: xdist's controller stops by raising
            self.stopped = True  # a failed run, as pytest's own (exit 1), no signal
            return
        self.interrupted = self.interrupted or not isinstance(excinfo.value, pytest.exit.Exception)

    @pytest.hookimpl(trylast=True)  # after the records writer's
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.finished = True
        if self.config.option.collectonly:
            return
        failed, file = report_dir(self.config).failed, options(self.config).results_file
        code = pytest.ExitCode.TESTS_FAILED if self.stopped else int(session.exitstatus)
        code, line = exit_status(code, self.results(), file, failed, self.interrupted, options(self.config).fail_on)
        if line == NOTHING_SELECTED:
            line = nothing_selected(self.config)
        if line:
            terminal = self.config.pluginmanager.get_plugin("terminalreporter")
            if getattr(getattr(terminal, "_tw", None), "width_of_current_line", 0):  # mid-way through the progress
                terminal.write("\n", flush=True)  # line (stdout): it ends first, the error is a line of its own
            print(f"error: {line}", file=sys.stderr)
        session.exitstatus = code
        self.config.stash[exit_key] = code

    @pytest.hookimpl(tryfirst=True)  # before the terminal reporter's, which reports where an interrupt landed
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """The SIGTERM handler the run found, back; but a run that was interrupted keeps noting SIGTERM until its
        process ends: a supervisor's next try, after pytest's last line, does not turn exit 130 into death by the
        signal."""
        if self.interrupted and not self.finished:
            self._interrupted_before_the_session()
        if self.sigterm is not None:
            signal.signal(signal.SIGTERM, interrupt.noted if self.interrupted else self.sigterm)

    def _interrupted_before_the_session(self) -> None:
        """Interrupted while pytest's session started (the zygote starting, xdist's workers): pytest would exit 2,
        which reads as bad input, and report where the interrupt landed; the run exits 130 and says nothing."""
        session = self.config.pluginmanager.get_plugin("session")
        if session is not None:
            session.exitstatus = EXIT_INTERRUPTED
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        if terminal is not None:
            terminal._keyboardinterrupt_memo = None


def exit_status(
    code: int,
    results: Results | None,
    file: Path,
    failed_write: str | None,
    interrupted: bool,
    fail_on: tuple[Status, ...] = (),
) -> tuple[int, str]:
    """The run's exit status (the module's table) from pytest's ``code`` and what the run recorded (``results``,
    written to ``file``; ``fail_on``: ``--fail-on``'s statuses), and the line that says why ("" when there is
    nothing to say)."""
    if failed_write:
        return EXIT_RUN_BROKE, failed_write
    if interrupted:
        return EXIT_INTERRUPTED, ""
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED):
        return code, ""
    if results is None:
        return EXIT_BAD_INPUT, NOTHING_SELECTED
    broke = run_broke(results)
    if broke:
        return EXIT_RUN_BROKE, f"{file}: the run broke: {broke}"
    if not results.environment.get("complete"):
        return 1, f"{file}: the run did not record every selected cell"
    if any(is_suspect(cell) for cell in results.cells):
        return EXIT_SUSPECTS, ""
    return failed_on(results, fail_on)


def nothing_selected(config: pytest.Config) -> str:
    """The line of a run that selected no cell, naming the option that narrowed the selection to none."""
    for flag, given in (("-k", config.option.keyword), ("-m", config.option.markexpr)):
        if given:
            return f"command line: {flag}: no cell of the selection matches {given!r}"
    return f"{options(config).matrix_file}: cells: {NOTHING_SELECTED}"


def failed_on(results: Results, statuses: tuple[Status, ...]) -> tuple[int, str]:
    """``EXIT_FAILED_ON`` and the cells that ended with one of ``statuses`` on some attempt, else 0."""
    cells = [cell.id for cell in results.cells if set(cell.attempts) & set(statuses)]
    if not cells:
        return 0, ""
    more = f" and {len(cells) - SHOWN} more" if len(cells) > SHOWN else ""
    named, ended, listed = ",".join(statuses), " or ".join(statuses), ", ".join(cells[:SHOWN])
    return EXIT_FAILED_ON, f"--fail-on {named}: {len(cells)} cell(s) ended {ended} on some attempt: {listed}{more}"
