"""The chart's answers and marks, on hand-made results: goals, flaky rates, subsystem vs wrong numbers, notes,
docs sources, grouping of styles by wrapper and of paths by group, and the committed GPU reference."""

import re

import pytest

from harness.report import history
from harness.report.chart import render as chart_of
from harness.report.marks import first_sentence, raised_at
from tests.conftest import REPO, make_record, typed
from tests.fast.test_records_report import differ, render, results, rows, section, table, tables, unwrap

pytestmark = pytest.mark.usefixtures("checkout_goals")  # goals of their own, not matrix.toml's


def render_history(runs: list[dict]) -> str:
    return history.render([typed(run) for run in runs])


GOALS = "Which style for which goal, in detail"
PASS = {"status": "pass"}
BOOM = {"status": "error", "error_type": "RuntimeError", "error": "boom. More text.", "stage": "run"}
FLAKY_WRONG = {"status": "wrong", "error_type": "Mismatch", "error": "output: 1 / 9", "stage": "compare"}


def cells(spec: dict[str, dict[str, dict]], cases=("add", "sin", "softmax")) -> list[dict]:
    """One record per case for each (style, path) in spec: {style: {path: fields}}; fields per case may be
    overridden by {path: {"<case>": fields}}."""
    out = []
    for style, by_path in spec.items():
        for path, fields in by_path.items():
            for case in cases:
                out.append(make_record(case, style, path, **fields.get(case, fields if "status" in fields else PASS)))
    return out


def goal_rows(chart: str) -> dict[str, list[str]]:
    """The goals list: goal -> [paths, answers, near misses (joined by "<br>", "near miss: " taken off)]."""
    found: dict[str, list[str]] = {}
    listed = re.sub(r"</?details>(<summary>.*?</summary>)?", "", section(chart, GOALS)).strip()
    for line in listed.split("\n\n")[0].splitlines():
        item = re.fullmatch(r"- \*\*(.+?)\*\* \((.+?)\): use (.*)", line)
        if item:
            goal, paths, answers = item.groups()
            found[goal] = [paths, answers, ""]
        elif line.startswith("  - "):
            entry = line[4:].removeprefix("near miss: ")
            found[goal][2] += ("<br>" if found[goal][2] else "") + entry
    return {goal: [paths, answers, near or "—"] for goal, (paths, answers, near) in found.items()}


def test_goal_answers_are_styles_passing_every_case_and_near_misses_name_their_cells():
    chart = render(
        results(
            *cells(
                {
                    "raw_jit": {"fullgraph": PASS, "dynamic": {"add": BOOM}},
                    "autotune": {"fullgraph": {"sin": {**BOOM, "error": "other"}}, "dynamic": PASS},
                    "triton_op": {"fullgraph": BOOM, "dynamic": PASS},  # fails every case: no near miss
                    "custom_op": {"fullgraph": {"softmax": {"status": "skip", "reason": "no CUDA device"}}},
                    "control": {"fullgraph": {"sin": {"status": "skip", "reason": "no"}}, "dynamic": {"add": BOOM}},
                }
            ),
            goals={"fullgraph please": ["fullgraph"], "dynamic please": ["dynamic"], "both": ["fullgraph", "dynamic"]},
        )
    )
    goals = goal_rows(chart)
    paths, answers, near = goals["fullgraph please"]
    assert paths == "`fullgraph`" and answers == "**raw_jit**"
    # a near miss names its failing case with mark and note; a style that skipped a case is not an answer
    assert "autotune: sin ❌ [" in near and "custom_op: softmax ➖ [" in near and "triton_op" not in near
    assert "fails too" not in near  # the control's skip there breaks no path
    answers, near = goals["dynamic please"][1:]
    assert answers == "**autotune** · **triton_op**"  # control is not a candidate; wrappers apart
    assert near.startswith("raw_jit: add ❌ [") and "† `control` (pure PyTorch) fails too on add/dynamic" in near
    answers, near = goals["both"][1:]
    assert answers == "none"
    assert "raw_jit: add/dynamic ❌" in near  # a goal of several paths names case/path
    assert "passes all 3 case(s)" in section(chart, GOALS)


