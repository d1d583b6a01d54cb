"""The pytest plugin (``-p harness.plugin``, or the root conftest.py): its options, and one plugin object per
feature registered in ``pytest_configure``: collection and selection (harness/plugin/collect.py), the cell processes
(harness/plugin/processes.py), and, on the controller, the results writer (harness/plugin/writer.py) and the
run's closing summary (harness/plugin/summary.py). PYTEST_DONT_REWRITE: the command line imports it before pytest
loads it (-p, or the pytest11 entry point), and it has no asserts to rewrite."""

from __future__ import annotations

import os
import sys

import pytest

from harness.plugin import collect, options
from harness.plugin.processes import CellProcesses, processes_key
from harness.plugin.summary import RunSummary

# registered in pytest_configure, under these names
PLUGINS = ("harness-processes", "harness-results", "harness-summary")

pytest_addoption = options.pytest_addoption


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "cell: one cell of the compatibility matrix")
    config.stash[options.options_key] = options.read_options(config)
    here = str(config.invocation_params.dir)
    if options.runs_matrix(config) and here not in sys.path:  # as under `python -m pytest`: a user's case modules
        sys.path.insert(0, here)
    config.pluginmanager.register(collect)
    config.stash[processes_key] = CellProcesses(config)
    config.pluginmanager.register(config.stash[processes_key], PLUGINS[0])
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist); a worker imports no torch
        from harness.plugin.writer import ResultsWriter

        config.pluginmanager.register(ResultsWriter(config), PLUGINS[1])
        config.pluginmanager.register(RunSummary(config), PLUGINS[2])


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    for name in PLUGINS:
        if config.pluginmanager.has_plugin(name):
            config.pluginmanager.unregister(name=name)


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # before xdist's own (one per core)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker per core less two, for the controller and the C++/Triton compilers."""
    return max(1, (os.cpu_count() or 1) - 2)
