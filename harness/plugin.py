"""The pytest plugin (``-p harness.plugin``, or the root conftest.py): its options, and one plugin object per
feature registered in ``pytest_configure``: collection and selection (harness/collect.py), the cell processes
(harness/processes.py), and, on the controller, the results writer (harness/results.py)."""

from __future__ import annotations

import os

import pytest

from harness import collect, options
from harness.processes import CellProcesses, processes_key
from harness.results import ResultsWriter, results_key

pytest_addoption = options.pytest_addoption


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "cell: one cell of the compatibility matrix")
    config.stash[options.options_key] = options.read_options(config)
    config.pluginmanager.register(collect)
    config.stash[processes_key] = CellProcesses(config)
    config.pluginmanager.register(config.stash[processes_key])
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist)
        config.stash[results_key] = ResultsWriter(config)
        config.pluginmanager.register(config.stash[results_key])


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    for key in (results_key, processes_key):
        plugin = config.stash.get(key, None)
        if plugin is not None:
            config.pluginmanager.unregister(plugin)


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # before xdist's own (one per core)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker per core less two, for the controller and the C++/Triton compilers."""
    return max(1, (os.cpu_count() or 1) - 2)
