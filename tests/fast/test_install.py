"""Running as an installed tool, in process: which matrix file a run uses, how a bare case name resolves, the
standalone server's imports, and the summary at the end of a run (tests/slow/test_wheel.py runs the built wheel)."""

import dataclasses
import time
from pathlib import Path

import pytest

from harness.__main__ import main
from harness.matrix import builtin
from harness.plugin.summary import summary_lines
from harness.records.record import Record
from harness.spec import Status
from tests.conftest import REPO


def test_without_a_matrix_file_here_the_packaged_default_is_used_and_said(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    file, source = builtin.matrix_file(None)
    assert file.read_text() == (REPO / "matrix.toml").read_text() and file.is_absolute()
    assert source == "the packaged default (no ./matrix.toml here)"
    assert main(["list"]) == 0
    out, err = capsys.readouterr()
    assert "sin-triton_op-eager" in out.splitlines()
    assert err == f"matrix: {file} ({source})\n"


def test_a_matrix_file_here_wins_over_the_default(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "matrix.toml").write_text("")
    assert builtin.matrix_file(None) == (Path("matrix.toml"), "./matrix.toml")
    assert builtin.matrix_file("other.toml") == (Path("other.toml"), "--matrix")


def test_a_bare_name_is_a_built_in_case_or_else_a_module():
    assert builtin.case_module("sin") == f"{builtin.package()}.sin"
    assert builtin.case_module("mykernels") == "mykernels"
    assert builtin.case_module("mypkg.kernels") == "mypkg.kernels"
    assert {"sin", "rmsnorm", "layernorm"} <= builtin.case_ids()


@pytest.mark.parametrize("graph_breaks", [0, 2])
def test_the_summary_counts_statuses_names_wrong_cells_and_counts_graph_breaks(graph_breaks: int):
    cells = [Record(f"p{n}", "s", "p", Status.PASS) for n in range(3)] + [
        Record("sin", "autotune", "vmap", Status.WRONG),
        Record("add", "raw_jit", "export", Status.ERROR),
    ]
    cells += [Record(f"g{n}", "s", "p", Status.GRAPH_BREAK) for n in range(graph_breaks)]
    lines = summary_lines(cells, Path("/r/matrix.md"))
    assert lines[:3] == [
        "[harness] chart: /r/matrix.md",
        f"[harness] {len(cells)} cells: 3 pass, " + ("2 graph_break, " if graph_breaks else "") + "1 wrong, 1 error",
        "[harness] silently wrong (1): sin-autotune-vmap",
    ]
    outside = "[harness] passes whose kernel ran outside the compiled graph (graph_break): 2"
    assert lines[3:] == ["[harness]   sin-autotune-vmap: wrong", *([outside] if graph_breaks else [])]


def test_the_summary_of_an_interrupted_run_says_it_is_incomplete():
    """A Ctrl-C before any cell ended: not "0 cells: ", which reads as an empty matrix."""
    lines = summary_lines([], Path("/r/matrix.md"), complete=False)
    assert lines[1] == "[harness] 0 cells (incomplete: not every selected cell has a record): none run"
    one = summary_lines([Record("add", "raw_jit", "eager", Status.PASS)], Path("/r/matrix.md"), complete=False)
    assert one[1] == "[harness] 1 cells (incomplete: not every selected cell has a record): 1 pass"


MISMATCH = (
    "output: Tensor-likes are not close!; Mismatched elements: 3001 / 3001 (100.0%); Greatest absolute difference: "
    "{diff} at index (10,) (up to 1e-05 allowed); Greatest relative difference: 1020036.125 at index (153,)"
)


def test_a_kernel_wrong_in_every_style_on_eager_is_named_once_with_each_first_mismatch():
    def wrong(case: str, style: str, diff: float, path: str = "eager") -> Record:
        error = mismatch_of(diff)
        return Record(case, style, path, Status.WRONG, error_type="Mismatch", error=error)

    cells = [
        wrong("leaky", "raw_jit", 0.5),
        wrong("leaky", "triton_op", 2.25),
        Record("leaky", "control", "eager", Status.PASS),
        wrong("leaky", "raw_jit", 0.5, "compile"),
        wrong("sin", "raw_jit", 1.0),  # wrong in one style only: a style's problem, not the kernel's
        Record("sin", "triton_op", "eager", Status.PASS),
        Record("sin", "control", "eager", Status.PASS),
    ]
    lines = summary_lines(cells, Path("/r/matrix.md"))
    assert (
        "[harness]   leaky-triton_op-eager: output: max abs diff 2.25 at index (10,), 3001 / 3001 elements differ"
        in (lines)
    )
    assert sum(line.startswith("[harness]   ") for line in lines) == 4  # every wrong cell's first mismatch
    assert lines[-1] == (
        "[harness] the kernel leaky disagrees with its reference in every style (max abs diff 2.25), while its "
        "control passes: fix the kernel first"
    )
    assert not any("the kernel sin" in line for line in lines)
    broken_path = [c.replace(status=Status.ERROR) if c.style == "control" else c for c in cells]
    assert not any("disagrees" in line for line in summary_lines(broken_path, Path("/r/matrix.md")))


def mismatch_of(diff: float) -> str:
    return MISMATCH.format(diff=diff)


def built_tuner(case):
    """The one autotuner of the ``autotune`` style the runner builds around ``case``."""
    from harness.cell import runner

    runner.build(case, "autotune", {})
    (tuner,) = runner.AUTOTUNERS[(case.id, "autotune")]
    return tuner


def test_autotuned_stacks_are_the_users_decorator_and_get_the_runs_benchmark_from_outside(monkeypatch):
    """The style is ``@triton.autotune(configs=..., key=...)`` as a user writes it (no ``do_bench``): the runner
    gives the autotuners it builds the run's benchmark, ``short_bench`` on a device (Triton's do_bench over a
    shorter span), ``once_each_bench`` under TRITON_INTERPRET=1 (Triton's own asks a device's driver), and leaves
    an autotuner that names its own; the run's environment says which (``autotune_benchmark``)."""
    from harness.case import load_cases
    from harness.cell.autotuners import short_bench
    from harness.kernel.decorators import autotune
    from harness.kernel.interpreter import INTERPRET_ENV, once_each_bench
    from harness.records.environment import environment

    (case,) = load_cases(builtin.case_module("rmsnorm"))
    assert autotune(case)[0]._do_bench is None
    monkeypatch.setenv(INTERPRET_ENV, "1")
    tuner = built_tuner(case)
    assert tuner.do_bench is once_each_bench and tuner._do_bench is None
    assert "the first kept" in environment({}, "cpu", 1, "m.toml")["autotune_benchmark"]
    monkeypatch.delenv(INTERPRET_ENV)
    tuner = built_tuner(case)
    assert tuner.do_bench is short_bench and tuner._do_bench is None
    said = environment({}, "d", 1, "m.toml")["autotune_benchmark"]
    assert said.startswith("triton.testing.do_bench(warmup=2, rep=10), set from outside the decorator")
    own = dataclasses.replace(case, id="rmsnorm_own_bench", autotune_options={"do_bench": once_each_bench})
    assert built_tuner(own).do_bench is once_each_bench
    calls = []
    timings = once_each_bench(lambda: calls.append(1), quantiles=(0.5, 0.2, 0.8))
    assert calls == [1] and len(timings) == 3 and len(set(timings)) == 1 and timings[0] >= 0
    assert timings == once_each_bench(lambda: time.sleep(0.01), quantiles=(0.5, 0.2, 0.8))  # all configs tie
