"""The docs site against the code: its generated pages are what docs/gen.py writes now, and every code block of
the written pages is run (python), loaded (toml, json), a repository file (yaml) or, for bash, parsed command by
command by the harness's own parsers, nox sessions and pyproject extras. The tutorials' blocks run for real in
tests/process/test_tutorials.py."""

import ast
import contextlib
import importlib.util
import io
import json
import re
import shlex
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

from harness.__main__ import parser
from harness.cell.paths import PATHS
from harness.errors import InputError
from harness.kernel.styles import KNOWN_STYLES
from harness.matrix.builtin import MATRIX_FILE
from harness.matrix.config import load_matrix
from harness.plugin.options import declare
from tests.conftest import REPO
from tests.docblocks import FENCE, SNIPPET, TUTORIALS, Block, blocks, pages

PYTEST_FLAGS = {"-k", "-n", "-q", "-x", "-p", "--junitxml", "--collect-only"}  # pytest's own, as the docs use them
ALWAYS = {"cd", "export", "mkdocs"}  # commands with nothing of this repository's to check


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_gen", REPO / "docs" / "gen.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generated_pages_are_what_the_generator_writes_now() -> None:
    gen = load_generator()
    stale = [name for name, page in gen.PAGES.items() if (gen.REFERENCE / name).read_text() != page()]
    assert not stale, f"docs/reference/{stale}: stale; run python docs/gen.py and commit the pages"
    assert sorted(gen.PAGES) == sorted(Path(page).name for page in pages(generated=True))


def test_the_generator_check_names_a_stale_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gen = load_generator()
    monkeypatch.setattr(gen, "REFERENCE", tmp_path)
    assert gen.main([]) == 0 and gen.main(["--check"]) == 0
    (tmp_path / "cli.md").write_text((tmp_path / "cli.md").read_text().replace("--report-dir", "--reports"))
    assert gen.main(["--check"]) == 1


def test_the_case_page_has_every_field_with_its_docs() -> None:
    import dataclasses

    from harness.case import Case

    page = (REPO / "docs" / "reference" / "case.md").read_text()
    for field in dataclasses.fields(Case):
        assert f"## `{field.name}`" in page
    assert "No item of the docstring names it" not in page


COMMITTED_RUN = "reports/results.json"  # this repository's reference run: never the run a docs example gates


def harness_options() -> set[str]:
    flags: set[str] = set()
    declare(lambda flag, **_: flags.add(flag))
    return flags


def nox_sessions() -> set[str]:
    tree = ast.parse((REPO / "noxfile.py").read_text())
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef) and node.decorator_list}


def check_run(args: list[str]) -> None:
    """``run``'s arguments (pytest's): the harness's options and the pytest ones the docs use, known ids."""
    known = harness_options() | PYTEST_FLAGS
    for index, arg in enumerate(args):
        flag = arg.split("=")[0]
        assert not arg.startswith("-") or flag in known, f"run: unknown option {flag}"
        value = args[index + 1] if index + 1 < len(args) else ""
        for axis, ids in (("--styles", KNOWN_STYLES), ("--paths", PATHS)):
            if flag == axis:
                unknown = set(value.split(",")) - set(ids)
                assert not unknown, f"run {axis}: unknown {sorted(unknown)}"


def check_harness(args: list[str]) -> None:
    if args[:1] == ["run"]:
        check_run(args[1:])
        return
    with contextlib.redirect_stderr(io.StringIO()) as errors:
        try:
            parsed = parser().parse_args(args)
        except SystemExit:  # --help
            raise AssertionError(f"python -m harness {shlex.join(args)}: {errors.getvalue().strip()}") from None
        except InputError as error:
            raise AssertionError(f"python -m harness {shlex.join(args)}: {error}") from None
    current = getattr(parsed, "current", None)
    assert str(current) != COMMITTED_RUN, f"gate: --current {COMMITTED_RUN} is this repository's reference run"
    goals = tomllib.loads((REPO / MATRIX_FILE).read_text())["goals"]
    for goal in ",".join(getattr(parsed, "goals", None) or []).split(","):
        assert not goal or goal in goals, f"which: {goal!r} is no goal of the packaged matrix"


