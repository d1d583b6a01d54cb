"""A case broken only at the sizes its cells draw (its load check runs the first size): a reference that raises
there, a make_inputs that gives a float there. Every style's cell fails alike; each is the case's own bug (error
type ``CaseBug``), named once in the run's summary and the chart, and left out of the goals, never charted as
the styles' failures. Cells run in this process."""

from pathlib import Path

import pytest

from harness.case import load_cases
from harness.kernel.casecheck import check_case
from harness.plugin.summary import summary_lines
from harness.records.record import Record
from harness.spec import CellSpec, Outcome, PathSpec, Tolerance
from tests.conftest import make_record
from tests.fast.test_cells import run
from tests.fast.test_records_report import render, results, section

MODULE = "tests.fixtures.drawn_size_bugs"
STYLES = ("triton_op", "custom_op", "control")
ENV = {
    "goals": {"CPU fallback": ["cpu_fallback"]},
    "styles": {style: {"wrapper": style} for style in STYLES},
}


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> list[Record]:
    """Every style of ``STYLES`` on cpu_fallback (4 examples: the first size, then drawn ones) for both cases."""
    folder = tmp_path_factory.mktemp("cells")
    found = []
    for case in load_cases(MODULE):
        check_case(case, Tolerance(1e-5, 1e-5))  # the load check passes: its first size is fine
        for style in STYLES:
            outcome = run(case, style, "cpu_fallback", folder)
            spec = CellSpec(case.id, MODULE, style, PathSpec("cpu_fallback", "cpu", 60), None)
            found.append(Record.of(spec, Outcome(**outcome)))
    return found


def test_each_cell_names_the_cases_own_code(records: list[Record]):
    for record in records:
        assert (record.status, record.error_type) == ("error", "CaseBug"), record
        size = record.measurements.example["size"]
        assert size != 1001
        field, problem = ("reference", "ValueError: this reference handles one size")
        if record.case == "inputs_float":
            field, problem = "make_inputs", "expected a tuple, got float"
        assert record.error == (
            f"the case's {field} failed at size {size}, seed {record.measurements.example['seed']} on cpu (its load "
            f"check runs its first size on CPU only): {problem}"
        )


def test_the_run_names_each_broken_case_once(records: list[Record]):
    lines = [line for line in summary_lines(records, Path("/r/matrix.md")) if "case's own code" in line]
    assert [line.split(" failed in")[0] for line in lines] == [
        "[harness] 3 cell(s) of reference_raises",
        "[harness] 3 cell(s) of inputs_float",
    ]
    assert all(line.endswith(": fix the case first") for line in lines)


def test_the_chart_leaves_the_broken_case_out_of_the_goals_and_blames_no_style(records: list[Record]):
    good = [make_record("good", style, "cpu_fallback", status="pass") for style in STYLES]
    chart = render(results(*(r.to_dict() for r in records), *good, **ENV))
    detail = section(chart, "Which style for which goal, in detail")
    assert "- **CPU fallback** (`cpu_fallback`): use **triton_op** · **custom_op**" in detail
    assert "Left out of the goals, their cells measure nothing of the styles: reference_raises: the case's " in detail
    assert "fix the case first. The goals are answered over the other cases (good)." in detail
    assert "near miss:" not in detail
    findings = section(chart, "Findings")
    assert "❌ **Cases broken in their own code**, not in the styles (their cells are left out):" in findings
    assert "†" not in section(chart, "Where the cases differ")  # the control fails too, but not the path


def test_the_controls_training_names_the_cases_reference(tmp_path: Path):
    """The control trains the reference itself: where it raises at a drawn size, the cell is the case's bug, as the
    other styles' cells are (it was a plain error, charged to the control, before the reference's own call)."""
    case = next(case for case in load_cases(MODULE) if case.id == "reference_raises")
    record = run(case, "control", "train_eager", tmp_path, device="cpu")
    assert (record["status"], record["error_type"]) == ("error", "CaseBug"), record
    assert "the case's reference failed at size" in record["error"]
