"""A case calling ``os._exit`` (which no ``except`` catches) is a recorded failure of that case: at import or in the
load check, one line naming the module and exit 2, never exit 0 with nothing run; in a cell, a crash that says the
process exited mid-cell. ``sys.exit`` in a cell process is that cell's error, and the process goes on."""

from pathlib import Path

from harness.execution.cellprocess import CellProcess
from tests.conftest import cell_spec, run_harness


def test_os_exit_at_import_is_bad_input_naming_the_module():
    done = run_harness("list", "--cases", "tests.fixtures.os_exit_at_import", timeout=300)
    assert done.returncode == 2, (done.stdout[-1000:], done.stderr[-1000:])
    assert done.stderr.splitlines()[-1] == (
        "error: command line: --cases[0]: case 'tests.fixtures.os_exit_at_import' does not load: "
        "the case called os._exit(0) at import"
    )


def test_os_exit_in_the_reference_is_a_broken_case_exit_2(tmp_path: Path):
    done = run_harness(
        "run", "--cases", "tests.fixtures.os_exit_in_reference", "--paths", "cpu_fallback",
        "--report-dir", str(tmp_path), timeout=300,
    )
    assert done.returncode == 2, (done.stdout[-1000:], done.stderr[-1000:])
    assert done.stderr.splitlines()[-1] == (
        "error: command line: --cases[0]: tests.fixtures.os_exit_in_reference: reference: "
        "the case called os._exit(0)"
    )


def test_a_cell_that_exits_is_recorded_and_the_next_cell_runs(tmp_path: Path):
    process = CellProcess(tmp_path / "logs" / "main.log", {}, None)
    try:
        quits = process.run(cell_spec("tests.fixtures.exit_in_kernel", "triton_op"))
        assert (quits.status, quits.error) == ("error", "the case called sys.exit(0)")
        first = process.pid
        assert first is not None  # sys.exit is caught: the same process runs the next cell
        died = process.run(cell_spec("tests.fixtures.os_exit_in_kernel", "triton_op"))
        assert (died.status, died.error_type) == ("crash", "0"), died.error
        assert died.error.startswith("cell process exited 0 mid-cell (did the case call os._exit?); stderr: ")
        after = process.run(cell_spec("tests.fixtures.good", "triton_op"))
        assert after.status == "pass" and after.measurements.pid != first
    finally:
        process.close()