def check_command(command: str) -> None:
    """One command of a bash block, checked against what it names; AssertionError saying what is wrong."""
    words = shlex.split(command, comments=True)
    while words and "=" in words[0] and not words[0].startswith("-"):
        words = words[1:]  # VAR=value before the command
    program, args = words[0], words[1:]
    if program in ("python", "python3") and args[:2] == ["-m", "harness"]:
        check_harness(args[2:])
    elif program == "triton-torch-matrix":
        check_harness(args)
    elif program == "pytest":
        check_run(args)
    elif program == "nox" or (program in ("python", "python3") and args[:1] == ["noxw.py"]):
        session = args[args.index("-s") + 1].split("(")[0]
        assert session in nox_sessions(), f"nox: no session {session!r} in noxfile.py"
    elif program in ("python", "python3") and args and args[0].endswith(".py"):
        assert (REPO / args[0]).is_file(), f"no file {args[0]}"
    elif program == "pip":
        extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
        for arg in args:
            if arg.startswith(".["):
                unknown = set(arg[2:].rstrip("]").split(",")) - set(extras)
                assert not unknown, f"pip: no extra {sorted(unknown)} in pyproject.toml"
    else:
        assert program in ALWAYS, f"no check for the command {program!r}: run it in a test, or check it here"


def check_block(block: Block, folder: Path) -> None:
    if block.lang == "bash":
        for command in block.commands():
            check_command(command)
    elif block.lang == "python":
        exec(compile(block.text, block.where, "exec"), {})
    elif block.lang == "toml":
        tomllib.loads(block.text)
        if block.title:
            (folder / block.title).write_text(block.text)
            load_matrix(folder / block.title)
    elif block.lang == "json":
        json.loads(block.text)
    elif block.lang == "yaml":
        match = SNIPPET.match(block.text.strip())
        assert match and (REPO / match["file"]).is_file(), "a yaml block must include a repository file"
    else:
        assert block.lang == "text", f"a block of language {block.lang!r}: give it one this test checks"


@pytest.mark.parametrize("page", [page for page in pages() if page not in TUTORIALS])
def test_every_code_block_of_a_page_runs_or_is_checked(page: str, tmp_path: Path) -> None:
    for block in blocks(page):
        if SNIPPET.match(block.text.strip()) and block.lang != "yaml":
            assert (REPO / SNIPPET.match(block.text.strip())["file"]).is_file()
            continue
        try:
            check_block(block, tmp_path)
        except Exception as error:
            raise AssertionError(f"{block.where}: {error}") from error


def test_the_tutorials_hold_only_blocks_their_test_runs() -> None:
    for page in TUTORIALS:
        assert {block.lang for block in blocks(page)} <= {"python", "bash", "text", "toml"}, page


@pytest.mark.parametrize(
    "command",
    [
        "python -m harness list --casez sin",
        "python -m harness which --goals 'run eagerly,fly'",
        "python -m harness run --paths eager,warp",
        "python3 noxw.py -s docz",
        'pip install -e ".[nodocs]"',
        "make docs",
        "python -m harness gate --baseline mine.json --current reports/results.json",
    ],
)
def test_a_command_the_code_does_not_know_fails_the_check(command: str) -> None:
    with pytest.raises(AssertionError):
        check_command(command)


def test_a_known_command_passes_the_check() -> None:
    check_command('python -m harness which --goals "run eagerly" --results out/results.json')
    check_command("python -m harness run --cases mykernels --interpret --paths eager,train_eager -n 2")


README = REPO / "README.md"


def test_the_readme_is_a_front_page_whose_commands_and_links_hold() -> None:
    text = README.read_text()
    assert len(text.encode()) <= 10 * 1024
    assert "python3 noxw.py -s tests" in text  # the test command .ci/run runs
    for link in re.findall(r"\]\(((?:docs|reports|tests)/[^)#]+)", text):
        assert (REPO / link).is_file(), f"README links {link}, which is not there"
    for match in FENCE.finditer(text):
        assert match["lang"] == "bash"
        for command in Block("README.md", "bash", None, match["body"]).commands():
            check_command(command)


