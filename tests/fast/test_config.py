"""matrix.toml validation: the real file loads; every kind of bad input is one line naming file and key."""

from pathlib import Path

import pytest

from harness.errors import InputError
from harness.kernel.styles import KNOWN_STYLES
from harness.matrix.config import load_matrix, select
from tests.conftest import REPO, TOLERANCES, harness_main

GOOD_HEAD = 'cases = ["add"]\nstyles = ["raw_jit"]\n[paths]\neager = { device = "cuda", timeout = 10 }\n'
AXES = 'decorators = ["jit", "autotune"]\nwrappers = ["launcher", "custom_op"]\ncontrol = true\n'
AXES_HEAD = GOOD_HEAD.replace('styles = ["raw_jit"]\n', AXES)


def test_default_matrix_has_every_cell():
    matrix = load_matrix(REPO / "matrix.toml")
    ids = matrix.cell_ids()
    # every case x style x path once, in matrix.toml's order: 9 x 13 x 23
    assert ids == [f"{c}-{s}-{p.id}" for c in matrix.cases for s in matrix.styles for p in matrix.paths]
    assert (len(matrix.cases), len(matrix.styles), len(matrix.paths), len(ids)) == (9, 13, 23, 2691)
    assert "sin-triton_op-aoti_standalone" in ids
    assert [spec.id for spec in matrix.paths if spec.device == "cpu"] == ["cpu_fallback", "cpu_compile"]


