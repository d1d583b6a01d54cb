"""Which style meets all of a user's goals: ``python -m harness which``, the chart's goal sets, an in-place case
that no style can train, and the selection of cells by ``report`` and ``list``."""

import json
from pathlib import Path

from harness.matrix.config import load_matrix
from tests.conftest import REPO, harness_main
from tests.fast.test_chart import BOOM, PASS, cells
from tests.fast.test_records_report import render, results, section

GOALS = {"fullgraph": ["fullgraph"], "train with compile": ["train_compile"], "deploy": ["aoti_standalone"]}
CANNOT_TRAIN = {
    "status": "error",
    "error_type": "RuntimeError",
    "error": "harness::add_inplace_triton_op writes into x: triton_op cannot train it (Cannot register)",
    "stage": "build",
}


def matrix_results(**env: object) -> dict:
    """raw_jit meets every goal; triton_op fails train_compile on the in-place case only; autotune fails deploy."""
    spec = {
        "raw_jit": {"fullgraph": PASS, "train_compile": PASS, "aoti_standalone": PASS},
        "triton_op": {"fullgraph": PASS, "train_compile": {"add": CANNOT_TRAIN}, "aoti_standalone": PASS},
        "autotune": {"fullgraph": PASS, "train_compile": PASS, "aoti_standalone": {"sin": BOOM}},
    }
    return results(*cells(spec), goals=GOALS, **env)


def write(tmp_path: Path, data: dict) -> Path:
    file = tmp_path / "results.json"
    file.write_text(json.dumps(data))
    return file


def test_which_answers_with_the_styles_meeting_every_goal_and_the_near_misses(tmp_path: Path):
    file = write(tmp_path, matrix_results())
    done = harness_main("which", "--results", str(file), "--goals", "fullgraph,deploy", "--goals", "train with compile")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "use: raw_jit (passed every case on every path of every goal, on every attempt)" in lines
    assert "  autotune misses deploy: sin ❌" in lines and "  triton_op misses train with compile: add ❌" in lines
    assert not any(line.startswith("in-place") for line in lines)  # raw_jit trains it: nothing blocked


def test_an_in_place_case_no_style_trains_is_named_and_the_functional_cases_answered(tmp_path: Path):
    data = matrix_results()
    for cell in data["cells"]:
        if cell["style"] != "triton_op" and cell["path"] == "train_compile" and cell["case"] == "add":
            cell.update(status="wrong", error_type="Mismatch", error="output: 9 / 9", stage="compare")
    file = write(tmp_path, data)
    done = harness_main("which", "--results", str(file), "--goals", "train with compile")
    lines = done.stdout.splitlines()
    assert "use: none (passed every case on every path of every goal, on every attempt)" in lines
    assert lines[-2].startswith("in-place: no style meets train with compile on the in-place case(s) add (an op")
    assert lines[-1] == "for the functional cases (sin, softmax): use: raw_jit, triton_op, autotune"
    # --cases narrows the question: the functional cases alone have an answer, and no in-place line
    only = harness_main("which", "--results", str(file), "--goals", "train with compile", "--cases", "sin,softmax")
    assert "use: raw_jit, triton_op, autotune (passed" in only.stdout and "in-place" not in only.stdout


def test_which_rejects_an_unknown_goal_or_case_in_one_line(tmp_path: Path):
    file = write(tmp_path, matrix_results())
    done = harness_main("which", "--results", str(file), "--goals", "fullgrph")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: command line: --goals: unknown goal 'fullgrph' (did you mean 'fullgraph'?)")
    bad = harness_main("which", "--results", str(file), "--goals", "deploy", "--cases", "sinn")
    assert bad.returncode == 2 and "unknown case 'sinn' (did you mean 'sin'?)" in bad.stderr


def test_which_of_a_run_whose_matrix_declares_no_goals_says_so(tmp_path: Path):
    """Not "unknown goal 'run eagerly' (known: )"."""
    data = matrix_results()
    data["environment"]["goals"] = {}
    file = write(tmp_path, data)
    done = harness_main("which", "--results", str(file), "--goals", "run eagerly")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"error: {file}: environment.goals: the run's matrix declares no goals ([goals]) to meet\n"


def test_the_chart_answers_each_goal_set_of_the_matrix():
    sets = {"ship it": ["fullgraph", "train with compile", "deploy"], "nope": ["fullgraph", "unknown goal"]}
    text = section(render(matrix_results(goal_sets=sets)), "Which style for a set of goals")
    assert "- **ship it** (fullgraph + train with compile + deploy): use **raw_jit**" in text
    assert "  - near miss: `triton_op` misses train with compile: add ❌" in text
    assert "nope" not in text  # a set naming a goal the run does not declare is left out
    assert "this checkout's matrix.toml" not in text