def test_flaky_cell_is_not_a_pass_and_unrun_goals_are_left_out():
    flaky = {**PASS, "outcomes": ["pass", "wrong", "pass"]}
    chart = render(
        results(
            *cells({"raw_jit": {"eager": {"sin": flaky}}, "autotune": {"eager": PASS}}),
            *cells({"raw_jit": {"aoti_standalone": {"status": "skip", "reason": "no CUDA device"}}}),
        )
    )
    goals = goal_rows(chart)
    assert goals["run eagerly"][1] == "**autotune**"
    # the record is a pass (its first attempt): the mark says so, with every attempt's rate (issue 44: ❗WRONG 1/3)
    assert goals["run eagerly"][2].startswith("raw_jit: sin ✅ 2/3, ❗WRONG 1/3 🎲 [")
    # the default goals (no environment.goals); a goal whose paths did not run (all skip, or absent) is left out
    assert set(goals) == {"run eagerly"}
    text = section(chart, GOALS)
    assert "deploy with AOTInductor in a fresh process (`aoti_standalone`)" in text
    assert "this checkout's matrix.toml (this results file has no environment.goals)" in text
    assert "flaky (attempts: pass, wrong, pass)" in section(chart, "Notes")


def test_rate_of_a_cell_run_several_times():
    chart = render(
        results(
            make_record(
                "add", "autotune", "compile", **FLAKY_WRONG, outcomes=["wrong", "pass", "wrong", "pass", "pass"]
            ),
            make_record("add", "raw_jit", "compile", **BOOM, outcomes=["error", "error", "error"]),
            make_record("add", "triton_op", "compile", status="pass", outcomes=["pass", "pass"]),
        )
    )
    assert table(chart, "Summary") == {  # one case: each cell is the case's
        "style \\ path": ["compile"],
        "autotune": ["❗WRONG 2/5 🎲 [1]"],
        "raw_jit": ["❌ 3/3 [2]"],  # failed alike every time: a rate, not flaky
        "triton_op": ["✅ 2/2"],
    }
    assert "- 🎲 **flaky**" in section(chart, "Legend")


def test_subsystem_blind_cells_are_apart_from_wrong_numbers():
    subsystem = {"status": "wrong", "error_type": "SubsystemMismatch", "error": "flops: counted 0", "stage": "compare"}
    old_file = {"status": "wrong", "error_type": "Mismatch", "error": "flops: FlopCounterMode counted 0 for the op"}
    chart = render(
        results(
            make_record("add", "raw_jit", "flop_counter", **subsystem),
            make_record("sin", "raw_jit", "flop_counter", **old_file),
            make_record("add", "autotune", "flop_counter", **FLAKY_WRONG),
            make_record("sin", "autotune", "flop_counter", status="pass"),
        )
    )
    # note 1 is autotune's wrong cell: the FLOP counting goal names it first, as a near miss
    assert differ(chart) == {
        "raw_jit flop_counter": "🔇 [2]: add; 🔇 [3]: sin",
        "autotune flop_counter": "❗WRONG [1]: add",
    }
    summary = table(chart, "Summary")
    assert summary["raw_jit"] == ["0/2 🔇"]  # no ❗: a subsystem ignoring the kernel is not wrong numbers
    assert summary["autotune"] == ["1/2 ❗"]
    legend = section(chart, "Legend")
    assert "- 🔇 **subsystem blind**" in legend and "- ❗WRONG **wrong**" in legend
    assert "2. subsystem blind at compare: SubsystemMismatch: flops: counted 0" in chart
    # an older file's wording of it is read as today's (harness/records/upgrade.py)
    assert "3. subsystem blind: SubsystemMismatch: flops: FlopCounterMode counted 0 for the op" in chart


def test_note_keeps_the_whole_first_sentence():
    message = (
        "Cannot access data pointer of Tensor (e.g. FakeTensor, FunctionalTensor). If you're using torch.compile, "
        "wrap the custom kernel into an opaque custom op. Please see the following for details: https://x.y/z"
    )
    assert first_sentence(message) == "Cannot access data pointer of Tensor (e.g. FakeTensor, FunctionalTensor)."
    long = "A " + "very " * 90 + "long sentence. Then more."  # 466 characters: kept whole
    chart = render(results(make_record("add", "raw_jit", "eager", status="error", error_type="E", error=long)))
    note = next(line for line in section(chart, "Notes").splitlines() if line.startswith("1. "))
    assert note.endswith("long sentence.") and "…" not in note and "Then" not in note
    assert first_sentence("RuntimeError: 0 backends ([]). There should be one.\n\nSet X=1") == (
        "RuntimeError: 0 backends ([])."
    )
    assert first_sentence("Mismatch:\n  output differs\nthird line") == "Mismatch: output differs"


