"""A case that ends its process (``sys.exit``) is a recorded failure of that case: at import or in the load check,
one line naming the module and exit 2; in a cell, the cell's error. Never a run that exits 0 having run nothing.
(``os._exit``, which would end this test process, is tested in tests/process/test_case_exits.py.)"""

from pathlib import Path

from harness.case import load_cases
from harness.cell.runner import run_cell
from tests.conftest import cell_spec, harness_main


def test_a_module_calling_sys_exit_at_import_is_bad_input(tmp_path: Path):
    done = harness_main("run", "--cases", "tests.fixtures.exit_at_import", "--report-dir", str(tmp_path))
    assert done.returncode == 2, done.stdout[-1000:]
    assert done.stderr == (
        "error: command line: --cases[0]: case 'tests.fixtures.exit_at_import' does not load: "
        "the case called sys.exit(3) at import\n"
    )
    assert not (tmp_path / "records.jsonl").exists()


def test_a_reference_calling_sys_exit_is_a_broken_case_not_a_run_of_nothing(tmp_path: Path):
    for command in (("list",), ("run", "--paths", "cpu_fallback", "--report-dir", str(tmp_path))):
        done = harness_main(*command, "--cases", "tests.fixtures.exit_in_reference")
        assert done.returncode == 2, (command, done.stdout[-1000:])
        assert done.stderr == (
            "error: command line: --cases[0]: tests.fixtures.exit_in_reference: reference: "
            "the case called sys.exit(0)\n"
        )
    assert not (tmp_path / "records.jsonl").exists()


def test_a_kernel_calling_sys_exit_in_a_cell_is_that_cells_error(tmp_path: Path):
    spec = cell_spec("tests.fixtures.exit_in_kernel", "triton_op")
    (case,) = load_cases(spec.module)
    outcome = run_cell(case, spec, tmp_path, {})
    assert (outcome.status, outcome.error_type, outcome.error) == ("error", "SystemExit", "the case called sys.exit(0)")
    good = cell_spec("tests.fixtures.good", "triton_op")
    assert run_cell(load_cases(good.module)[0], good, tmp_path, {}).status == "pass"  # the process goes on
