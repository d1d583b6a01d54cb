"""bench/passes.py: which passing cells' scripts it runs, and what counts as their script saying so."""

from bench.passes import passed, sample
from harness.execution.confirm import ScriptRun
from harness.records.record import Record
from harness.spec import Status


def test_one_passing_cell_of_each_path_and_wrapper_the_first_in_order():
    cells = [
        Record("add", "raw_jit", "eager", Status.ERROR),
        Record("add", "autotune", "eager", Status.PASS),
        Record("sin", "raw_jit", "eager", Status.PASS),  # the launcher's second on eager
        Record("add", "triton_op_autotune", "eager", Status.PASS),
        Record("add", "control", "eager", Status.PASS),
        Record("add", "raw_jit", "vmap", Status.GRAPH_BREAK),
        Record("sin", "raw_jit", "vmap", Status.PASS),
    ]
    assert [cell.id for cell in sample(cells)] == [
        "add-autotune-eager",
        "add-triton_op_autotune-eager",
        "add-control-eager",
        "sin-raw_jit-vmap",
    ]


def test_a_passing_cells_script_passes_only_by_exit_0_and_its_own_no_failure_line():
    cell = Record("add", "raw_jit", "eager", Status.PASS)
    assert passed(cell, ScriptRun.of(0, "no failure: add-raw_jit-eager passes here", 1.0))
    assert not passed(cell, ScriptRun.of(1, "no failure: add-raw_jit-eager passes here", 1.0))
    assert not passed(cell, ScriptRun.of(0, "no failure: sin-raw_jit-eager passes here", 1.0))
    assert not passed(cell, ScriptRun.of(0, "", 1.0))