def test_a_note_too_long_for_the_chart_is_cut_before_its_repro_script_not_after():
    """A graph break's reasons ran past the note's length, and the chart's note ended in 'reproduced by…': the
    script it names is what a reader follows, so the reasons are cut instead."""
    reasons = "; ".join(f"reason {n}: Dynamo does not know how to trace the builtin 'setattr'" for n in range(40))
    script = {"script": "repros/graph-break-x.py", "reproduced": True, "line": "AssertionError: graph break"}
    broken = make_record("add", "autotune_heuristics", "dynamic", status="graph_break", reason=reasons)
    chart = render(results({**broken, "confirmation": script}))
    note = next(line for line in section(chart, "Notes").splitlines() if line.startswith("1. "))
    assert "reason 0:" in note and "… — reproduced by 'repros/graph-break-x.py': AssertionError: graph break" in note


TRACEBACK = """  File "/v/site-packages/torch/_inductor/pattern_matcher.py", line 316, in replace_by_example
    assert len(graph_with_eager_vals.graph.nodes) == len(
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
torch._inductor.exc.InductorError: AssertionError: \n\nSet TORCHDYNAMO_VERBOSE=1 for the internal stack trace
"""


def test_error_without_a_message_says_where_it_was_raised():
    empty = "AssertionError: \n\nSet TORCHDYNAMO_VERBOSE=1 for the internal stack trace (please do this)"
    error = {"status": "error", "error_type": "InductorError", "error": empty, "stage": "compile"}
    chart = render(
        results(
            make_record("add", "raw_jit", "dynamic", **error, traceback=TRACEBACK),
            make_record(
                "sin", "raw_jit", "dynamic", status="error", error_type="AssertionError", error="", stage="run"
            ),
        )
    )
    notes = section(chart, "Notes")
    assert (
        "1. error at compile: InductorError: AssertionError: (no message) raised at "
        "torch/_inductor/pattern_matcher.py:316 in replace_by_example: assert len(graph_with_eager_vals.graph.nodes)"
        " == len(\n" in notes
    )
    assert "TORCHDYNAMO_VERBOSE" not in notes
    assert "2. error at run: AssertionError: (no message)\n" in notes  # no traceback: says so, nothing more
    assert raised_at("no frames here") == ""
    assert raised_at('  File "/repo/harness/paths.py", line 9, in run\nRuntimeError: x') == (
        "raised at harness/paths.py:9 in run"
    )


def test_docs_table_names_the_source_of_each_claim():
    docs = {
        "sources": {"recipe": "the PyTorch recipe", "blog": "the export blog"},
        "claims": {
            "raw_jit": {"eager": {"supported": True, "source": "recipe"}},
            "autotune": {"export_nonstrict": {"supported": False, "source": "blog"}},
        },
    }
    chart = render(
        results(
            make_record("add", "raw_jit", "eager", **BOOM),
            make_record("add", "autotune", "export_nonstrict", status="pass"),
            make_record("add", "autotune", "eager", **BOOM),  # no claim: no contradiction
            docs=docs,
        )
    )
    top = section(chart, "Contradicts the docs")
    assert "- **recipe**: the PyTorch recipe" in top and "- **blog**: the export blog" in top
    assert "<details><summary>2 claims contradicted by 2 cells</summary>" in top
    assert rows(top)[1:] == [  # one row per claim: the wrapper (or style) it is made for, the path
        ["launcher (jit) on `eager`", "supported", "recipe", "`raw_jit`: add ❌ error"],
        ["launcher (autotune) on `export_nonstrict`", "not supported", "blog", "`autotune`: add ✅ pass"],
    ]


STYLES = {
    "raw_jit": ("launcher", None),
    "autotune": ("launcher", "@triton.autotune"),
    "triton_op": ("triton_op", None),
    "triton_op_autotune": ("triton_op", "@triton.autotune"),
    "custom_op_autotune_heuristics": ("custom_op", "@triton.autotune over @triton.heuristics"),
    "control": ("control", None),
}


