"""Reproducers: a generated script of a failing CPU cell fails the same way on its own (harness not importable), and
every script of any style and path is complete: each name it uses is defined or imported."""

import builtins
import itertools
import json
import runpy
import subprocess
import symtable
import sys
from pathlib import Path

import pytest

from harness.case import load_case
from harness.cell.paths import PATHS
from harness.kernel.styles import KNOWN_STYLES
from harness.matrix.config import load_matrix
from harness.records.files import read_results
from harness.repro.failures import failure_signature
from harness.repro.script import script_source
from tests.conftest import REPO, harness_main, make_record, typed

MATRIX = load_matrix(REPO / "matrix.toml")
# run the script as __main__ with every harness import failing: it must need torch and triton only
NO_HARNESS = "import sys; sys.modules['harness'] = None; path = sys.argv[1]; "
NO_HARNESS += "exec(compile(open(path).read(), path, 'exec'), {'__name__': '__main__'})"


def test_failures_differing_only_in_names_and_numbers_share_a_signature():
    def failed(case: str, style: str, error: str):
        record = make_record(case, style, "aoti_standalone", status="error", stage="run", error_type="E", error=error)
        return typed(record)

    schema = "Could not find schema for harness::{}_custom_op"
    assert failure_signature(failed("add", "custom_op", schema.format("add"))) == failure_signature(
        failed("softmax", "custom_op", schema.format("softmax"))
    )
    flops = "flops: FlopCounterMode counted 0 for the op, the case declares {}"
    assert failure_signature(failed("add", "raw_jit", flops.format(3001))) == failure_signature(
        failed("matmul", "raw_jit", flops.format(5_577_142))
    )
    # each style (and path) has a script of its own: no cell's note points at another style's script
    assert failure_signature(failed("add", "raw_jit", flops.format(1))) != failure_signature(
        failed("add", "autotune", flops.format(1))
    )
    assert failure_signature(failed("add", "raw_jit", "boom")) != failure_signature(failed("add", "raw_jit", "bang"))


def test_two_kernels_wrong_numbers_are_two_failures():
    """Wrong numbers alike but for their numbers, in two cases: two bugs, each its own kernel's script."""
    def wrong(case: str, error: str):
        return typed(make_record(case, "raw_jit", "eager", status="wrong", stage="compare", error_type="Mismatch",
                                 error=error))  # fmt: skip

    said = "output: Tensor-likes are not close!; Mismatched elements: {} / 1000"
    assert failure_signature(wrong("add", said.format(1))) != failure_signature(wrong("sin", said.format(9)))
    assert failure_signature(wrong("add", said.format(1))) == failure_signature(wrong("add", said.format(9)))


def undefined(source: str) -> set[str]:
    """The global names the script's code reads that it neither defines nor imports (nor are builtins)."""
    table = symtable.symtable(source, "script", "exec")
    defined = {symbol.get_name() for symbol in table.get_symbols() if symbol.is_assigned() or symbol.is_imported()}
    used: set[str] = set()
    todo = [table]
    while todo:
        scope = todo.pop()
        todo += scope.get_children()
        used |= {s.get_name() for s in scope.get_symbols() if s.is_referenced() and (s.is_global() or scope is table)}
    return used - defined - set(dir(builtins))


SHIPPED = ["mul_add_autograd", "mul_add_function", "mul_add_library_op", "mul_add_module"]
NOT_LIBRARY_OPS = ("mul_add_autograd", "mul_add_function", "mul_add_module")  # their opcheck cells are skips


@pytest.mark.parametrize("style", list(KNOWN_STYLES))
def test_every_style_and_path_has_a_complete_script(style: str):
    """The script of any cell (any status) compiles, leaves no name undefined and holds no harness code."""
    env = {"device": "d", "torch": "t", "triton": "x"}
    cases = [("add", "cases.add"), ("rmsnorm", "cases.rmsnorm"), ("sin_triton_backward", "cases.sin_triton_backward"),
             ("add_inplace", "cases.add_inplace"), ("silu", "cases.silu")]
    if style == "as_shipped":
        cases = [(case, "examples.shipped") for case in SHIPPED]
    for (case, module), path, status in itertools.product(cases, PATHS, ("error", "graph_break", "wrong")):
        record = make_record(case, style, path, module=module, status=status, error_type="E", error="e")
        source = script_source(typed(record), env, MATRIX.tolerances)
        compile(source, "script", "exec")
        assert not undefined(source), (case, style, path, undefined(source))
        assert "import harness" not in source and "from harness" not in source


def test_an_interpreted_script_sets_the_interpreter_before_it_imports_triton():
    env = {"device": "cpu", "torch": "t", "triton": "x", "triton_interpret": True}
    record = make_record("sin", "autotune", "eager", module="cases.sin", status="error", error_type="E", error="e")
    lines = script_source(typed(record), env, MATRIX.tolerances).splitlines()
    setting = next(i for i, line in enumerate(lines) if line.startswith('os.environ["TRITON_INTERPRET"] = "1"'))
    assert lines.index("import os") < setting < lines.index("import triton")
    assert "def once_each_bench(" in "\n".join(lines)  # what the cell's autotuner benchmarks configs with


