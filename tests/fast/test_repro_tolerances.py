"""``repro``'s scripts compare with the tolerances the run's cells compared with, unless ``--matrix`` is given."""

import argparse
from pathlib import Path

import pytest

from harness.cli.repro import compared_with
from harness.errors import InputError
from harness.records.results import Results
from harness.spec import Tolerance
from tests.conftest import REPO

STRICT = {"float32": {"atol": 1e-9, "rtol": 0}}


def args(source: str) -> argparse.Namespace:
    return argparse.Namespace(results="r/results.json", matrix=str(REPO / "matrix.toml"), matrix_source=source)


def test_the_scripts_compare_with_the_tolerances_the_run_recorded():
    """A run of a stricter matrix: its wrong cell's script, compared at the default 1e-5, printed "no failure"."""
    recorded = Results({"tolerances": STRICT}, [])
    assert compared_with(recorded, args("./matrix.toml")) == {"float32": Tolerance(1e-9, 0.0)}
    assert compared_with(recorded, args("--matrix"))["float32"] == Tolerance(1e-5, 1e-5)  # named: the user's choice
    assert compared_with(Results({}, []), args("./matrix.toml"))["float32"] == Tolerance(1e-5, 1e-5)  # older file


def test_damaged_recorded_tolerances_are_one_line_naming_the_key():
    with pytest.raises(InputError, match=r"r/results.json: environment.tolerances"):
        compared_with(Results({"tolerances": {"float32": "tight"}}, []), args("./matrix.toml"))


def test_the_recorded_tolerances_read_back_as_written(tmp_path: Path):
    from harness.records.environment import RunEnvironment

    env = RunEnvironment.from_dict({"tolerances": STRICT}, tmp_path / "results.json")
    assert env.tolerances == STRICT and env.to_dict() == {"tolerances": STRICT}