def test_rows_are_grouped_by_wrapper():
    # matrix order mixes the wrappers; the chart groups them, launcher first, control last
    order = ["control", "triton_op", "raw_jit", "custom_op_autotune_heuristics", "triton_op_autotune", "autotune"]
    records = [make_record("add", style, "eager", status="pass") for style in order]
    inferred = render(results(*records))
    given = render(results(*records, styles={s: {"wrapper": w, "decorator": d} for s, (w, d) in STYLES.items()}))
    for chart in (inferred, given):
        grid = [row[:2] for row in rows(section(chart, "Summary"))[1:]]
        assert grid == [
            ["launcher", "raw_jit"],
            ["", "autotune"],
            ["triton_op", "triton_op"],
            ["", "triton_op_autotune"],
            ["custom_op", "custom_op_autotune_heuristics"],
            ["control", "control"],
        ]
    legend = section(given, "Legend")
    assert "`custom_op_autotune_heuristics` (@triton.autotune over @triton.heuristics)" in legend
    # a wrapper from the data wins over the id's prefix
    odd = render(results(*records, styles={"raw_jit": {"wrapper": "custom_op", "decorator": None}}))
    assert [row[:2] for row in rows(section(odd, "Summary"))[1:3]] == [
        ["launcher", "autotune"],
        ["triton_op", "triton_op"],
    ]


def test_columns_are_grouped_by_path_group_with_definitions_in_the_legend():
    paths = {
        "eager": {"group": "compile", "doc": "the module called directly"},
        "vmap": {"group": "subsystems", "doc": "`torch.vmap` over a batch"},
        "compile": {"group": "compile", "doc": "`torch.compile`"},
    }
    records = [make_record("add", "raw_jit", p, status="pass") for p in ("eager", "vmap", "compile")]
    chart = render(results(*records, paths=paths))
    assert tables(chart, "Summary") == {
        "compile": {"style \\ path": ["eager", "compile"], "raw_jit": ["✅", "✅"]},
        "subsystems": {"style \\ path": ["vmap"], "raw_jit": ["✅"]},
    }
    legend = section(chart, "Legend")
    assert "- **subsystems**\n  - `vmap`: `torch.vmap` over a batch" in legend
    assert "this results file has no environment.paths" not in legend
    # an old file: groups and definitions from this harness's path registry, and it says so
    old = render(results(*records))
    assert list(tables(old, "Summary")) == ["compile", "subsystems"]
    assert "from this harness's paths: this results file has no environment.paths" in section(old, "Legend")
    assert "  - `eager`: The style called directly" in section(old, "Legend")


def test_top_of_the_chart_answers_first_and_an_interpreter_run_says_so():
    chart = render(results(make_record("add", "raw_jit", "eager", status="pass"), triton_interpret=True))
    order = [chart.index(f"## {title}") for title in ("The answer", GOALS, "Summary", "Legend")]
    assert order == sorted(order)
    assert "INTERPRETER RUN: TRITON_INTERPRET=1" in chart.split("## ")[0]
    assert "INTERPRETER" not in render(results(make_record("add", "raw_jit", "eager", status="pass")))


def test_history_marks_subsystem_and_flaky_cells():
    def run(torch: str, **fields) -> dict:
        return {
            "environment": {"torch": torch, "triton": "3", "device": "cpu"},
            "cells": [make_record("sin", "raw_jit", "flop_counter", **fields)],
        }

    subsystem = {"status": "wrong", "error_type": "SubsystemMismatch", "error": "flops"}
    text = render_history([run("2.13.0", **subsystem), run("2.15.0", status="pass", outcomes=["pass", "error"])])
    assert "| sin-raw_jit-flop_counter | 2.13.0 🔇 → 2.15.0 ✅ 1/2, ❌ 1/2 🎲 |" in text


def test_the_committed_reference_renders_with_its_answers():
    """reports/results.json, the committed GPU reference, renders with its own goals, sources and marks."""
    from harness.records.files import read_results

    data = read_results(REPO / "reports" / "results.json")
    chart = chart_of(data)
    goals = goal_rows(chart)
    assert list(goals) == list(data.environment["goals"])
    assert goals["run eagerly"][1] != "none"
    assert "raw_jit" not in goals["tensor subclasses"][1] and "**triton_op**" in goals["tensor subclasses"][1]
    docs = next(line for line in chart.splitlines() if line.startswith("## Contradicts the docs"))
    claims = rows(section(chart, docs[3:]))[1:]
    assert {row[2] for row in claims} == {"recipe", "blog"}
    assert len(claims) < 60 and len({row[0] for row in claims}) > 10  # grouped by claim, not a row per cell
    lines = chart.splitlines()
    # read on GitHub, whole (its 190 notes, folded, one per failure and style and path: each links its own script)
    assert len(lines) <= 900 and max(map(len, lines)) <= 400 and "&lt;" not in chart
    summary = table(chart, "Summary")
    assert "0/9 🔇" in summary["raw_jit"]  # its flop_counter cells are subsystem blind, not wrong