def test_an_autotuned_cells_script_holds_the_users_decorator_as_written():
    """On a device the script's autotuner is ``@triton.autotune(configs=..., key=...)`` with the case's own options
    and nothing the harness chose (its cells get their benchmark from outside: harness/cell/autotuners.py)."""
    env = {"device": "NVIDIA H200", "torch": "t", "triton": "x"}
    record = make_record("add_inplace", "autotune", "eager", module="cases.add_inplace", status="error", error_type="E",
                         error="e")  # fmt: skip
    source = script_source(typed(record), env, MATRIX.tolerances)
    assert "kernel = triton.autotune(configs=CONFIGS, key=KEY, **AUTOTUNE_OPTIONS)(add_inplace_kernel)" in source
    assert 'AUTOTUNE_OPTIONS = {"restore_value": ["x_ptr"]}' in source
    assert "do_bench" not in source and "wall_clock" not in source


def test_graph_breaks_of_different_kernels_are_different_failures():
    def broke(case: str, reason: str):
        return typed(make_record(case, "as_shipped", "train_compile", status="graph_break", reason=reason))

    element = "kernel(s) element_mul_kernel ran outside the compiled graph (6 graph break(s): Tensor.item())"
    kl_div = "kernel(s) _kldiv_kernel_backward ran outside the compiled graph (2 graph break(s): aten.equal)"
    assert failure_signature(broke("liger_cross_entropy", element)) != failure_signature(broke("liger_kl_div", kl_div))


def test_a_script_asked_for_by_cell_id_leaves_the_folders_other_scripts(tmp_path: Path):
    """``repro CELL --out DIR`` adds that cell's script to DIR; only a whole run's scripts replace a folder's."""
    results = REPO / "reports" / "results.json"
    cell_id = next(cell.id for cell in read_results(results).cells if cell.status == "error")
    (tmp_path / "kept.py").write_text("print('a script written earlier')\n")
    made = harness_main("repro", cell_id, "--results", str(results), "--out", str(tmp_path))
    assert made.returncode == 0, made.stderr
    assert sorted(p.name for p in tmp_path.glob("*.py")) == sorted(["kept.py", f"{cell_id}.py"])


@pytest.mark.parametrize("style", ["triton_op", "custom_op"])
def test_a_scripts_backward_op_declares_its_scalar_arguments(style: str, tmp_path: Path):
    """The backward kernel's op (``<op>_backward``) takes the forward's scalars typed as the case types them: a
    script whose schema inference fails on ``eps`` would blame every training cell of a scalar-argument case."""
    env = {"device": "cpu", "torch": "t", "triton": "x"}
    record = make_record("rmsnorm", style, "train_eager", module="cases.rmsnorm", status="error", error_type="E")
    script = tmp_path / "script.py"  # Triton reads a kernel's source from its file
    script.write_text(script_source(typed(record), env, MATRIX.tolerances))
    show = "import runpy, sys, torch; runpy.run_path(sys.argv[1], run_name='script')"  # registers, runs nothing
    show += "; print(torch.ops.mylib.rmsnorm_backward.default._schema)"
    shown = subprocess.run([sys.executable, "-c", show, str(script)], capture_output=True, text=True, cwd=REPO)
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "Tensor x, Tensor weight, float eps" in shown.stdout


def test_a_whole_runs_scripts_replace_only_the_scripts_the_harness_wrote(tmp_path: Path):
    """``repro --out DIR`` with no cell removes the scripts an earlier ``repro`` wrote there, never a user's own
    ``*.py`` (``--out .`` in a source folder); a second run leaves the same scripts."""
    results = REPO / "reports" / "results.json"
    mine = {"model.py": "print('my own code')\n", "notes.py": '"""sin: not a reproducer."""\n', "empty.py": ""}
    for name, text in mine.items():
        (tmp_path / name).write_text(text)
    made = harness_main("repro", "--results", str(results), "--out", str(tmp_path))
    assert made.returncode == 0, made.stderr
    scripts = sorted(p.name for p in tmp_path.glob("*.py") if p.name not in mine)
    assert len(scripts) == int(made.stdout.split()[0]) > 0
    stale = tmp_path / "stale-failure.py"
    stale.write_text((tmp_path / scripts[1]).read_text())  # an earlier run's script of a failure now gone
    mine[scripts[0]] = "print('my own file, named as a script is')\n"  # edited: the user's now
    (tmp_path / scripts[0]).write_text(mine[scripts[0]])
    again = harness_main("repro", "--results", str(results), "--out", str(tmp_path))
    assert again.returncode == 0, again.stderr
    assert {name: (tmp_path / name).read_text() for name in mine} == mine
    assert not stale.exists()
    renamed = scripts[0].removesuffix(".py") + "-2.py"  # written beside the user's file, not over it
    assert sorted(p.name for p in tmp_path.glob("*.py") if p.name not in mine) == sorted([renamed, *scripts[1:]])


def named_results(folder: Path, *records: dict) -> Path:
    """A results file of ``records``, for ``repro CELL``."""
    file = folder / "results.json"
    env = {"torch": "2.13", "triton": "3.7.1", "device": "cpu"}
    file.write_text(json.dumps({"schema": 3, "environment": env, "cells": list(records)}))
    return file


@pytest.mark.parametrize(
    ("module", "source", "words"),
    [
        ("issue61_gone", None, "ModuleNotFoundError: No module named 'issue61_gone'"),
        ("issue61_raises", "raise RuntimeError('half-edited')\n", "RuntimeError: half-edited"),
        ("issue61_exits", "import sys\nsys.exit(3)\n", "the case called sys.exit(3)"),
        ("issue61_empty", "CASES = []\n", "CASES is empty"),
    ],
)
def test_a_cell_whose_case_module_no_longer_loads_gets_one_line_and_no_script(
    module, source, words, matrix, tmp_path, monkeypatch
):
    """Issue 61: ``repro CELL`` whose case module was deleted, or no longer imports, exited 0 with a script that
    only raised ``ReproNotWritten``."""
    if source is not None:
        (tmp_path / f"{module}.py").write_text(source)
        monkeypatch.syspath_prepend(str(tmp_path))
    record = make_record("mine", "control", "eager", module=module, status="wrong", error_type="Mismatch")
    out = tmp_path / "repros"
    results = named_results(tmp_path, record)
    given = ["--results", str(results), "--out", str(out), "--matrix", str(matrix)]
    done = harness_main("repro", "mine-control-eager", *given)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith("error: command line: CELL: mine-control-eager: no script written: its case module")
    assert words in done.stderr and not out.exists()