def test_the_matrix_names_its_goal_sets_and_they_name_its_goals():
    matrix = load_matrix(REPO / "matrix.toml")
    assert matrix.goal_sets and all(set(goals) <= set(matrix.goals) for goals in matrix.goal_sets.values())


def test_report_and_list_select_cells(tmp_path: Path):
    file = write(tmp_path, matrix_results())
    out = tmp_path / "chart.md"
    done = harness_main("report", "--results", str(file), "--out", str(out), "--styles", "raw_jit", "-k", "sin")
    assert done.returncode == 0, done.stderr
    chart = out.read_text()
    summary = section(chart, "Summary")
    assert "per case: sin 3 of 3." in summary and "add" not in summary and "autotune" not in summary
    listed = harness_main("list", "--cases", "sin", "--styles", "raw_jit", "-k", "eager and not train")
    assert listed.stdout.split() == ["sin-raw_jit-eager", "sin-raw_jit-subclass_eager"]
    typo = harness_main("list", "--styles", "raw_ji")
    assert typo.returncode == 2 and "unknown id 'raw_ji' (did you mean 'raw_jit'?)" in typo.stderr
    module = harness_main("list", "--cases", "sinn")
    assert module.returncode == 2 and module.stderr.rstrip().endswith("did you mean 'sin'?")


def test_which_answers_only_the_question_asked(tmp_path: Path):
    """Issue 44: no goal, no case, a goal with no paths: one line, exit 2 (not every style)."""
    data = matrix_results()
    data["environment"]["goals"] = {**GOALS, "empty": []}
    file = write(tmp_path, data)
    for given, key in [
        (["--goals", ""], "command line: --goals: no goal given"),
        (["--goals", ","], "command line: --goals: no goal given"),
        (["--goals", "deploy", "--cases", ""], "command line: --cases: no case given"),
        (["--goals", "deploy", "--styles", " , "], "command line: --styles: no style given"),
        (["--goals", "empty"], f"{file}: environment.goals.empty: the goal names no paths"),
    ]:
        done = harness_main("which", "--results", str(file), *given)
        assert done.returncode == 2 and done.stdout == "", (given, done.stdout)
        assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith(f"error: {key}"), done.stderr
    chart = harness_main("report", "--results", str(file), "--out", str(tmp_path / "c.md"), "--cases", "")
    assert chart.returncode == 2 and "--cases: no case given" in chart.stderr


def test_a_goal_whose_paths_did_not_run_is_not_answered(tmp_path: Path):
    data = matrix_results()
    data["environment"]["goals"] = {**GOALS, "dynamic": ["dynamic"]}
    file = write(tmp_path, data)
    done = harness_main("which", "--results", str(file), "--goals", "deploy,dynamic")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == (
        "use: not answered, not measured (dynamic needs dynamic: not run in these results; run them: --paths dynamic)"
    )
    assert "none" not in done.stdout


def test_a_goal_name_with_a_comma_is_bad_input(tmp_path: Path):
    matrix = tmp_path / "m.toml"
    text = (REPO / "matrix.toml").read_text()
    matrix.write_text(text.replace("[goals]\n", '[goals]\n"eager, then compile" = ["eager"]\n', 1))
    done = harness_main("list", "--matrix", str(matrix))
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert f"{matrix}: goals.'eager, then compile': bad goal name: holds a comma" in done.stderr


def test_which_marks_a_style_wrong_elsewhere_orders_by_speed_and_gives_each_near_miss_its_note(tmp_path: Path):
    from harness.records.schema import to_json
    from tests.conftest import make_record
    from tests.fast.test_speed_chart import timing

    data = matrix_results()
    wrong = {"status": "wrong", "error_type": "Mismatch", "error": "output: not close", "stage": "compare"}
    data["cells"].append(make_record("add", "raw_jit", "eager", **wrong))
    for cell in data["cells"]:  # raw_jit twice autotune's GPU time on fullgraph
        if cell["path"] == "fullgraph":
            cell["timing"] = to_json(timing(20.0 if cell["style"] == "raw_jit" else 10.0))
    file = write(tmp_path, data)
    done = harness_main("which", "--results", str(file), "--goals", "fullgraph")
    lines = done.stdout.splitlines()
    use = next(line for line in lines if line.startswith("use: "))
    assert use.startswith("use: autotune 1.00×, triton_op 1.00×, raw_jit 2.00× ⚠️ (passed")
    assert "  order: fastest first: GPU time on fullgraph, launch-bound" in "\n".join(lines)
    assert "  ⚠️ raw_jit gives silently wrong numbers elsewhere: add on eager" in lines
    done = harness_main("which", "--results", str(file), "--goals", "deploy")
    near = done.stdout.splitlines()
    at = near.index("  autotune misses deploy: sin ❌")
    assert near[at + 1].startswith("    note: error at run: RuntimeError: boom")

