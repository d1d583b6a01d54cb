"""How a cell's failures are recorded: a CUDA fault (and the cell process replaced after one), a cell process that
cannot start, the failing example hypothesis shrinks to, and each cell process's memory series."""

from pathlib import Path

from harness.execution.cellprocess import CellProcess
from harness.plugin.processes import CellProcesses
from harness.records.record import Record
from harness.records.reuse import reusable
from tests.fakes import fake_config
from tests.fast.test_cell_failures import FAULT, GOOD, WRONG


def test_a_cuda_fault_replaces_the_cell_process_and_a_wrong_cell_does_not(tmp_path: Path):
    processes = CellProcesses(fake_config(tmp_path, (GOOD, WRONG, FAULT)))  # over real cell processes
    try:
        assert processes.run(GOOD).status == "pass"
        process = processes.process
        first = process.pid
        assert processes.run(WRONG).status == "wrong" and process.pid == first  # a verdict: the process goes on
        fault = processes.run(FAULT)
        assert (fault.status, fault.cuda_fault, fault.measurements.pid) == ("error", True, first)
        assert process.pid is None  # its CUDA context may be poisoned: stopped
        after = processes.run(GOOD)
        assert after.status == "pass" and after.measurements.pid not in (None, first)
        assert after.measurements.process_start > 0  # the next cell paid for a fresh process
    finally:
        processes.pytest_unconfigure(None)


def test_a_cell_process_that_cannot_start_is_an_error_not_a_verdict(tmp_path: Path):
    log = tmp_path / "logs" / "main.log"
    process = CellProcess(log, {"PYTHONHOME": str(tmp_path / "no-python-here")}, None)  # its zygote cannot start
    try:
        for _ in range(2):  # each cell tries again
            outcome = process.run(GOOD)
            assert (outcome.status, outcome.error_type, outcome.stage) == ("error", "CellProcessFailed", "build")
            assert outcome.error == (
                "the cell processes' fork server exited 1 while starting: ModuleNotFoundError: No module named "
                f"'encodings' (see {log})"
            )
        assert not reusable(Record.of(GOOD, outcome, "k"), "k")
    finally:
        process.close()
