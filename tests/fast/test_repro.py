"""Reproducers: a generated script of a failing CPU cell fails the same way on its own (harness not importable), and
every script of any style and path is complete: each name it uses is defined or imported."""

import builtins
import itertools
import subprocess
import symtable
import sys
from pathlib import Path

import pytest

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
        failed("matmul", "autotune", flops.format(5_577_142))
    )
    assert failure_signature(failed("add", "raw_jit", "boom")) != failure_signature(failed("add", "raw_jit", "bang"))


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
    assert "def wall_clock_bench(" in "\n".join(lines)  # what the cell's autotuner times configs with


def test_an_autotuned_cells_script_holds_the_users_decorator_as_written():
    """On a device the script's autotuner is ``@triton.autotune(configs=..., key=...)`` with the case's own options
    and nothing the harness chose (its cells get their benchmark from outside: harness/cell/autotuners.py)."""
    env = {"device": "NVIDIA H200", "torch": "t", "triton": "x"}
    record = make_record("add_inplace", "autotune", "eager", module="cases.add_inplace", status="error", error_type="E",
                         error="e")  # fmt: skip
    source = script_source(typed(record), env, MATRIX.tolerances)
    assert "triton.autotune(configs=list(case.configs), key=list(case.key), **case.autotune_options)" in source
    assert 'autotune_options={"restore_value": ["x_ptr"]}' in source
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
    show += f"; print(torch.ops.harness.rmsnorm_{style}_backward.default._schema)"
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