def test_a_timed_script_that_cannot_be_written_is_one_line_and_nothing_is_left(matrix, tmp_path, monkeypatch):
    """Issue 61: ``repro --timed CELL`` wrote CELL.py, then raised OSError on CELL.timed.py (a folder of that
    name, a name too long, a full disk). One line naming the file, exit 2; neither script is left, nor a temp
    file, and a folder in the way is kept as it was."""
    import errno
    import os

    from harness.cli import repro

    results = named_results(tmp_path, make_record("sin", "control", "eager", module="cases.sin", status="pass"))
    out = tmp_path / "repros"
    (out / "sin-control-eager.timed.py" / "mine").mkdir(parents=True)
    command = ["repro", "--timed", "sin-control-eager", "--results", str(results), "--out", str(out), "--matrix"]
    command.append(str(matrix))
    done = harness_main(*command)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith(f"error: {out / 'sin-control-eager.timed.py'}: --out: cannot write it: Is a dir")
    assert [path.name for path in out.rglob("*")] == ["sin-control-eager.timed.py", "mine"]

    (out / "sin-control-eager.timed.py" / "mine").rmdir()
    (out / "sin-control-eager.timed.py").rmdir()
    fdopen = os.fdopen

    def full(handle: int, mode: str):  # the second file written meets a full disk
        stream = fdopen(handle, mode)
        if len(list(out.iterdir())) > 1:
            stream.write = lambda text: (_ for _ in ()).throw(OSError(errno.ENOSPC, "No space left on device"))
        return stream

    monkeypatch.setattr(repro.os, "fdopen", full)
    done = harness_main(*command)
    assert done.returncode == 2 and "--out: cannot write it: No space left on device: no script written" in done.stderr
    assert list(out.iterdir()) == []
    monkeypatch.undo()
    done = harness_main(*command)
    assert done.returncode == 0, done.stderr
    assert sorted(path.name for path in out.iterdir()) == ["sin-control-eager.py", "sin-control-eager.timed.py"]