def test_the_interpreter_banner_describes_the_run_it_heads():
    drivers = {"status": "error", "error_type": "RuntimeError", "error": "0 active drivers ([]).", "stage": "run"}
    passing = render(
        results(
            make_record("add", "autotune", "eager", status="pass"),
            make_record("add", "raw_jit", "eager", status="pass"),
            triton_interpret=True,
        )
    )
    banner = unwrap(passing.split("## ")[0])
    assert "INTERPRETER RUN" in banner and "first launch" not in banner
    assert "the 1 autotuned cells ran every config once" in banner
    failing = render(
        results(
            make_record("add", "autotune", "eager", **drivers),
            make_record("add", "triton_op_autotune", "eager", status="pass"),
            triton_interpret=True,
        )
    )
    assert "1 of 2 autotuned cells failed at their first launch" in unwrap(failing.split("## ")[0])


def test_long_text_is_wrapped_unescaped_and_collapsed():
    url = "https://pytorch.org/docs/main/generated/exportdb/index.html#unknown-python-type"
    error = "x " * 150 + f"Dynamo cannot trace '<unknown module>.set.add', see: {url}"
    chart = render(results(make_record("add", "raw_jit", "eager", status="error", error_type="E", error=error)))
    prose_lines = [line for line in chart.splitlines() if not line.startswith("|")]
    assert max(map(len, prose_lines)) <= 400 and url in chart.split()  # a URL is never cut
    assert "&lt;" not in chart and "\\<unknown module>" in chart
    assert "<details><summary>1 notes: each failure's first sentence</summary>" in section(chart, "Notes")


def test_each_cell_is_said_once_in_the_summary_or_where_the_cases_differ():
    other = {**BOOM, "error": "other."}
    cases = ("add", "sin", "softmax", "matmul")
    chart = render(
        results(
            *cells(
                {
                    "raw_jit": {"eager": PASS, "compile": BOOM, "dynamic": {"sin": BOOM}},
                    "autotune": {"eager": {"add": FLAKY_WRONG}, "compile": {"add": other, "sin": other}},
                    "triton_op": {"compile": {**{c: BOOM for c in cases}, "add": other}},
                },
                cases=cases,
            )
        )
    )
    assert table(chart, "Summary") == {
        "style \\ path": ["eager", "compile", "dynamic"],
        "raw_jit": ["✅", "❌ [2]", "3/4"],  # every case alike: their mark and note
        "autotune": ["3/4 ❗", "2/4", "·"],
        "triton_op": ["·", "0/4", "·"],
    }
    # the cells whose cases differ, once each; most cases alike, when none passes: "the other N"
    assert differ(chart) == {
        "raw_jit dynamic": "❌ [2]: sin",
        "autotune eager": "❗WRONG [1]: add",
        "autotune compile": "❌ [3]: add, sin",
        "triton_op compile": "❌ [3]: add; ❌ [2]: the other 3",
    }
    assert "per case: add 2 of 6 · sin 2 of 6 · softmax 4 of 6 · matmul 4 of 6." in section(chart, "Summary")
    assert not any(f"## {case}" in chart for case in cases)  # no table per case repeating the summary


def test_a_flaky_cell_is_marked_by_its_record_status_with_every_rate():
    """Issue 44: a record whose status is pass (its first attempt) with a wrong later attempt was marked
    ❗WRONG 1/3, as a wrong record is; it leads with its pass rate now, the wrong numbers still shown."""
    from harness.records.record import Record
    from harness.report.marks import mark

    def record(status: str, outcomes: list[str]) -> Record:
        return Record.from_dict(
            make_record("sin", "raw_jit", "eager", **{**FLAKY_WRONG, "status": status}, outcomes=outcomes)
        )

    assert mark(record("pass", ["pass", "wrong", "pass"])) == "✅ 2/3, ❗WRONG 1/3 🎲"
    assert mark(record("pass", ["pass", "error", "wrong"])) == "✅ 1/3, ❗WRONG 1/3, ❌ 1/3 🎲"
    assert mark(record("wrong", ["wrong", "pass", "pass"])) == "❗WRONG 1/3 🎲"  # as the legend says
    assert mark(record("wrong", ["wrong", "wrong"])) == "❗WRONG 2/2"