@pytest.mark.parametrize("page", [README, REPO / "docs" / "tutorial" / "kernel.md"], ids=lambda page: page.name)
def test_the_install_is_shown_as_a_package_not_only_editable(page: Path) -> None:
    """A kernel library installs the tool as a package (issue 61: README and the tutorial showed ``pip install -e``
    only); the wheel a clone builds is named as pip names it."""
    text = page.read_text()
    assert re.search(r"^pip install (\.|/path/to/triton-torch-matrix) ", text, re.M), page
    assert "pip install dist/triton_torch_matrix-0.1.0-py3-none-any.whl" in text
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert version == "0.1.0", "the docs name the wheel of version 0.1.0: update them"


def test_the_readme_chart_excerpt_is_rows_of_the_committed_chart() -> None:
    def row(line: str) -> str:
        return "|".join(cell.strip() for cell in line.split("|"))

    chart = {row(line) for line in (REPO / "reports" / "matrix.md").read_text().splitlines()}
    excerpt = [line for line in README.read_text().splitlines() if line.startswith("| ") and "style \\ path" in line]
    excerpt += [line for line in README.read_text().splitlines() if line.startswith("|") and "✅" in line]
    assert len(excerpt) >= 3
    assert [line for line in excerpt if row(line) not in chart] == []


REWRITTEN_ELSEWHERE = {"chart", "speed", "tables", "blocks", "goals", "which", "marks", "meta"}  # harness/report/


def test_the_docs_say_what_the_code_does_not_how_it_came_to_be() -> None:
    """The pages, the README and the harness's docstrings and help describe the code as it is: no "(issue N)" of
    this project's history (a results folder's name, an upstream PyTorch issue aside) and no worker count of one
    machine ("up to 14 cells")."""
    files = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md")), *sorted((REPO / "harness").rglob("*.py"))]
    files = [file for file in files if not (file.parent.name == "report" and file.stem in REWRITTEN_ELSEWHERE)]
    history = re.compile(r"(?<![/\w])(?<!PyTorch )issues? \d+|up to \d+ (?:cells|workers|processes)")
    found = [f"{file.relative_to(REPO)}: {match}" for file in files for match in history.findall(file.read_text())]
    assert not found


@pytest.mark.parametrize(
    ("argv", "damage", "key", "words"),
    [
        (["--chek"], None, "command line: (arguments): ", "unrecognized arguments: --chek (python docs/gen.py --help)"),
        ([], "folder", "{reference}/cli.md: (write): ", "a folder, not a file: no page written"),
        ([], "syntax", "{cases}/broken.py: line 2: ", "does not parse: "),
        (["--check"], "syntax", "{cases}/broken.py: line 2: ", "does not parse: "),
    ],
)
def test_the_generator_refuses_bad_input_in_one_line_and_writes_nothing(
    argv, damage, key, words, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """Issue 61: ``--chek`` (a typo of --check) rewrote the pages and exited 0; a case module that does not parse,
    or a page that is a folder, was a traceback."""
    gen = load_generator()
    reference, cases = tmp_path / "reference", tmp_path / "cases"
    reference.mkdir()
    cases.mkdir()
    monkeypatch.setattr(gen, "REFERENCE", reference)
    if damage == "folder":
        (reference / "cli.md" / "mine").mkdir(parents=True)
    if damage == "syntax":
        (cases / "broken.py").write_text("from harness.case import Case\nCASE = Case(id='x',\n")
        monkeypatch.setattr(gen, "EXAMPLE_SOURCES", (str(cases), *gen.EXAMPLE_SOURCES))
    code = gen.main(argv)
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("error: " + key.format(reference=reference, cases=cases)) and words in err, err
    assert [path.name for path in reference.rglob("*")] == (["cli.md", "mine"] if damage == "folder" else [])