@pytest.mark.parametrize(
    ("text", "key", "problem"),
    [
        ("cases = [", "(syntax)", ""),  # the parser's own words vary by Python version
        ("colour = 1\n" + GOOD_HEAD + TOLERANCES, "colour", "unknown key"),
        (GOOD_HEAD.replace('styles = ["raw_jit"]\n', "") + TOLERANCES, "styles", "missing"),
        (GOOD_HEAD.replace('"raw_jit"', '"raw_jit", "raw_jit"') + TOLERANCES, "styles[1]", "duplicate id"),
        (GOOD_HEAD.replace('"raw_jit"', '"raw_jitt"') + TOLERANCES, "styles[0]", "unknown id 'raw_jitt'"),
        (GOOD_HEAD.replace('"add"', '"addd"') + TOLERANCES, "cases[0]", "unknown case 'addd'"),
        (GOOD_HEAD.replace('["add"]', '"add"') + TOLERANCES, "cases", "expected a non-empty list"),
        (GOOD_HEAD.replace("eager =", "eagre =") + TOLERANCES, "paths.eagre", "unknown id 'eagre'"),
        (GOOD_HEAD.replace("timeout = 10", 'timeout = "10"') + TOLERANCES, "paths.eager.timeout", "expected a number"),
        (GOOD_HEAD.replace("timeout = 10", "timeout = -1") + TOLERANCES, "paths.eager.timeout", "expected a number"),
        (GOOD_HEAD.replace('"cuda"', '"tpu"') + TOLERANCES, "paths.eager.device", "expected one of"),
        (GOOD_HEAD.replace("timeout = 10", "timeout = 10, retries = 2") + TOLERANCES, "paths.eager.retries", "unknown"),
        (GOOD_HEAD + TOLERANCES.replace("float32", "float64"), "tolerances.float32", "missing (case 'add'"),
        (GOOD_HEAD + TOLERANCES.replace(", rtol = 1e-5 }", " }"), "tolerances.float32.rtol", "missing"),
        (GOOD_HEAD.replace('"add"', '"add-x"') + TOLERANCES, "cases[0]", "bad id"),
        (GOOD_HEAD.replace("timeout = 10", "timeout = 10, examples = 0") + TOLERANCES, "paths.eager.examples", "whole"),
        (GOOD_HEAD + TOLERANCES + "[environment]\nX = 1\n", "environment.X", "expected a string"),
        (GOOD_HEAD.replace('"add"', '"harness.errors"') + TOLERANCES, "cases[0]", "defines neither CASE nor CASES"),
        (AXES_HEAD.replace('"autotune"]', '"autotune", "jitt"]') + TOLERANCES, "decorators[2]", "unknown id 'jitt'"),
        (AXES_HEAD.replace('"autotune"]', '"autotune", "jit"]') + TOLERANCES, "decorators[2]", "duplicate id 'jit'"),
        (AXES_HEAD.replace('"custom_op"]', '"customop"]') + TOLERANCES, "wrappers[1]", "unknown id 'customop'"),
        (AXES_HEAD.replace('"custom_op"]', '"launcher"]') + TOLERANCES, "wrappers[1]", "duplicate id 'launcher'"),
        (AXES_HEAD.replace("wrappers = [", "wrapers = [") + TOLERANCES, "wrapers",
         "unknown key (did you mean 'wrappers'?"),
        (AXES_HEAD.replace('wrappers = ["launcher", "custom_op"]\n', "") + TOLERANCES, "wrappers", "missing"),
        (AXES_HEAD.replace('["jit", "autotune"]', "[]") + TOLERANCES, "decorators", "expected a non-empty list"),
        (AXES_HEAD.replace("control = true", 'control = "yes"') + TOLERANCES, "control", "expected true or false"),
        ('styles = ["raw_jit"]\n' + AXES_HEAD + TOLERANCES, "decorators", "either styles or the axes"),
        (GOOD_HEAD + TOLERANCES + '[goals]\n"go" = ["eagre"]\n', "goals.go[0]", "unknown id 'eagre'"),
        (GOOD_HEAD + TOLERANCES + '[goals]\n"go" = "eager"\n', "goals.go", "expected a non-empty list"),
        (
            GOOD_HEAD + TOLERANCES + '[goals]\n"go" = ["eager"]\n[goal_sets]\n"both" = ["go", "og"]\n',
            "goal_sets.both[1]",
            "unknown goal 'og' (the goals: 'go')",
        ),
        (GOOD_HEAD + TOLERANCES + '[goals]\n"go" = ["eager"]\n[goal_sets]\n"x" = []\n', "goal_sets.x", "non-empty"),
        (GOOD_HEAD + TOLERANCES + '[goal_sets]\n"x" = ["go"]\n', "goal_sets.x[0]", "declare [goals] first"),
        (GOOD_HEAD + TOLERANCES + "[run]\nreruns = -1\n", "run.reruns", "whole number >= 0"),
        (GOOD_HEAD + TOLERANCES + "[run]\nrerun = 1\n", "run.rerun", "unknown key"),
        (
            GOOD_HEAD.replace('"add"', '"tests.fixtures.good", "tests.fixtures.good"') + TOLERANCES,
            "cases[1]",
            "duplicate id",
        ),
    ],
)
def test_bad_matrix_names_file_and_key(tmp_path: Path, text: str, key: str, problem: str):
    file = tmp_path / "bad.toml"
    file.write_text(text)
    with pytest.raises(InputError) as raised:
        load_matrix(file)
    message = str(raised.value)
    assert message.startswith(f"{file}: {key}: "), message
    assert problem in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("text", "key", "problem"),
    [
        (GOOD_HEAD.replace('"raw_jit"', '"raw_jitt"'), "styles[0]", "unknown id 'raw_jitt' (did you mean 'raw_jit'?)"),
        (GOOD_HEAD.replace("eager =", "eagre ="), "paths.eagre", "unknown id 'eagre' (did you mean 'eager'?)"),
        (GOOD_HEAD.replace('"add"', '"addd"'), "cases[0]", "unknown case 'addd' (did you mean 'add'?)"),
        (AXES_HEAD.replace('"autotune"]', '"autotun"]'), "decorators[1]", "unknown id 'autotun' (did you mean"),
        (AXES_HEAD.replace('"custom_op"]', '"customop"]'), "wrappers[1]", "unknown id 'customop' (did you mean"),
        (GOOD_HEAD + '[goals]\n"go" = ["eagr"]\n', "goals.go[0]", "unknown id 'eagr' (did you mean 'eager'?)"),
        (
            GOOD_HEAD + '[goals]\n"deploy" = ["eager"]\n[goal_sets]\n"s" = ["deploi"]\n',
            "goal_sets.s[0]",
            "unknown goal 'deploi' (did you mean 'deploy'?)",
        ),
    ],
)
def test_a_typo_in_a_matrix_file_gets_did_you_mean_as_on_the_command_line(tmp_path: Path, text, key, problem):
    file = tmp_path / "typo.toml"
    file.write_text(text + TOLERANCES)
    with pytest.raises(InputError) as raised:
        load_matrix(file)
    assert str(raised.value).startswith(f"{file}: {key}: {problem}"), str(raised.value)


def test_missing_file(tmp_path: Path):
    with pytest.raises(InputError, match=r"nope.toml: \(file\): no such file"):
        load_matrix(tmp_path / "nope.toml")


@pytest.mark.parametrize("command", [["list"], ["run"]])
def test_cli_bad_matrix_is_one_line_exit_2(tmp_path: Path, command: list[str]):
    file = tmp_path / "bad.toml"
    file.write_text(GOOD_HEAD.replace('"raw_jit"', '"nope"') + TOLERANCES)
    done = harness_main(*command, "--matrix", str(file))
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        == f"error: {file}: styles[0]: unknown id 'nope' (known: " + done.stderr.split("(known: ")[1].strip()
    )
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_list_prints_every_id_in_matrix_order():
    done = harness_main("list")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == load_matrix(REPO / "matrix.toml").cell_ids()


