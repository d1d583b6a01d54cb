"""The pytest plugin (``-p harness.plugin``, the ``pytest11`` entry point, or the root conftest.py): its options
(harness/plugin/options.py), the session's arguments, input checks and exit status (harness/plugin/session.py),
and, only when the session runs the matrix file (as pytest's junitxml and stepwise register theirs), one plugin
object per feature registered in ``pytest_configure``, each holding its own state: collection and selection
(harness/plugin/collect.py), the cell processes (harness/plugin/processes.py), and, on the controller, the session
(exit status, SIGTERM), the records writer (harness/plugin/writer.py) and the run's closing summary
(harness/plugin/summary.py). PYTEST_DONT_REWRITE: the command line imports it before pytest loads it, and it has
no asserts to rewrite."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness.errors import foreign_threads, leave
from harness.plugin import collect, options
from harness.plugin.inputs import visible_gpus
from harness.plugin.processes import CellProcesses, default_workers, host_cores, processes_key
from harness.plugin.session import MatrixSession, exit_key, pytest_cmdline_main, pytest_configure_node
from harness.plugin.summary import RunSummary

# registered under these names
PLUGINS = ("harness-collect", "harness-processes", "harness-session", "harness-records", "harness-summary")

pytest_addoption = options.pytest_addoption
__all__ = ["pytest_addoption", "pytest_cmdline_main", "pytest_configure_node"]
_RUNNING: list[pytest.Config] = []  # the pytest runs configured in this process, outermost first
pytest_plugins = ("harness.plugin.progress",)  # its own plugin module: the cells done and the time left


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "cell: one cell of the compatibility matrix")
    _RUNNING.append(config)
    if not options.runs_matrix(config):
        return
    config.pluginmanager.register(collect, PLUGINS[0])
    collect.schedule_cell_by_cell(config)
    config.stash[processes_key] = CellProcesses(config)
    config.pluginmanager.register(config.stash[processes_key], PLUGINS[1])
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist); a worker imports no torch
        from harness.plugin.writer import RecordsWriter

        writer = RecordsWriter(config)
        config.pluginmanager.register(MatrixSession(config, lambda: writer.results), PLUGINS[2])
        config.pluginmanager.register(writer, PLUGINS[3])
        config.pluginmanager.register(RunSummary(config, lambda: writer.results), PLUGINS[4])


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """The harness's plugins unregistered; then, on a run's controller (plain pytest too), a thread a case module
    started that never ends is not waited for: the run exits with its status, as ``python -m harness`` does."""
    for name in PLUGINS:
        if config.pluginmanager.has_plugin(name):
            config.pluginmanager.unregister(name=name)
    outermost = _RUNNING[:1] == [config]
    if config in _RUNNING:
        _RUNNING.remove(config)
    ran = exit_key in config.stash and not hasattr(config, "workerinput")
    if ran and outermost and runs_as_pytest() and foreign_threads():
        leave(config.stash[exit_key])


def runs_as_pytest() -> bool:
    """Whether pytest is the process's own program (``pytest``, ``python -m pytest``): not ``python -m harness``
    (which leaves the same way once it is done), an xdist worker or another program calling ``pytest.main``, whose
    process must go on (a run inside a test is not the outermost run either)."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    entry = spec.name if spec is not None else Path(sys.argv[0]).name
    return entry in ("pytest", "py.test", "pytest.__main__")


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # before xdist's own (one per core)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: the workers that fit this host's cores and GPUs (``default_workers``)."""
    return default_workers(host_cores(), len(visible_gpus()))
