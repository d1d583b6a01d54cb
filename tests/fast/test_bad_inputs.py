"""Issue 26: every bad input is one line naming the file and the key (or the module and the field) and exit 2,
run in process through ``harness.__main__.main``; none starts a run."""

import json
import sys
from pathlib import Path

import pytest

from harness.__main__ import main
from harness.kernel import casecheck
from tests.conftest import TOLERANCES, make_record

HEAD = 'cases = ["sin"]\nstyles = ["control"]\n[paths]\ncpu_fallback = { device = "cpu", timeout = 60 }\n'
AXES = HEAD.replace('styles = ["control"]', 'decorators = ["jit"]\nwrappers = ["launcher"]')

# a case module (written as tmp_path/badcase.py) -> the key and the words of its one line
CASE_MODULES = {
    "sys_exit": ("import sys\nsys.exit(0)\n", "cases[0]", "does not load: the case called sys.exit(0) at import"),
    "missing_import": ("import no_such_module_26\n", "cases[0]", "does not load: ModuleNotFoundError"),
    "empty_cases": ("CASES = []\n", "cases[0]", "CASES is empty"),
    "backward_none": ("{broken}backward=lambda i, o, g: None)\n", "cases[0]", "backward: returns NoneType"),
    "backward_float": ("{broken}backward=lambda i, o, g: 1.0)\n", "cases[0]", "backward: returns float"),
    "backward_float_item": ("{broken}backward=lambda i, o, g: (1.0,))\n", "cases[0]", "gradient of x is float"),
    "reference_shape": ("{broken}reference=lambda x: x.sin()[:-1])\n", "cases[0]", "the reference returns shape"),
    "hang": ("{broken}make_inputs=hang)\n", "cases[0]", "make_inputs: still running after 1 s"),
    # issue 61: 1.5 and NaN loaded, "16M" was a TypeError naming neither the field nor the value
    "bandwidth_fraction": ("{broken}bandwidth_size=1.5)\n", "cases[0]", "bandwidth_size must be a whole number of 1 or"
                           " more, got 1.5"),
    "bandwidth_nan": ("{broken}bandwidth_size=float('nan'))\n", "cases[0]", "bandwidth_size must be a whole number "
                      "of 1 or more, got nan"),
    "bandwidth_text": ("{broken}bandwidth_size='16M')\n", "cases[0]", "ValueError: case 'badcase': bandwidth_size "
                       "must be a whole number of 1 or more, got '16M'"),
    "bytes_moved_number": ("{broken}bytes_moved=12)\n", "cases[0]", "bytes_moved must be a function (or None), got 12"),
    "flops_text": ("{broken}flops='2n')\n", "cases[0]", "flops must be a function (or None), got '2n'"),
    # a new user's: each a TypeError or IndexError deep in the harness, a traceback and exit 1
    "sizes_empty": ("{broken}sizes=())\n", "cases[0]", "sizes must be a non-empty tuple of whole numbers >= 1, got ()"),
    "sizes_number": ("{broken}sizes=100)\n", "cases[0]", "sizes must be a non-empty tuple of whole numbers >= 1"),
    "configs_none": ("{broken}configs=None)\n", "cases[0]", "configs must be a tuple (or a list), got None"),
    "outputs_text": ("{broken}outputs='1')\n", "cases[0]", "outputs must be a whole number, got '1'"),
    "dtype_text": ("{broken}dtype='float32')\n", "cases[0]", "dtype must be a torch.dtype"),
    "bounds_reversed": ("{broken}size_bounds=(10, 1))\n", "cases[0]", "size_bounds must be (low, high) with 1 <="),
    "mutates_unknown": ("{broken}mutates=('y',))\n", "cases[0]", "mutates ['y'] are not in arg_names"),
    # a library maintainer's typo: the raw TypeError, neither the field meant nor the module's line
    "field_typo": ("from harness.case import Case\n\nCASE = Case(id='t', shiped=abs)\n", "cases[0]",
                   "unexpected keyword argument 'shiped' (did you mean 'shipped'?) (at {file}:3)"),
}
BROKEN = "from tests.fixtures.broken import broken\nfrom tests.fixtures.cases import hang\nCASE = broken('badcase', "


def one_line(capsys: pytest.CaptureFixture, code: int, key: str, words: str, expected_code: int = 2) -> str:
    err = capsys.readouterr().err.strip()
    assert code == expected_code, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert key in err and words in err, err
    return err


