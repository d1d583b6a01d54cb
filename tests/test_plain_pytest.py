"""Plain ``pytest`` with the plugin is ``python -m harness run``: the same options (``--interpret`` too), the
matrix file collected without an argument naming it, the same exit status (harness/plugin/session.py); in
process, through pytester, with fake cell processes."""

import json

import pytest

from harness.__main__ import main
from harness.kernel.interpreter import INTERPRET_ENV
from harness.plugin.processes import CellProcesses
from tests.conftest import TOLERANCES
from tests.fakes import FakeCells

pytest_plugins = ("pytester",)

MATRIX = 'cases = ["tests.fixtures.good"]\nstyles = ["control", "triton_op"]\n[paths]\n'
MATRIX += 'cpu_fallback = { device = "cpu", timeout = 60 }\n' + TOLERANCES
FAILING = "good-triton_op-cpu_fallback"
QUIET = ("-p", "no:cacheprovider", "--no-confirm", "-q")


@pytest.fixture
def here(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A folder with a ./matrix.toml of two cells, one of which errs (a fake cell process: no process starts)."""
    monkeypatch.setattr(CellProcesses, "make_process", FakeCells({FAILING: ["error"]}))
    monkeypatch.setenv(INTERPRET_ENV, "0")  # restored after the test: --interpret sets it for the whole process
    (pytester.path / "matrix.toml").write_text(MATRIX)
    return pytester


def statuses(folder) -> dict[str, str]:
    cells = json.loads((folder / "results.json").read_text())["cells"]
    return {cell["id"]: cell["status"] for cell in cells}


def test_plain_pytest_with_a_harness_option_runs_the_matrix_and_exits_as_run_does(here: pytest.Pytester):
    plain = here.runpytest("-p", "harness.plugin", "--report-dir", "plain", "--interpret", *QUIET)
    assert plain.ret == 0, plain.outlines[-20:]  # a failing cell is a measurement: pytest's own code would be 1
    assert statuses(here.path / "plain") == {"good-control-cpu_fallback": "pass", FAILING: "error"}
    assert INTERPRET_ENV in json.dumps(json.loads((here.path / "plain" / "results.json").read_text())["environment"])
    run = main(["run", "--report-dir", "run", "--interpret", "-n", "0", *QUIET])
    assert run == plain.ret and statuses(here.path / "run") == statuses(here.path / "plain")


def test_plain_pytest_beside_a_matrix_file_collects_it(here: pytest.Pytester):
    """No argument, no option: pytest collects the folder, and the ./matrix.toml in it (not 0 items, exit 5)."""
    done = here.runpytest("-p", "harness.plugin", *QUIET)
    assert done.ret == 0, done.outlines[-20:]
    assert statuses(here.path / "reports" / "latest") == {"good-control-cpu_fallback": "pass", FAILING: "error"}


def test_plain_pytest_exits_2_for_bad_input_as_run_does(here: pytest.Pytester):
    plain = here.runpytest("-p", "harness.plugin", "--cases", "nosuch", *QUIET)
    assert plain.ret == 2 and main(["run", "--cases", "nosuch", *QUIET]) == 2
    assert [line for line in plain.errlines if line.startswith("error:")] == [
        "error: command line: --cases[0]: unknown case 'nosuch' (neither a case id of the matrix nor a module: "
        "No module named 'nosuch')"
    ]