def test_list_of_a_selection_that_matches_no_cell_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]):
    """As ``run`` and ``report`` of the same selection: an empty listing would read as an empty matrix."""
    from harness.__main__ import main

    assert main(["list", "--matrix", str(REPO / "matrix.toml"), "-k", "nothing_is_named_so"]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {REPO / 'matrix.toml'}: cells: no cell matches the selection\n"
    assert main(["list", "--matrix", str(REPO / "matrix.toml"), "-k", "add and eager"]) == 0
    assert "add-raw_jit-eager" in capsys.readouterr().out.split()


def test_list_into_a_reader_that_stops_early_exits_141_without_a_traceback(monkeypatch: pytest.MonkeyPatch):
    """``list | head``: a BrokenPipeError traceback on stderr, at the write or at the exit's flush."""
    import os
    import sys

    from harness.__main__ import main

    read, write = os.pipe()
    os.close(read)  # the reader has gone
    with open(write, "w", buffering=1) as stdout:
        monkeypatch.setattr(sys, "stdout", stdout)
        assert main(["list", "--matrix", str(REPO / "matrix.toml")]) == 141
        stdout.write("more\n")  # the interpreter's exit flushes this: the pipe's end now writes nowhere
        stdout.flush()


RECIPE = '[docs.recipe]\nsource = "the recipe"\n[docs.recipe.expect]\n'


@pytest.mark.parametrize(
    ("docs", "key", "problem"),
    [
        (RECIPE + 'launcher = { eager = "yes" }\n', "docs.recipe.expect.launcher.eager", "expected true or false"),
        (RECIPE + "triton_op = { eager = true }\n", "docs.recipe.expect.triton_op", "not a wrapper (launcher"),
        (RECIPE + "autotune = { eager = true }\n", "docs.recipe.expect.autotune", "or style (raw_jit) of"),
        (RECIPE + "jit = { eager = true }\n", "docs.recipe.expect.jit", "not a wrapper"),
        (RECIPE + "raw_jit = { compile = true }\n", "docs.recipe.expect.raw_jit.compile", "not a path of this"),
        (RECIPE + "raw_jit = { subclass_eager = true }\n", "docs.recipe.expect.raw_jit.subclass_eager", "not a path"),
        ("[docs.recipe]\nexpect = { raw_jit = { eager = true } }\n", "docs.recipe.source", "missing"),
        ('[docs.recipe]\nsource = "x"\nexpect = {}\n', "docs.recipe.expect", "expected a non-empty table"),
        (
            '[docs.recipe]\nsource = "x"\nurl = "y"\nexpect = { raw_jit = { eager = true } }\n',
            "docs.recipe.url",
            "unknown",
        ),
        ('[docs]\nsource = "x"\n[docs.expect]\nraw_jit = { eager = true }\n', "docs.source", "expected a table"),
        (
            RECIPE + 'launcher = { eager = true }\n[docs.blog]\nsource = "b"\n[docs.blog.expect]\n'
            "raw_jit = { eager = false }\n",
            "docs.blog.expect.raw_jit.eager",
            "raw_jit-eager: False contradicts docs.recipe.expect.launcher.eager = True",
        ),
    ],
)
def test_bad_docs_claims_name_the_key(tmp_path: Path, docs: str, key: str, problem: str):
    file = tmp_path / "bad.toml"
    file.write_text(GOOD_HEAD + TOLERANCES + docs)
    with pytest.raises(InputError) as raised:
        load_matrix(file)
    message = str(raised.value)
    assert message.startswith(f"{file}: {key}: ") and problem in message, message
    assert "\n" not in message


def test_default_matrix_declares_the_recipe_and_blog_claims():
    docs = load_matrix(REPO / "matrix.toml").docs
    assert set(docs["sources"]) == {"recipe", "blog"}
    claims = docs["claims"]
    assert claims["custom_op"]["aoti_strict"] == {"supported": False, "source": "recipe"}
    assert claims["raw_jit"]["cpu_fallback"] == {"supported": False, "source": "recipe"}
    assert claims["raw_jit"]["export_nonstrict"] == {"supported": False, "source": "blog"}
    assert claims["triton_op_autotune"]["export_nonstrict"] == {"supported": True, "source": "blog"}
    # the recipe's "heuristics cannot be used after autotune": for the wrappers torch.compile traces into
    assert claims["autotune_heuristics"]["compile"] == {"supported": False, "source": "recipe"}
    assert claims["triton_op_autotune_heuristics"]["dynamic"]["supported"] is False
    assert claims["custom_op_autotune_heuristics"]["compile"]["supported"] is True
    assert claims["heuristics_autotune"]["compile"]["supported"] is True
    assert "control" not in claims


def test_cli_unknown_case_module_is_one_line_exit_2():
    done = harness_main("run", "--cases", "nosuch.kernels", "--paths", "cpu_fallback")
    assert done.returncode == 2, done.stdout[-1000:]
    assert done.stderr.startswith("error: command line: --cases[0]: unknown case 'nosuch.kernels'")
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_styles_may_name_a_style_the_matrix_does_not_list():
    """A library's ops beside the default matrix: --styles as_shipped runs the op as shipped (the default matrix
    lists only the re-wrapped styles and the control); a typo is still one line."""
    matrix = load_matrix(REPO / "matrix.toml")
    assert "as_shipped" not in matrix.styles
    chosen = select(matrix, styles=["as_shipped", "control"])
    assert chosen.styles == ("control", "as_shipped") and chosen.style_axes["as_shipped"] == KNOWN_STYLES["as_shipped"]
    assert select(matrix).styles == matrix.styles
