"""Plain ``pytest`` with the plugin is ``python -m harness run``: the same options (``--interpret`` too), the
matrix file collected without an argument naming it, the same exit status (harness/plugin/session.py). In process,
through ``pytest.main`` (what the ``pytest`` command runs) with fake cell processes; not through pytester, whose
in-process runs drop every module they import, and torch cannot be imported twice in one process."""

import json
from pathlib import Path

import pytest

from harness.__main__ import main
from harness.kernel.interpreter import INTERPRET_ENV
from harness.plugin.processes import CellProcesses
from tests.conftest import TOLERANCES
from tests.fakes import FakeCells

MATRIX = 'cases = ["tests.fixtures.good"]\nstyles = ["control", "triton_op"]\n[paths]\n'
MATRIX += 'cpu_fallback = { device = "cpu", timeout = 60 }\n' + TOLERANCES
FAILING = "good-triton_op-cpu_fallback"
MEASURED = {"good-control-cpu_fallback": "pass", FAILING: "error"}
QUIET = ("-p", "no:cacheprovider", "--no-confirm", "-q")


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with a ./matrix.toml of two cells, one of which errs (a fake cell process: no process starts)."""
    monkeypatch.setattr(CellProcesses, "make_process", FakeCells({FAILING: ["error"]}))
    monkeypatch.setenv(INTERPRET_ENV, "0")  # restored after the test: --interpret sets it for the whole process
    monkeypatch.chdir(tmp_path)
    (tmp_path / "matrix.toml").write_text(MATRIX)
    return tmp_path


def plain_pytest(*args: str) -> int:
    return int(pytest.main(["-p", "harness.plugin", *args, *QUIET]))


def statuses(folder: Path) -> dict[str, str]:
    cells = json.loads((folder / "results.json").read_text())["cells"]
    return {cell["id"]: cell["status"] for cell in cells}


def test_plain_pytest_with_a_harness_option_runs_the_matrix_and_exits_as_run_does(here: Path):
    plain = plain_pytest("--report-dir", "plain", "--interpret")
    assert plain == 0  # a failing cell is a measurement: pytest's own status would be 1
    assert statuses(here / "plain") == MEASURED
    assert json.loads((here / "plain" / "results.json").read_text())["environment"]["triton_interpret"] is True
    assert main(["run", "--report-dir", "run", "--interpret", "-n", "0", *QUIET]) == plain
    assert statuses(here / "run") == MEASURED


def test_plain_pytest_beside_a_matrix_file_collects_it(here: Path):
    """No argument, no option: pytest collects the folder, and the ./matrix.toml in it (not 0 items, exit 5)."""
    assert plain_pytest() == 0
    assert statuses(here / "reports" / "latest") == MEASURED


def test_plain_pytest_collects_the_matrix_file_it_is_given(here: Path, capsys: pytest.CaptureFixture[str]):
    """``pytest other.toml`` without --matrix runs other.toml (not ./matrix.toml; not "not found", exit 4)."""
    (here / "other.toml").write_text(MATRIX.replace('"control", "triton_op"', '"control"'))
    assert plain_pytest("other.toml", "--report-dir", "other") == 0
    assert statuses(here / "other") == {"good-control-cpu_fallback": "pass"}
    assert f"matrix: {here / 'other.toml'} (the file pytest was given)" in capsys.readouterr().err
    assert plain_pytest("other.toml::good-control-cpu_fallback", "--report-dir", "cell") == 0  # a node id of it
    assert statuses(here / "cell") == {"good-control-cpu_fallback": "pass"}


def test_plain_pytest_exits_2_for_bad_input_as_run_does(here: Path, capsys: pytest.CaptureFixture[str]):
    assert plain_pytest("--cases", "nosuch") == 2
    assert main(["run", "--cases", "nosuch", *QUIET]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(errors) == 2 and errors[0] == errors[1]
    assert errors[0].startswith("error: command line: --cases[0]: unknown case 'nosuch'")


@pytest.mark.parametrize(("given", "scheduled"), [((), 1), (("--maxschedchunk", "5"), 5)])
def test_xdist_sends_a_worker_one_cell_at_a_time_unless_the_user_says(here: Path, given: tuple[str, ...],
                                                                      scheduled: int):
    """xdist's load scheduling reads ``--maxschedchunk`` when the workers are ready, after the plugin's configure."""
    seen: list[int] = []

    class Scheduled:
        def pytest_sessionstart(self, session: pytest.Session) -> None:
            seen.append(session.config.option.maxschedchunk)

    assert pytest.main(["-p", "harness.plugin", *given, *QUIET], plugins=[Scheduled()]) == 0
    assert seen == [scheduled]
