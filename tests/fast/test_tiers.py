"""The tiers are folders: a test's markers come from where it is, and the fast tier cannot start the harness."""

import pytest

from harness.execution import prestarted
from tests.conftest import run_harness
from tests.fast.conftest import starts_the_harness


def test_a_fast_test_cannot_start_the_harness_in_a_process():
    with pytest.raises(AssertionError, match="belongs in tests/process"):
        run_harness("list")


@pytest.mark.parametrize(
    ("argv", "harness"),
    [
        (["-m", "harness", "run"], True),
        (["reports/repros/x.py"], True),
        (["-c", "import json, sys; from harness.execution.zygote import main"], True),
        (["-c", "from ctypes import cdll; import torch"], False),  # Inductor's library probe
        (["-c", prestarted.SOURCE, "/tmp/socket", "4242"], True),  # the repro scripts' fork server
    ],
)
def test_which_python_processes_are_the_harness(argv: list[str], harness: bool):
    import sys

    assert starts_the_harness([sys.executable, *argv]) is harness


def test_a_tests_markers_are_its_folders(request: pytest.FixtureRequest):
    assert {mark.name for mark in request.node.iter_markers()} & {"process", "slow"} == set()