@pytest.mark.parametrize("name", list(CASE_MODULES))
def test_a_broken_case_module_is_one_line(name, tmp_path, monkeypatch, capsys):
    source, key, words = CASE_MODULES[name]
    package = tmp_path / f"issue26_{name}"  # a package per test: a module imported once stays in sys.modules
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "badcase.py").write_text(source.replace("{broken}", BROKEN))
    monkeypatch.syspath_prepend(str(tmp_path))
    if name == "hang":  # the others keep the default limit: a first check on a loaded machine may take a second
        monkeypatch.setattr(casecheck, "CHECK_SECONDS", 1.0)
    matrix = tmp_path / "m.toml"
    matrix.write_text(HEAD.replace('"sin"', f'"{package.name}.badcase"') + TOLERANCES)
    words = words.replace("{file}", str(package / "badcase.py"))
    one_line(capsys, main(["list", "--matrix", str(matrix)]), f"{matrix}: {key}: ", words)


def test_a_case_module_whose_import_never_ends_is_one_line_after_a_notice(tmp_path, monkeypatch, capsys):
    """A hang at import (a probe's: ``while True: sleep`` at the top of a module) made ``list`` and ``run`` wait
    forever; a slow import says so, and one past the limit is a case that does not load."""
    from harness.matrix import config

    monkeypatch.setattr(config, "IMPORT_NOTICE_SECONDS", 0.2)
    monkeypatch.setattr(config, "IMPORT_SECONDS", 0.6)
    package = tmp_path / "issue_import_hangs"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "forever.py").write_text("import time\n\nwhile True:\n    time.sleep(0.05)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    matrix = tmp_path / "m.toml"
    matrix.write_text(HEAD.replace('"sin"', f'"{package.name}.forever"') + TOLERANCES)
    code = main(["list", "--matrix", str(matrix)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 2 and "Traceback" not in "".join(err), err
    assert "importing case module 'issue_import_hangs.forever': still running after 0.2 s" in err[0]
    assert f"{matrix}: cases[0]: case " in err[1] and "its import did not end in 0.6 s" in err[1]
    assert "issue_import_hangs.forever" not in sys.modules


@pytest.mark.parametrize(
    ("text", "key", "words"),
    [
        (HEAD + TOLERANCES + '[environment]\n"A=B" = "x"\n', "environment.'A=B'", "without '=' or NUL"),
        (HEAD + TOLERANCES + '[environment]\n"" = "x"\n', "environment.''", "non-empty"),
        (HEAD + TOLERANCES + '[environment]\nA = "x\\u0000y"\n', "environment.A", "NUL"),
        (HEAD + TOLERANCES + '[goals]\ng = ["eager"]\n', "goals.g[0]", "unknown id 'eager'"),
        (AXES.replace("[paths]", 'control = "yes"\n[paths]') + TOLERANCES, "control", "expected true or false"),
        # a probe's: a tolerance of no dtype was kept, and never used
        (HEAD + TOLERANCES + "float99 = { atol = 1, rtol = 1 }\n", "tolerances.float99",
         "unknown dtype 'float99' (did you mean 'float64'?"),
        (HEAD + TOLERANCES + "half = { atol = 1, rtol = 1 }\n", "tolerances.half", "unknown dtype 'half'"),
    ],
)
def test_a_bad_matrix_is_one_line(text, key, words, tmp_path, capsys):
    matrix = tmp_path / "m.toml"
    matrix.write_text(text)
    for command in (["list"], ["run", "--report-dir", str(tmp_path / "out")]):
        one_line(capsys, main([*command, "--matrix", str(matrix)]), f"{matrix}: {key}: ", words)
    assert not (tmp_path / "out").exists()


def test_a_matrix_with_a_byte_order_mark_reads_as_without(tmp_path, capsys):
    """An editor's UTF-8 with BOM: the mark was read as the first key's text, a syntax error at line 1."""
    matrix = tmp_path / "m.toml"
    matrix.write_bytes(b"\xef\xbb\xbf" + (HEAD + TOLERANCES).encode())
    assert main(["list", "--matrix", str(matrix)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "sin-control-cpu_fallback"


def results_file(folder: Path, name: str = "results.json", env: dict | None = None, **record_fields) -> Path:
    record = {**make_record("sin", "control", "cpu_fallback", status="pass"), **record_fields}
    environment = {"torch": "2.13", "triton": "3.7.1", "device": "cpu", "complete": True, **(env or {})}
    file = folder / name
    file.write_text(json.dumps({"schema": 1, "environment": environment, "cells": [record]}))
    return file


@pytest.mark.parametrize(
    ("env", "fields", "key"),
    [
        ({"docs": {"claims": 3}}, {}, "environment.docs.claims"),
        ({"expected_cells": 7}, {}, "environment.expected_cells"),
        ({"goals": {"g": "cpu_fallback"}}, {}, "environment.goals.g"),
        ({"triton_interpret": "no"}, {}, "environment.triton_interpret"),
        ({"paths": {"cpu_fallback": 3}}, {}, "environment.paths.cpu_fallback"),
        ({"paths": {"cpu_fallback": {"group": ["compile"]}}}, {}, "environment.paths.cpu_fallback.group"),
        ({"styles": {"control": {"wrapper": 1}}}, {}, "environment.styles.control.wrapper"),
        ({"settings": {"TORCH_X": 1}}, {}, "environment.settings.TORCH_X"),
        ({"cell_environment": {"OMP_NUM_THREADS": 1}}, {}, "environment.cell_environment.OMP_NUM_THREADS"),
        ({"axes": {"paths": "cpu_fallback"}}, {}, "environment.axes.paths"),
        ({"memory": {"12": {"cells": "3"}}}, {}, "environment.memory.12.cells"),
        ({"docs": {"sources": {"blog": 3}}}, {}, "environment.docs.sources.blog"),
        ({"docs": {"claims": {"control": {"eager": "yes"}}}}, {}, "environment.docs.claims.control.eager"),
        ({"docs": {"claims": {"control": {"eager": {}}}}}, {}, "environment.docs.claims.control.eager.supported"),
        ({}, {"error": 5}, "cells[0].error"),
        ({}, {"outcomes": ["wrong", "fine"]}, "cells[0].outcomes[1]"),
    ],
)
def test_a_badly_typed_results_field_is_one_line(env, fields, key, tmp_path, capsys):
    bad = results_file(tmp_path, env=env, **fields)
    one_line(capsys, main(["report", "--results", str(bad)]), f"{bad}: {key}: ", "")
    # a --reuse run reads it before any cell runs (it crashed after every cell had run)
    matrix = tmp_path / "m.toml"
    matrix.write_text(HEAD + TOLERANCES)
    run = ["run", "--matrix", str(matrix), "--report-dir", str(tmp_path / "out"), "--reuse", str(bad)]
    one_line(capsys, main(run), f"{bad}: {key}: ", "")


def test_a_bad_path_entry_is_refused_by_every_command_that_reads_results(tmp_path, capsys):
    """Issue 36: ``environment.paths.cpu_fallback = 3`` was accepted everywhere, and merge copied it."""
    bad = results_file(tmp_path, "bad.json", env={"paths": {"cpu_fallback": 3}, "shard": "1/2"})
    good = results_file(tmp_path, "good.json", env={"shard": "2/2"})
    key, out = f"{bad}: environment.paths.cpu_fallback: ", tmp_path / "out"
    commands = [
        ["gate", "--baseline", str(bad), "--current", str(good), "--rerun", "0", "--out", str(out / "g.md")],
        ["gate", "--baseline", str(good), "--current", str(bad), "--rerun", "0", "--out", str(out / "g.md")],
        ["merge", str(good), str(bad), "--out", str(out / "merged.json")],
        ["history", str(good), str(bad), "--out", str(out / "h.md")],
    ]
    for command in commands:
        one_line(capsys, main(command), key, "expected a table, got 3")
    assert not out.exists()


def test_merge_refuses_an_interpreter_shard_with_a_device_shard(tmp_path, capsys):
    device = results_file(tmp_path, "a.json", env={"shard": "1/2"})
    interpreted = results_file(tmp_path, "b.json", env={"shard": "2/2", "triton_interpret": True})
    code = main(["merge", str(device), str(interpreted), "--out", str(tmp_path / "m.json")])
    one_line(capsys, code, "environment.triton_interpret: ", "do not merge")
    assert not (tmp_path / "m.json").exists()


def test_gate_known_binary_and_out_folder_are_one_line(tmp_path, capsys, monkeypatch):
    baseline, current = results_file(tmp_path, "a.json"), results_file(tmp_path, "b.json")
    known = tmp_path / "known.toml"
    known.write_bytes(b"\xff\xfe\x00binary")
    gate = ["gate", "--baseline", str(baseline), "--current", str(current), "--rerun", "0"]
    one_line(capsys, main([*gate, "--known", str(known)]), f"{known}: (syntax): ", "")
    one_line(capsys, main([*gate, "--out", str(tmp_path)]), f"{tmp_path}: --out: ", "cannot write")
    # by default the gate's page goes beside a run's own report folder, not over the committed reports/gate.md
    monkeypatch.chdir(tmp_path)
    assert main(gate) == 0
    assert (tmp_path / "reports" / "latest" / "gate.md").exists() and not (tmp_path / "reports" / "gate.md").exists()


@pytest.mark.parametrize(
    ("extra", "key", "words"),
    [
        (["./m.toml::nosuch"], "command line: ", "not a cell of the selection: nosuch"),
        (["{tmp}/m.toml::nosuch"], "command line: ", "not a cell of the selection: nosuch"),
        (["--cases", ","], "command line: --cases: ", "expected comma-separated ids"),
        (["--cases", "nosuch", "--cases", "sin"], "command line: --cases[0]: ", "unknown case 'nosuch'"),
        (["--max-rss-mb", "-5"], "command line: --max-rss-mb: ", "expected a number of MiB >= 0"),
        (["--max-rss-mb", "abc"], "command line: --max-rss-mb: ", "got 'abc'"),
        (["--progress", "abc"], "command line: --progress: ", "expected a number of seconds >= 0 (0: never)"),
        (["--progress=-1"], "command line: --progress: ", "got '-1'"),
        # issue 36: what pytest refused with its usage text and exit 4, or ran to fail every cell
        (["other.toml::sin-control-cpu_fallback"], "command line: other.toml::sin-control-cpu_fallback: ", "not a"),
        (["mtrix.toml::sin-control-cpu_fallback"], "command line: mtrix.toml::", "not a node id of the matrix file"),
        (["-n", "bogus"], "command line: -n: ", "expected a number of workers, auto or logical, got 'bogus'"),
        (["-nbogus"], "command line: -n: ", "got 'bogus'"),
        (["--numprocesses=2x"], "command line: --numprocesses: ", "got '2x'"),
        (["--cache-dir", "m.toml"], "m.toml: --cache-dir: ", "a file, not a folder"),
        (["--cache-dir=m.toml/sub"], "m.toml/sub: --cache-dir: ", "a file, not a folder ({tmp}/m.toml is)"),
        (["--cases", "sinn"], "command line: --cases: ", "did you mean 'sin'?"),
        (["--styles", "contrl"], "command line: --styles: ", "unknown id 'contrl' (did you mean 'control'?)"),
        # issue 44: a traceback (int("²")), pytest's usage text and exit 4, and defaults taken silently
        (["--shard", "²/³"], "command line: --shard: ", "expected I/N with 1 <= I <= N, got '²/³'"),
        (["--shard", "-1/2"], "command line: --shard: ", "got '-1/2'"),
        (["--shard=-1/2"], "command line: --shard: ", "got '-1/2'"),
        (["--shard", "-.5"], "command line: --shard: ", "got '-.5'"),
        (["--shard="], "command line: --shard: ", "got ''"),
        (["--progress="], "command line: --progress: ", "got ''"),
        (["--progress", "-1/2"], "command line: --progress: ", "got '-1/2'"),
        # issue 61: an empty file name was the option left out, a switch given a value pytest's usage text, exit 4
        (["--reuse", ""], "command line: --reuse: ", "expected a file, got ''"),
        (["--baseline="], "command line: --baseline: ", "expected a file, got ''"),
        (["--matrix", " "], "command line: --matrix: ", "expected a file, got ' '"),
        (["--no-timing=yes"], "command line: --no-timing: ", "takes no value (give --no-timing alone), got 'yes'"),
        (["--resume="], "command line: --resume: ", "takes no value (give --resume alone), got ''"),
        (["-k", "sin and ("], "command line: -k: ", "got end of input"),  # was xdist's INTERNALERROR, exit 3
    ],
)
def test_run_arguments_are_checked_before_the_run(extra, key, words, tmp_path, monkeypatch, capsys):
    (tmp_path / "m.toml").write_text(HEAD + TOLERANCES)
    (tmp_path / "other.toml").write_text(HEAD + TOLERANCES)
    monkeypatch.chdir(tmp_path)
    args = [arg.replace("{tmp}", str(tmp_path)) for arg in extra]
    code = main(["run", "--matrix", "m.toml", "--report-dir", "out", *args])
    one_line(capsys, code, key, words.replace("{tmp}", str(tmp_path)))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("command", "key", "words"),
    [
        (["list", "--cases", ""], "command line: --cases: ", "expected comma-separated ids, got ''"),
        (["list", "--styles", " , "], "command line: --styles: ", "expected comma-separated ids, got ' , '"),
        (["gate", "--rerun", "-1"], "command line: --rerun: ", "expected a whole number >= 0, got '-1' (python -m"),
        (["gate", "--rerun=²"], "command line: --rerun: ", "expected a whole number >= 0, got '²'"),
        (["report", "--bogus"], "command line: (arguments): ", "unrecognized arguments: --bogus (python -m harness"),
        (["gate"], "command line: (arguments): ", "the following arguments are required: --baseline"),
    ],
)
def test_a_selection_of_everything_or_an_option_out_of_range_is_one_line(command, key, words, tmp_path, capsys):
    """Issue 61: ``list --cases ''`` listed every cell and ``gate --rerun -1`` was taken; argparse's own errors
    were its usage text and a message, two lines."""
    good, matrix = results_file(tmp_path), tmp_path / "m.toml"
    matrix.write_text(HEAD + TOLERANCES)
    given = {"list": ["--matrix", str(matrix)], "gate": ["--baseline", str(good), "--current", str(good)]}
    out = ["--out", str(tmp_path / "out" / "x.md")] if command[0] != "list" else []
    args = [*command, *given.get(command[0], ["--results", str(good)]), *out] if command != ["gate"] else command
    one_line(capsys, main(args), key, words)
    assert not (tmp_path / "out").exists()


def test_a_cuda_path_asked_for_on_a_cpu_host_suggests_the_interpreter(tmp_path, monkeypatch, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this host has CUDA")
    (tmp_path / "m.toml").write_text(HEAD + 'eager = { device = "cuda", timeout = 60 }\n' + TOLERANCES)
    monkeypatch.chdir(tmp_path)
    words = "eager need(s) CUDA and this host has none (add --interpret to run them in Triton's CPU interpreter)"
    one_line(capsys, main(["run", "--matrix", "m.toml", "--paths", "eager"]), "command line: --paths: ", words)


def test_run_help_explains_every_option(capsys):
    """One declaration per option (harness/plugin/options.py): ``run --help`` and pytest's help say the same."""
    from harness.plugin.options import declare

    assert main(["run", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--report-dir REPORT_DIR where the run writes records.jsonl, results.json, the chart matrix.md" in text
    flags: list[str] = []
    declare(lambda flag, **_: flags.append(flag))
    assert all(flag in text for flag in flags) and "--interpret" in flags


@pytest.mark.parametrize("spelling", ["./m.toml::{cell}", "{tmp}/m.toml::{cell}", "m.toml::{cell}"])
def test_node_ids_of_the_matrix_file_in_any_spelling_select_cells(spelling, tmp_path, monkeypatch, capsys):
    (tmp_path / "m.toml").write_text(HEAD.replace('["control"]', '["control", "raw_jit"]') + TOLERANCES)
    monkeypatch.chdir(tmp_path)
    node = spelling.format(tmp=tmp_path, cell="sin-control-cpu_fallback")
    args = ["--matrix", "m.toml", node, "-k", "x::y or sin", "-W", "ignore::UserWarning", "-n0", "--co", "-q"]
    assert main(["run", *args]) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith("m.toml::sin-control-cpu_fallback")


def test_resume_of_an_interpreter_run_without_the_interpreter_is_one_line(tmp_path, capsys):
    """Its interpreted records were kept in a run stamped as one on the device (triton_interpret false)."""
    import torch

    matrix, out = tmp_path / "m.toml", tmp_path / "out"
    matrix.write_text(HEAD + TOLERANCES)
    out.mkdir()
    file = results_file(out, env={"torch": torch.__version__, "triton_interpret": True})
    code = main(["run", "--matrix", str(matrix), "--report-dir", str(out), "--resume"])
    one_line(capsys, code, f"{file}: environment.triton_interpret: ", "a run in Triton's interpreter cannot be resumed"
             " outside it: resume it with --interpret")  # fmt: skip


@pytest.mark.parametrize(
    ("results", "key", "words"),
    [
        ("{not json", "(json): ", "not valid JSON"),
        (None, "environment.torch: ", "cannot be resumed under torch"),
    ],
)
def test_resume_errors_are_one_line(results, key, words, tmp_path, capsys):
    matrix, out = tmp_path / "m.toml", tmp_path / "out"
    matrix.write_text(HEAD + TOLERANCES)
    out.mkdir()
    file = results_file(out, env={"torch": "0.0"})
    if results is not None:
        file.write_text(results)
    err = one_line(capsys, main(["run", "--matrix", str(matrix), "--report-dir", str(out), "--resume"]), key, words)
    assert err.startswith(f"error: {file}: ")  # not pytest's "Exit: ..."


def test_a_report_dir_that_cannot_be_written_is_one_line(tmp_path, capsys):
    matrix = tmp_path / "m.toml"
    matrix.write_text(HEAD + TOLERANCES)
    blocker = tmp_path / "a-file"
    blocker.write_text("")  # a folder under a file: unwritable even for root (chmod is not)
    code = main(["run", "--matrix", str(matrix), "--report-dir", str(blocker / "out")])
    one_line(capsys, code, f"{blocker / 'out'}: --report-dir: ", f"cannot write there: {blocker} is a file, not a")
    code = main(["run", "--matrix", str(matrix), "--report-dir", str(blocker)])  # the file itself, not "File exists"
    one_line(capsys, code, f"{blocker}: --report-dir: ", "is a file, not a folder: give a folder")


def test_a_second_run_into_a_locked_report_dir_is_refused(tmp_path, capsys):
    import fcntl

    matrix, out = tmp_path / "m.toml", tmp_path / "out"
    matrix.write_text(HEAD + TOLERANCES)
    out.mkdir()
    with open(out / ".lock", "w") as other_run:  # another run's lock: another open file, as another process has
        other_run.write("4242\n")
        other_run.flush()
        fcntl.flock(other_run, fcntl.LOCK_EX)
        code = main(["run", "--matrix", str(matrix), "--report-dir", str(out)])
        one_line(capsys, code, f"{out}: --report-dir: ", "another run (pid 4242) writes there")
    assert not (out / "results.json").exists()


@pytest.mark.parametrize(
    ("extra", "key", "words"),
    [
        (["--shard", "2/3"], "command line: --shard: ", "share 2/3 holds no cell: the selection has 1 cell(s)"),
        (["-k", "nosuch"], "command line: -k: ", "no cell of the selection matches 'nosuch'"),
        (["-k", "eager"], "command line: -k: ", "no cell of the selection matches 'eager'"),
    ],
)
def test_a_selection_of_no_cell_is_one_line_naming_the_option(extra, key, words, tmp_path, monkeypatch, capsys):
    """A share of more shares than cells, or a -k that matches nothing, was ``error: no cell matches the
    selection``, naming neither (the share's once its session had started, its report folder made)."""
    from harness.plugin.processes import CellProcesses
    from tests.fakes import FakeCells

    monkeypatch.setattr(CellProcesses, "make_process", FakeCells())  # a cell it ran would be a fake's
    matrix, out = tmp_path / "m.toml", tmp_path / "out"
    matrix.write_text(HEAD + TOLERANCES)
    code = main(["run", "--matrix", str(matrix), "--report-dir", str(out), "-n0", "-p", "no:cacheprovider", *extra])
    if extra[0] == "-k":  # pytest's own -k selects, once the session has started on the good input ("matrix: ...")
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and err[-1] == f"error: {key}{words}", err
        assert err[0].startswith("matrix: ") and len(err) == 2, err
    else:
        one_line(capsys, code, key, words)
        assert not out.exists()


@pytest.mark.parametrize(
    ("text", "key", "words"),
    [
        (None, "(file): ", "no such file"),
        (HEAD.replace("timeout = 60", "timeuot = 60") + TOLERANCES, "paths.cpu_fallback.timeuot: ", "unknown key"),
    ],
)
def test_gate_refuses_a_matrix_file_it_is_given_that_does_not_load(text, key, words, tmp_path, capsys):
    """``gate --matrix`` names the matrix its re-runs read: a missing or mistyped one passed the gate (exit 0)
    whenever no cell needed a re-run, and was found only on the day one did."""
    good, matrix = results_file(tmp_path), tmp_path / "m.toml"
    if text is not None:
        matrix.write_text(text)
    gate = ["gate", "--baseline", str(good), "--current", str(good), "--out", str(tmp_path / "out" / "g.md")]
    one_line(capsys, main([*gate, "--matrix", str(matrix)]), f"{matrix}: {key}", words)
    assert not (tmp_path / "out").exists()
