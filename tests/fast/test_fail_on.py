"""``run --fail-on STATUSES``: a kernel library's CI without a baseline exits 8 (``EXIT_FAILED_ON``) when a cell ends
with one of the named statuses on some attempt (``--fail-on wrong``: wrong numbers in its own kernel); without the
flag a failing cell is a measurement (exit 0). A whole run in this process over fake cell processes."""

from pathlib import Path

import pytest

from tests.fakes import FakeCells
from tests.fast.test_scheduling import fake, run_fake_matrix

__all__ = ["fake"]  # the fixture, used by name
WRONG_CELL = "wrong-triton_op-cpu_fallback"


def test_fail_on_wrong_exits_8_naming_the_wrong_cells(fake: FakeCells, tmp_path: Path, capsys):
    fake.statuses[WRONG_CELL] = ["wrong", "wrong", "wrong"]
    assert run_fake_matrix(tmp_path)[0] == 0  # a measurement
    code, data = run_fake_matrix(tmp_path, "--fail-on", "wrong")
    assert code == 8 and data["environment"]["complete"] is True  # every record written all the same
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"error: --fail-on wrong: 1 cell(s) ended wrong on some attempt: {WRONG_CELL}"
    )


def test_fail_on_counts_any_attempt_and_only_the_statuses_named(fake: FakeCells, tmp_path: Path):
    fake.statuses.update({WRONG_CELL: ["wrong", "pass", "pass"], "good-triton_op-cpu_fallback": ["crash"]})
    assert run_fake_matrix(tmp_path, "--fail-on", "wrong")[0] == 8  # wrong 1/3: flaky, wrong all the same
    fake.statuses[WRONG_CELL] = ["pass"]
    assert run_fake_matrix(tmp_path, "--fail-on", "wrong")[0] == 0
    assert run_fake_matrix(tmp_path, "--fail-on", "wrong,crash")[0] == 8


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ("wrnog", "unknown status 'wrnog' (did you mean 'wrong'?) (known: graph_break, wrong, blind, error, crash, "),
        ("pass", "unknown status 'pass' (known: graph_break, wrong, blind, error, crash, timeout, skip)"),
        (",", "no status given (one or more of: graph_break, wrong, blind, error, crash, timeout, skip)"),
    ],
)
def test_a_bad_fail_on_is_one_line_exit_2(given: str, problem: str, fake: FakeCells, tmp_path: Path, capsys):
    assert run_fake_matrix(tmp_path, "--fail-on", given) == (2, {})
    err = capsys.readouterr().err
    assert err.startswith(f"error: command line: --fail-on: {problem}") and err.count("\n") == 1, err
    assert fake.runs == []