def test_a_timed_script_name_too_long_for_the_file_system_is_one_line(matrix, tmp_path, monkeypatch):
    """CELL.py fits the file system's 255 bytes, CELL.timed.py does not."""
    case = "a" * 235  # its cell id is 249 characters
    (tmp_path / "issue61_long.py").write_text(
        "import dataclasses\nfrom harness.case import load_case\n"
        f"CASE = dataclasses.replace(load_case('cases.sin', 'sin'), id={case!r})\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    record = make_record(case, "control", "eager", module="issue61_long", status="pass")
    out = tmp_path / "repros"
    cell = f"{case}-control-eager"
    results = named_results(tmp_path, record)
    done = harness_main("repro", "--timed", cell, "--results", str(results), "--out", str(out), "--matrix", str(matrix))
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith(f"error: {out / cell}.timed.py: --out: cannot write it: File name too long")
    assert list(out.iterdir()) == []


def test_a_scripts_dynamic_shapes_are_the_cells(tmp_path: Path):
    """A case that declares no dynamic_dims: the script marks the dims the cell marks (a scalar gets None, not the
    ``{0: size}`` that export refuses for a float)."""
    env = {"device": "NVIDIA H200", "torch": "t", "triton": "x"}
    record = make_record("dropout_mask", "triton_op", "export_dynamic_strict", module="examples.dropout",
                         status="error", error_type="E", error="e")  # fmt: skip
    source = script_source(typed(record), env, MATRIX.tolerances)
    assert 'dynamic_shapes={"x": {0: size}, "noise": {0: size}, "p": None}' in source


def test_a_dynamic_scripts_sizes_are_around_the_size_the_cell_traced():
    """A drawn example (examples > 1 on a dynamic export path): the cell traced at its size and ran the sizes
    around it (harness/cell/paths/export.py); so does the script."""
    env = {"device": "NVIDIA H200", "torch": "t", "triton": "x"}
    record = make_record("sin", "triton_op", "export_dynamic_strict", module="cases.sin", status="error",
                         error_type="E", error="e", measurements={"example": {"size": 4321, "seed": 7}})  # fmt: skip
    source = script_source(typed(record), env, MATRIX.tolerances)
    sin = load_case("cases.sin", "sin")
    assert "DEVICE, SIZE, SEED = 'cuda', 4321, 7" in source and sin.sizes[0] != 4321
    assert f"for size in {[4321, *sin.sizes_around(4321)]}:" in source


def own_lines(source: str) -> int:
    """The script's own lines (not blank, not a comment) outside the case's own code."""
    start, end = source.index("# ---- the case's own code"), source.index("# ---- the style:")
    rest = source[:start] + source[end:]
    return sum(1 for line in rest.splitlines() if line.strip() and not line.strip().startswith("#"))


@pytest.mark.parametrize("style", list(KNOWN_STYLES))
def test_every_script_is_short_and_holds_no_harness_code(style: str):
    """Issue 59: a script a maintainer reads in a minute: the case's own code, then at most 100 lines of the
    script's own, none of them the harness's (no bundle of its functions), for every style and path a library op
    has (opcheck of a launcher or of the control is a skip, whose script is the long one)."""
    env = {"device": "NVIDIA H100", "torch": "t", "triton": "x"}
    cases = [("add", "cases.add"), ("rmsnorm", "cases.rmsnorm"), ("sin_triton_backward", "cases.sin_triton_backward"),
             ("add_inplace", "cases.add_inplace"), ("silu", "cases.silu"), ("layernorm", "cases.layernorm")]
    if style == "as_shipped":
        cases = [(case, "examples.shipped") for case in SHIPPED]
    for (case, module), path in itertools.product(cases, PATHS):
        if path == "opcheck" and (KNOWN_STYLES[style][1] in ("launcher", "control") or case in NOT_LIBRARY_OPS):
            continue  # a skip: opcheck checks torch.library ops
        record = make_record(case, style, path, module=module, status="error", error_type="E", error="e")
        source = script_source(typed(record), env, MATRIX.tolerances)
        assert "what the program uses: the harness's own code" not in source, (case, style, path)
        assert own_lines(source) <= 100, (case, style, path, own_lines(source))


def test_the_case_declaration_is_left_out_and_its_fields_named(tmp_path: Path):
    """The script holds the kernel, launch, reference and inputs as the module wrote them, not ``Case(...)``; a field
    written inline is bound to a name of its own; only the definitions the cell uses are kept."""
    env = {"device": "NVIDIA H100", "torch": "t", "triton": "x"}
    record = make_record("add", "triton_op_autotune", "fullgraph", module="cases.add", status="error", error_type="E")
    source = script_source(typed(record), env, MATRIX.tolerances)
    assert "Case(" not in source and "CASE" not in source
    assert "def add_kernel(" in source and "def launch(" in source and "def make_inputs(" in source
    assert "return torch.add(x, y)" in source and 'KEY = ["n_elements"]' in source
    assert "kernel = triton.autotune(configs=CONFIGS, key=KEY)(add_kernel)" in source
    assert '@torch.library.triton_op("mylib::add", mutates_args=())' in source
    assert "torch.compile(model, backend=inductor(), fullgraph=True)" in source
    assert "HEURISTICS" not in source and "flops" not in source  # not used by this style or path


def test_each_failing_style_and_path_gets_a_script_of_its_own(tmp_path: Path):
    """Issue 59: no cell's note points at another style's or path's script: every script written for the committed
    run stands for cells of one style and one path."""
    results = read_results(REPO / "reports" / "results.json")
    from harness.repro.failures import write_repros

    written = write_repros(results, MATRIX.tolerances, tmp_path)
    by_id = results.by_id()
    for cells in written.values():
        assert len({(by_id[cell].style, by_id[cell].path) for cell in cells}) == 1, cells


def test_an_issue_report_holds_versions_script_what_it_printed_and_where_the_op_passes():
    results = REPO / "reports" / "results.json"
    cell = next(c for c in read_results(results).cells if c.status == "error" and c.style == "triton_op_autotune")
    done = harness_main("repro", cell.id, "--issue", "--results", str(results))
    assert done.returncode == 0, done.stderr
    report = done.stdout
    for heading in ("## Versions", "## Reproducer", "## What it printed", "## What was expected",
                    "## Where the same op passes"):
        assert heading in report
    assert f"- torch {read_results(results).environment['torch']}" in report
    assert f'"""{cell.id}: a reproducer' in report and "```python" in report
    assert f"- Other styles on `{cell.path}`:" in report


@pytest.mark.parametrize("cells", [[], ["a-b-c", "d-e-f"]])
def test_an_issue_report_names_one_cell(cells: list[str]):
    done = harness_main("repro", *cells, "--issue", "--results", str(REPO / "reports" / "results.json"))
    assert done.returncode == 2 and done.stderr.strip() == (
        "error: command line: --issue: name one cell to report (repro CELL --issue)"
    )


def test_an_issue_report_of_a_passing_cell_is_one_line():
    results = REPO / "reports" / "results.json"
    cell = next(c for c in read_results(results).cells if c.status == "pass")
    done = harness_main("repro", cell.id, "--issue", "--results", str(results))
    said = f"error: command line: CELL: {cell.id} is a pass: nothing to report"
    assert done.returncode == 2 and done.stderr.strip() == said


USERS_PACKAGE = {
    "oplib/__init__.py": '''import torch


@torch.library.custom_op("oplib_test::double", mutates_args=())
def double(x: torch.Tensor) -> torch.Tensor:
    return 2 * x


@double.register_fake
def _(x):
    return torch.empty_like(x)
''',
    "mycases/__init__.py": "",
    "mycases/common.py": '''import torch


def reference(x):
    return 2 * x


def make_inputs(size, device, seed):
    return (torch.randn(size, generator=torch.Generator().manual_seed(seed)).to(device),)
''',
    "mycases/doubled.py": '''import math

import torch

import oplib  # registers torch.ops.oplib_test.double
from harness.case import Case

from .common import make_inputs, reference

CASE = Case(id="doubled", shipped=torch.ops.oplib_test.double.default, reference=reference,
            make_inputs=make_inputs, arg_names=("x",), sizes=(5,))
''',
}


def test_a_scripts_imports_keep_what_registers_the_op_and_carry_the_cases_own_helpers(tmp_path, monkeypatch):
    """The op is reached through torch.ops only: the import that registers it stays (its package is no file beside
    the case module), and the helper module beside the case module is inlined: a script copied elsewhere could
    not import it (a library maintainer's ``from _helpers import logprobs``: ModuleNotFoundError, the cell's
    failure not shown)."""
    for name, text in USERS_PACKAGE.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    env = {"device": "NVIDIA H200", "torch": "t", "triton": "x"}
    record = make_record("doubled", "as_shipped", "eager", module="mycases.doubled", status="error", error_type="E")
    source = script_source(typed(record), env, MATRIX.tolerances)
    assert "import oplib  # registers torch.ops.oplib_test.double" in source
    assert "# ---- from mycases.common ----" in source and "\ndef make_inputs(size, device, seed):" in source
    assert "from mycases.common import" not in source and "from .common" not in source
    compile(source, "script", "exec")


CLASHING = '''import torch

from harness.case import Case

SIZE = 40  # the hidden width: the script's own SIZE is the cell's size
DEVICE = "the case's own"


def check(x):  # the case's helper, named as the script's comparison is
    assert x.shape[-1] == SIZE
    return x


def reference(x):
    return torch.nn.functional.silu(check(x))


def make_inputs(rows, device, seed):
    assert device != DEVICE
    return (torch.randn(rows, SIZE, generator=torch.Generator().manual_seed(seed)).to(device),)


def main():
    raise AssertionError("the case's main, not the script's")


CASE = Case(id="clashing", shipped=reference, reference=reference, make_inputs=make_inputs, arg_names=("x",),
            sizes=(3,))
'''


@pytest.mark.parametrize("style", ["control", "as_shipped"])
def test_a_scripts_own_names_give_way_to_the_cases(style: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The case's code defines SIZE, DEVICE, check and main, as the script does: the script's own are renamed, so
    the case's functions read their own globals and the script still runs its own comparison (on the CPU here)."""
    (tmp_path / "clashing_case.py").write_text(CLASHING)
    monkeypatch.syspath_prepend(str(tmp_path))
    env = {"device": "cpu", "torch": "t", "triton": "x"}
    record = make_record("clashing", style, "cpu_fallback", module="clashing_case", status="error", error_type="E")
    source = script_source(typed(record), env, MATRIX.tolerances)
    assert "SIZE = 40" in source and "DEVICE_, SIZE_, SEED = 'cpu', 3, 0" in source and "def check_(" in source
    scope = {"__name__": "__main__"}
    exec(compile(source, "script", "exec"), scope)  # prints "no failure"; the case's main would raise
    assert (scope["SIZE"], scope["DEVICE"], scope["SIZE_"]) == (40, "the case's own", 3)


def test_an_issue_report_says_whose_script_printed_what_it_shows():
    """One script ran for a failure that several cells share: the report of another of them says that what it
    printed is that script's, not the one it holds (its own, not run); its own, where it ran, says nothing more."""
    from harness.repro.issue import issue_text

    results = read_results(REPO / "reports" / "results.json")
    cell = next(c for c in results.cells if c.status == "error")
    ran = {"script": "repros/x.py", "reproduced": True, "line": "RuntimeError: boom"}
    other = issue_text(cell.replace(confirmation={**ran, "cell": "sin-raw_jit-vmap"}), results, "print()")
    own = issue_text(cell.replace(confirmation={**ran, "cell": cell.id}), results, "print()")
    assert "RuntimeError: boom" in other and "(what the script of `sin-raw_jit-vmap`, the same failure" in other
    assert "RuntimeError: boom" in own and "what the script of" not in own


FACTORY = {
    "factorycases/__init__.py": "",
    "factorycases/builders.py": '''import torch

from harness.case import Case


def _inputs(size, device, seed):
    return (torch.randn(size, generator=torch.Generator().manual_seed(seed)).to(device),)


def elementwise(case_id, reference):
    return Case(id=case_id, reference=reference, shipped=reference, make_inputs=_inputs, arg_names=("x",), sizes=(7,))
''',
    "factorycases/tanh.py": '''import torch

from .builders import elementwise as make

CASES = [make("tanh_built", torch.tanh)]
''',
    "factorysin.py": '''import torch

import factorycases.builders as builders, math

CASES = [builders.elementwise("sin_built", torch.sin)]
''',
    "factorycases/plain.py": "SCALE = 1.0\n",
    "factorycos.py": '''import torch

from factorycases import builders, plain

BUILT = builders.elementwise("cos_built", lambda x: torch.cos(x) * plain.SCALE)
assert BUILT.outputs == 1 and getattr(BUILT, "key") == ()  # fields it was not given: the Case's defaults
CASES = [BUILT]
''',
}


def factory_script(folder: Path, monkeypatch: pytest.MonkeyPatch, case: str, module: str) -> str:
    """The script of ``case``'s as_shipped cpu_fallback cell, the ``FACTORY`` modules written to ``folder``."""
    for name, text in FACTORY.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    monkeypatch.syspath_prepend(str(folder))
    record = make_record(case, "as_shipped", "cpu_fallback", module=module, status="error", error_type="E")
    return script_source(typed(record), {"device": "cpu", "torch": "t", "triton": "x"}, MATRIX.tolerances)


def test_a_case_built_by_a_helper_module_that_imports_the_harness_has_it_inlined(tmp_path, monkeypatch):
    """The case's module imports a builder from a module of the user's that imports harness.case: the script, run
    where the harness is not installed, could not import it, so that module's statements are inlined (the script's
    stand-in Case serving it) and the import dropped; the script then runs as the cell did (here on the CPU)."""
    source = factory_script(tmp_path, monkeypatch, "tanh_built", "factorycases.tanh")
    assert "# ---- from factorycases.builders ----" in source and "make = elementwise" in source
    assert "import harness" not in source and "from harness" not in source and "from .builders" not in source
    exec(compile(source, "script", "exec"), {"__name__": "__main__"})


def test_a_helper_module_imported_whole_is_inlined_and_read_through_a_namespace(tmp_path, monkeypatch):
    """``import factorycases.builders as builders`` of a module of the user's that imports harness.case: its
    statements inlined, ``builders`` bound to a namespace of its names, the other modules of the line imported."""
    source = factory_script(tmp_path, monkeypatch, "sin_built", "factorysin")
    assert "# ---- from factorycases.builders ----" in source and "import math" in source
    assert "builders = types.SimpleNamespace(  # import factorycases.builders, inlined above" in source
    assert "from harness" not in source and "\nimport factorycases" not in source, source
    exec(compile(source, "script", "exec"), {"__name__": "__main__"})


def test_a_helper_module_imported_from_its_package_is_inlined_and_the_stand_in_has_the_cases_defaults(
    tmp_path, monkeypatch
):
    """``from factorycases import builders, plain``: ``builders`` imports harness.case, so it is inlined and bound
    to a namespace (the script kept the import, and needed the harness: exit 7 for every failure of the module),
    ``plain`` does not and stays imported; the stand-in Case has the defaults of the fields the module reads (it
    raised AttributeError on ``outputs``)."""
    source = factory_script(tmp_path, monkeypatch, "cos_built", "factorycos")
    assert "# ---- from factorycases.builders ----" in source and "from factorycases import plain" in source
    assert "builders = types.SimpleNamespace(  # import factorycases.builders, inlined above" in source
    assert "    outputs = 1\n" in source and "    key = ()\n" in source
    assert "from factorycases import builders" not in source
    exec(compile(source, "script", "exec"), {"__name__": "__main__"})


AUTHORS_HABITS = '''import torch
import triton
import triton.language as tl

from harness.case import Case, Inputs


@triton.jit
def triple_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, 3 * tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)


def launch(kernel, x, **meta):
    out = torch.empty_like(x)
    kernel[lambda m: (triton.cdiv(x.numel(), m["BLOCK"]),)](x, out, x.numel(), **meta)
    return out


def make_inputs(size, device, seed) -> Inputs:
    return (torch.randn(size, generator=torch.Generator().manual_seed(seed)).to(device),)


CONFIGS = []
for block in (64, 128):
    CONFIGS.append(triton.Config({"BLOCK": block}))


CASE = Case(id="habits", kernel=triple_kernel, launch=launch, reference=lambda x: 3 * x, make_inputs=make_inputs,
            arg_names=("x",), sizes=(100,), configs=CONFIGS, key=["n"], meta={"BLOCK": 64})


if __name__ == "__main__":
    print(triton.testing.do_bench(lambda: launch(triple_kernel, torch.ones(10, device="cuda"), BLOCK=64)))
'''


def test_an_authors_habits_carry_into_the_script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Configs filled by a loop stay (the loop with them), an ``Inputs`` type hint gets a stand-in (not the long
    script), and the module's own ``__main__`` block (a benchmark) is left out."""
    (tmp_path / "habits_case.py").write_text(AUTHORS_HABITS)
    monkeypatch.syspath_prepend(str(tmp_path))
    env = {"device": "NVIDIA H200", "torch": "t", "triton": "x"}
    record = make_record("habits", "autotune", "eager", module="habits_case", status="error", error_type="E")
    source = script_source(typed(record), env, MATRIX.tolerances)
    assert "for block in (64, 128):" in source and "Inputs = tuple" in source
    assert "do_bench" not in source and "what the program uses: the harness's own code" not in source
    assert not undefined(source) and own_lines(source) <= 100


def test_an_autotune_style_of_a_case_without_configs_gets_the_short_script(tmp_path, monkeypatch):
    """A case that declares no configs or key: its autotune cells ran ``triton.autotune(configs=[], key=[])``
    (Triton's default config), and their script said so in its own short form (the writer raised KeyError, and
    the cell got the long script, the harness's code copied in)."""
    bare = AUTHORS_HABITS.replace("configs=CONFIGS, key=[\"n\"], ", "")
    (tmp_path / "noconfigs_case.py").write_text(bare)
    monkeypatch.syspath_prepend(str(tmp_path))
    env = {"device": "NVIDIA H200", "torch": "t", "triton": "x"}
    record = make_record("habits", "autotune", "eager", module="noconfigs_case", status="error", error_type="E")
    source = script_source(typed(record), env, MATRIX.tolerances)
    assert "kernel = triton.autotune(configs=[], key=[])(triple_kernel)" in source
    assert "what the program uses: the harness's own code" not in source and own_lines(source) <= 100


def test_an_issue_report_of_a_wrong_kernel_says_it_is_the_kernels_bug_and_the_control_is_no_workaround():
    """A kernel wrong in every style on eager while its control passes (the run's own finding): the report's title
    and first line say so, and the control (pure PyTorch, not the op) is no style where the same op passes."""
    from harness.records.results import Results
    from harness.repro.issue import issue_text

    wrong = {"status": "wrong", "error": "output: max abs diff 4.9 at index (6,)"}
    cells = [typed(make_record("leaky", style, path, **fields)) for style, path, fields in [
        ("raw_jit", "eager", wrong), ("triton_op", "eager", wrong), ("control", "eager", {"status": "pass"}),
        ("triton_op", "cpu_fallback", {"status": "pass"}),
    ]]  # fmt: skip
    report = issue_text(cells[1], Results({"device": "cpu"}, cells), "print()")
    assert report.startswith("# leaky: the kernel disagrees with its reference in every style (eager shown)")
    assert "> Not a PyTorch or Triton bug: the kernel leaky disagrees with its reference in every style" in report
    assert "- Other styles on `eager`: none passes" in report
    assert "- Other paths of `triton_op`: `cpu_fallback` pass" in report
    plain = issue_text(cells[1], Results({"device": "cpu"}, cells[1:]), "print()")  # no raw_jit: still every style
    assert "Not a PyTorch" in plain
    alone = issue_text(cells[1], Results({"device": "cpu"}, [cells[1], cells[3]]), "print()")  # no control ran
    assert "Not a PyTorch" not in alone and alone.startswith("# eager: ")


def test_an_issue_report_names_the_libraries_the_case_imports():
    """A shipped op's bug is filed with its library's version, beside torch's and triton's."""
    from harness.records.results import Results
    from harness.repro.issue import issue_text

    cell = typed(make_record("rms", "as_shipped", "vmap", status="error", error_type="RuntimeError"))
    env = {"device": "cpu", "torch": "2.11", "libraries": {"liger_kernel": "0.8.5", "local_lib": ""}}
    report = issue_text(cell, Results(env, [cell]), "print()")
    assert "- torch 2.11\n" in report and "- liger_kernel 0.8.5\n" in report
    assert "- local_lib (version unknown)\n" in report


def test_an_issue_report_of_a_lone_shipped_style_under_the_interpreter(tmp_path: Path, monkeypatch):
    """A run of ``as_shipped`` and ``control`` only: no "as in the other styles below" where none is listed, the
    control's verdict on the path said, the interpreter named among the versions (no GPU code ran), and a module
    of the user's that the script imports and no installed package provides named, to attach."""
    from harness.records.results import Results
    from harness.repro.issue import issue_text

    (tmp_path / "my_local_helper.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    cell = typed(make_record("gn", "as_shipped", "eager", status="error", error_type="InterpreterError"))
    control = typed(make_record("gn", "control", "eager", status="pass"))
    env = {"device": "cpu", "torch": "2.13", "triton_interpret": True}
    report = issue_text(cell, Results(env, [cell, control]), "import torch\nfrom my_local_helper import X\n")
    assert "The path runs the op without an error. The script then prints" in report
    assert "- Triton's CPU interpreter (TRITON_INTERPRET=1): no GPU code ran\n" in report.split("## Reproducer")[0]
    assert "- The pure-PyTorch `control` on `eager`: pass" in report
    assert f"It imports `my_local_helper` ({tmp_path / 'my_local_helper.py'}), which no installed" in report
    target = tmp_path / "site"  # pip install --target site some_library: installed, not the user's to attach
    (target / "some_library").mkdir(parents=True)
    (target / "some_library" / "__init__.py").write_text("Y = 2\n")
    (target / "some_library-1.0.dist-info").mkdir()
    (target / "some_library-1.0.dist-info" / "METADATA").write_text("Name: some_library\nVersion: 1.0\n")
    (target / "some_library-1.0.dist-info" / "RECORD").write_text("some_library/__init__.py,,\n")
    monkeypatch.syspath_prepend(str(target))
    both = issue_text(cell, Results(env, [cell, control]), "from my_local_helper import X\nimport some_library\n")
    assert "It imports `my_local_helper` (" in both and "some_library" not in both.split("## What it printed")[0].split(
        "```python")[0]
    passing = issue_text(cell, Results({"device": "cpu"}, [cell, control, typed(make_record(
        "gn", "triton_op", "eager", status="pass"))]), "import torch\n")  # fmt: skip
    assert "without an error, as it runs the same op in the other styles below." in passing
    assert "It imports" not in passing and "interpreter" not in passing


def test_repro_of_an_unknown_cell_is_one_line_naming_a_close_one():
    done = harness_main("repro", "sin-raw_jit-eagr", "zzz", "--results", str(REPO / "reports" / "results.json"))
    assert done.returncode == 2 and done.stderr.strip() == (
        "error: command line: CELL: no record with a case module for: sin-raw_jit-eagr (did you mean "
        "sin-raw_jit-eager?), zzz"
    )


def test_the_recorded_failure_in_a_scripts_docstring_is_cut_at_a_word_and_stays_a_docstring():
    error = 'bad \\N{path} """quoted""" ' + "word " * 60
    record = make_record("add", "raw_jit", "eager", module="cases.add", status="error", error_type="E", error=error)
    source = script_source(typed(record), {"device": "cpu", "torch": "t", "triton": "x"}, MATRIX.tolerances)
    compile(source, "script", "exec")  # a backslash or triple quote of the error ends no docstring
    docstring = source.split('"""')[1]
    assert max(map(len, docstring.splitlines())) <= 120 and "word …" in docstring


SPLAT_CASE = '''
import torch
import triton
import triton.language as tl
from harness.case import Case


@triton.jit
def neg_kernel(x_ptr, o_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(o_ptr + offs, -tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def launch(kernel, x, **meta):
    o = torch.empty_like(x)
    kernel[lambda m: (triton.cdiv(x.numel(), m["BLOCK_SIZE"]),)](x, o, x.numel(), **meta)
    return o


TUNE = dict(configs=[triton.Config({"BLOCK_SIZE": 256})], key=["n"])
CASE = Case(id="neg_splat", kernel=neg_kernel, launch=launch, reference=torch.neg, arg_names=("x",), sizes=(33,),
            make_inputs=lambda size, device, seed: (torch.randn(size).to(device),), meta={"BLOCK_SIZE": 256}, **TUNE)
'''


def test_a_case_taking_fields_through_a_splat_keeps_them_in_its_script(tmp_path: Path, monkeypatch):
    """``Case(..., **TUNE)``: the fields the splat gives (the autotune configs) reach the script; the cut-down
    code reads only the call's named keywords, and wrote ``triton.autotune(configs=[], key=[])`` (found by a probe:
    every autotuned style's script of a passing cell then raised ``missing ... 'BLOCK_SIZE'``)."""
    (tmp_path / "issue_splat.py").write_text(SPLAT_CASE)
    monkeypatch.syspath_prepend(str(tmp_path))
    env = {"device": "cpu", "torch": "t", "triton": "x", "triton_interpret": True}
    record = make_record("neg_splat", "autotune", "eager", module="issue_splat", status="pass")
    source = script_source(typed(record), env, MATRIX.tolerances)
    assert "configs=[]" not in source and "copied in as they are" not in source
    assert "triton.autotune(configs=CONFIGS, key=KEY)" in source


def test_an_issue_reports_long_title_is_cut_at_a_word_and_says_so():
    """A title longer than 160 characters was cut mid-word, changing what it said: Triton's interpreter's
    ``... for triton type int1`` became ``... for triton type int``. It ends at a word boundary with an ellipsis."""
    from harness.records.results import Results
    from harness.repro.issue import issue_text

    error = "numpy data itemsize (32 bits) exceeds dtype primitive_bitwidth (1 bits) for triton type int1"
    case = "scale_with_flag"  # the title: 164 characters
    cell = typed(make_record(case, "custom_op", "eager", status="error", error_type="ValueError", error=error))
    title = issue_text(cell, Results({"device": "cpu"}, [cell]), "print()").splitlines()[0]
    assert len(title) <= 2 + 160 and title.endswith("…"), title
    assert title.removesuffix("…").split()[-1] in error.split(), title  # a whole word of the message


def test_an_issue_report_of_a_kernel_failing_as_written_says_it_is_not_the_styles_or_paths():
    """Every style raising alike on eager while the control passes: the report says the kernel fails as launched
    plainly (its own failure, or Triton's running it), not this style's or path's."""
    from harness.records.results import Results
    from harness.repro.issue import issue_text

    raised = {"status": "error", "stage": "run", "error_type": "ValueError", "error": "triton type int1"}
    cells = [typed(make_record("flag", style, "eager", **fields)) for style, fields in [
        ("raw_jit", raised), ("triton_op", raised), ("custom_op", raised), ("control", {"status": "pass"}),
    ]]  # fmt: skip
    report = issue_text(cells[2], Results({"device": "cpu"}, cells), "print()")
    assert "> Not this style's or path's failure: the kernel flag fails the same way in every style on eager, while " \
           "its control passes: ValueError: triton type int1. The kernel fails as written" in report
    alone = issue_text(cells[2], Results({"device": "cpu"}, cells[2:]), "print()")  # one style ran: its own failure
    assert "Not this style's" not in alone


RENAMED = '''"""A shipped module whose forward names its inputs otherwise than the case does (hidden, gate: o, g)."""

import torch

from harness.case import Case


class GatedScale(torch.nn.Module):
    def forward(self, hidden, gate):
        return hidden * torch.sigmoid(gate)


def reference(o, g):
    return o * torch.sigmoid(g)


def make_inputs(size, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(size, 8, generator=gen).to(device) for _ in range(2))


CASE = Case(id="renamed", shipped_module=GatedScale, reference=reference, make_inputs=make_inputs,
            arg_names=("o", "g"), sizes=(5, 3))
'''


@pytest.mark.parametrize("path", ["export_dynamic_nonstrict", "export_dynamic_strict"])
def test_a_dynamic_export_of_a_shipped_module_keys_its_dims_by_the_modules_own_names(
    path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """The cell binds the dims to the model's forward (harness/cell/paths/export.py); a script keying them by the
    case's names raised UserError ("top-level keys must be the arg names ['x', 'g'] ..., but here they are ['o',
    'g']"): flash-linear-attention's FusedRMSNormGated, five harness suspects on one H200."""
    (tmp_path / "renamed_case.py").write_text(RENAMED)
    monkeypatch.syspath_prepend(str(tmp_path))
    env = {"device": "cpu", "torch": "t", "triton": "x", "paths": {path: {"device": "cpu"}}}
    record = make_record("renamed", "as_shipped", path, module="renamed_case", status="pass")
    script = tmp_path / "script.py"
    script.write_text(script_source(typed(record), env, MATRIX.tolerances))
    runpy.run_path(str(script), run_name="__main__")  # raises the failure while it is there
    assert "no failure: renamed-as_shipped-" in capsys.readouterr().out


def test_a_whole_runs_scripts_are_written_for_the_cells_the_run_wrote_them_for(tmp_path: Path):
    """Two cells failing one way, the run having written and run the script for the second (its confirmations
    name it): ``repro`` writes that script again, for that cell, not for the first in the file."""
    ran = {"script": "repros/x.py", "cell": "sin-raw_jit-vmap", "reproduced": True, "line": "E: e"}
    failed = {"status": "error", "error_type": "E", "error": "e"}
    records = [
        {**make_record(case, "raw_jit", "vmap", module=f"cases.{case}", **failed), "confirmation": ran}
        for case in ("add", "sin")
    ]
    made = harness_main("repro", "--results", str(named_results(tmp_path, *records)), "--out", str(tmp_path / "out"))
    assert made.returncode == 0, made.stderr
    (script,) = (tmp_path / "out").glob("*.py")
    assert script.read_text().startswith('"""sin-raw_jit-vmap: a reproducer')
