"""The pytest plugin (``-p harness.plugin``, or the root conftest.py): its options, and, only when the session
runs the matrix file (as pytest's junitxml and stepwise register theirs), one plugin object per feature
registered in ``pytest_configure``: collection and selection (harness/plugin/collect.py), the cell processes
(harness/plugin/processes.py), and, on the controller, the records writer (harness/plugin/writer.py)."""

from __future__ import annotations

import os

import pytest

from harness.plugin import collect, options
from harness.plugin.processes import CellProcesses, processes_key

PLUGINS = ("harness-collect", "harness-processes", "harness-records")  # registered under these names

pytest_addoption = options.pytest_addoption


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "cell: one cell of the compatibility matrix")
    config.stash[options.options_key] = options.read_options(config)
    if not options.runs_matrix(config):
        return
    config.pluginmanager.register(collect, PLUGINS[0])
    config.stash[processes_key] = CellProcesses(config)
    config.pluginmanager.register(config.stash[processes_key], PLUGINS[1])
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist); a worker imports no torch
        from harness.plugin.writer import RecordsWriter

        config.pluginmanager.register(RecordsWriter(config), PLUGINS[2])


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    for name in PLUGINS:
        if config.pluginmanager.has_plugin(name):
            config.pluginmanager.unregister(name=name)


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # before xdist's own (one per core)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker per core less two, for the controller and the C++/Triton compilers."""
    return max(1, (os.cpu_count() or 1) - 2)
