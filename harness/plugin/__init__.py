"""The pytest plugin (``-p harness.plugin``, or the root conftest.py): its options, and, only when the session
runs the matrix file (as pytest's junitxml and stepwise register theirs), one plugin object per feature
registered in ``pytest_configure``: collection and selection (harness/plugin/collect.py), the cell processes
(harness/plugin/processes.py), and, on the controller, the records writer (harness/plugin/writer.py) and the
run's closing summary (harness/plugin/summary.py). PYTEST_DONT_REWRITE: the command line imports it before pytest
loads it (-p, or the pytest11 entry point), and it has no asserts to rewrite."""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Any

import pytest

from harness.errors import EXIT_BAD_INPUT, InputError
from harness.plugin import collect, options, reportdir
from harness.plugin.processes import CellProcesses, processes_key
from harness.plugin.summary import RunSummary
from harness.plugin.values import check_cache_dir

# registered under these names
PLUGINS = ("harness-collect", "harness-processes", "harness-records", "harness-summary")

locked_key = pytest.StashKey[bool]()  # whether this process took the report folder's lock for this session
sigterm_key = pytest.StashKey[Any]()  # the SIGTERM handler before the session's
pytest_addoption = options.pytest_addoption
pytest_plugins = ("harness.plugin.progress",)  # its own plugin module: the cells done and the time left


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "cell: one cell of the compatibility matrix")
    config.stash[options.options_key] = options.read_options(config)
    if not options.runs_matrix(config):
        return
    here = str(config.invocation_params.dir)
    if here not in sys.path:  # as under `python -m pytest`: a user's case modules
        sys.path.insert(0, here)
    config.pluginmanager.register(collect, PLUGINS[0])
    config.stash[processes_key] = CellProcesses(config)
    config.pluginmanager.register(config.stash[processes_key], PLUGINS[1])
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist); a worker imports no torch
        from harness.plugin.writer import RecordsWriter

        if not config.option.collectonly:
            try:  # one run at a time writes into a report folder
                check_cache_dir(config.stash[options.options_key].cache_dir)
                config.stash[locked_key] = reportdir.lock(config.stash[options.options_key].report_dir)
            except InputError as error:
                pytest.exit(str(error), returncode=EXIT_BAD_INPUT)
            _interrupt_on_sigterm(config)

        config.pluginmanager.register(RecordsWriter(config), PLUGINS[2])
        config.pluginmanager.register(RunSummary(config), PLUGINS[3])


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    for name in PLUGINS:
        if config.pluginmanager.has_plugin(name):
            config.pluginmanager.unregister(name=name)
    if config.stash.get(locked_key, False):
        reportdir.unlock(config.stash[options.options_key].report_dir)
    if sigterm_key in config.stash:
        signal.signal(signal.SIGTERM, config.stash[sigterm_key])


def _interrupt_on_sigterm(config: pytest.Config) -> None:
    """SIGTERM ends the run as Ctrl-C does (pytest's interrupt: the records written, the zygote stopped, its
    temp folders removed), rather than killing the controller where it stands; until the session ends. A
    second SIGTERM (a supervisor's next try) does not cut that clean-up short: SIGKILL does, if it must."""
    if threading.current_thread() is threading.main_thread():
        config.stash[sigterm_key] = signal.signal(signal.SIGTERM, _stop)


def _stop(signum: int, frame: Any) -> None:
    signal.signal(signal.SIGTERM, _stopping)
    raise KeyboardInterrupt


def _stopping(signum: int, frame: Any) -> None:
    print("harness: SIGTERM: the run is stopping already, cleaning up (SIGKILL ends it now)", file=sys.stderr)


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # before xdist's own (one per core)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker per core less two, for the controller and the C++/Triton compilers."""
    return max(1, (os.cpu_count() or 1) - 2)
