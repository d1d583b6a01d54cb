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
from harness.report.casebugs import failing_kernels
from harness.spec import CellSpec, Outcome, PathSpec, Tolerance
from tests.conftest import make_record, typed
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


FLAG = "ValueError: numpy data itemsize (32 bits) exceeds dtype primitive_bitwidth (1 bits) for triton type int1"
EAGER_STYLES = ("raw_jit", "autotune", "triton_op", "triton_op_heuristics_autotune", "custom_op", "control")
EAGER_ENV = {"goals": {"run eagerly": ["eager"]}, "styles": {style: {"wrapper": style} for style in EAGER_STYLES}}


def eager_cells(case: str, failures: dict[str, str], control: str = "pass") -> list[dict]:
    """The case on eager: each style of ``failures`` raising its error at run, the others passing."""
    made = []
    for style in EAGER_STYLES:
        if style == "control":
            made.append(make_record(case, style, "eager", status=control))
        elif style in failures:
            kind, _, message = failures[style].partition(": ")
            made.append(make_record(case, style, "eager", status="error", stage="run", error_type=kind,
                                    error=message))  # fmt: skip
        else:
            made.append(make_record(case, style, "eager", status="pass"))
    return made


def test_a_kernel_failing_alike_in_most_styles_on_eager_is_named_once_and_left_out_of_the_goals():
    """Triton's interpreter refusing a bool argument: every style fails alike but one, which fails on its
    wrapping's own limit; the control passes. The kernel fails as written: no style is the cause."""
    own = {style: FLAG for style in EAGER_STYLES if style != "control"}
    own["triton_op_heuristics_autotune"] = "RuntimeError: wrap_triton only works on functions annotated with jit"
    cells = [*eager_cells("flag", own), *eager_cells("good", {})]
    chart = render(results(*cells, **EAGER_ENV))
    detail = section(chart, "Which style for which goal, in detail")
    assert "Left out of the goals, their cells measure nothing of the styles: flag: its kernel fails the same way in " \
           "4 of 5 styles on eager (" + FLAG + "), while its control passes: fix the kernel first." in detail
    assert "The goals are answered over the other cases (good)." in detail
    findings = section(chart, "Findings")
    assert "**Kernels that fail as written**, alike in every style (their cells are left out):" in findings
    lines = summary_lines([typed(c) for c in cells], Path("/r/matrix.md"))
    assert [line for line in lines if "fails the same way" in line] == [
        f"[harness] the kernel flag fails the same way in 4 of 5 styles on eager, while its control passes: {FLAG}: "
        "fix the kernel first"
    ]


@pytest.mark.parametrize(
    ("failures", "control"),
    [
        ({"raw_jit": FLAG, "autotune": FLAG, "triton_op": FLAG, "custom_op": FLAG}, "pass"),  # one style passes
        ({style: FLAG for style in EAGER_STYLES if style != "control"}, "error"),  # the control fails too
        ({"raw_jit": FLAG, "autotune": FLAG, "triton_op": "E: a", "triton_op_heuristics_autotune": "E: b",
          "custom_op": "E: c"}, "pass"),  # two of five alike: no one failure of the kernel
    ],
)  # fmt: skip
def test_no_kernel_is_said_to_fail_as_written_unless_the_styles_fail_alike_and_the_control_passes(failures, control):
    assert failing_kernels([typed(c) for c in eager_cells("k", failures, control)]) == {}
