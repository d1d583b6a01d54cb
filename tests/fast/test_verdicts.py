"""The verdicts of issue 25 on CPU, each shown by an op that produces it: a kernel run outside the compiled graph
(graph_break), flops FlopCounterMode cannot see (blind), scalars that vary with the seed (subclass, vmap), a fork
server that fails to start (exit 6), an interpreter run's chart, and autotune results never carried between
cells."""

import math
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from harness.__main__ import main
from harness.case import Case
from harness.errors import EXIT_RUN_BROKE
from harness.execution import zygote
from harness.plugin.processes import suspect
from harness.records.reuse import reusable
from harness.report import chart
from tests.conftest import make_record, typed
from tests.fast.test_cells import run
from tests.fixtures.cases import make_case


def render(data: dict) -> str:
    return chart.render(typed(data))


class EagerAround(torch.nn.Module):
    """What libraries do around a kernel that misbehaves under compile: the graph breaks and the op runs eagerly."""

    def __init__(self, op):
        super().__init__()
        self.eager = torch.compiler.disable(op)

    def forward(self, x):
        y = x * 2
        torch._dynamo.graph_break()
        return self.eager(y)


def test_a_graph_break_around_a_library_op_is_graph_break_not_pass(tmp_path: Path):
    case = Case(**{**vars(make_case("breaks")), "module": EagerAround})
    record = run(case, "custom_op", "cpu_compile", tmp_path)
    assert record["status"] == "graph_break", record["error"]
    assert record["capture"].compiled and not record["capture"].captured and record["capture"].graph_breaks >= 1
    assert record["reason"].startswith("the kernel ran outside the compiled graph (")
    assert "graph_break" in record["reason"] or "disable" in record["reason"]  # Dynamo's reasons, in the note
    inside = run("tests.fixtures.good", "custom_op", "cpu_compile", tmp_path)  # the op captured: a pass
    assert inside["status"] == "pass" and inside["capture"].captured == ("harness.good_custom_op",)
    assert run(case, "control", "cpu_compile", tmp_path)["status"] == "pass"  # no kernel of its own: no verdict


def test_flops_flop_counter_cannot_see_are_blind_never_re_run_and_reused(tmp_path: Path):
    unseen = make_case("unseen", launch=lambda kernel, x: torch.sin(x))  # a launcher: a plain Python function
    record = run(unseen, "raw_jit", "flop_counter", tmp_path, device="cpu")
    assert (record["status"], record["error_type"]) == ("blind", "SubsystemMismatch"), record["error"]
    assert (record["capture"].flops, record["capture"].declared_flops) == (0, 1)
    assert (
        run(unseen, "triton_op", "flop_counter", tmp_path, device="cpu")["status"] == "pass"
    )  # its flop formula is seen
    assert not suspect("blind", None) and suspect("wrong", None)  # re-runs only where attempts can differ
    assert suspect("blind", "pass")  # unlike its baseline: re-run
    blind = make_record("unseen", "raw_jit", "flop_counter", status="blind", error_type="SubsystemMismatch")
    assert reusable(typed({**blind, "key": "k"}), "k")
    assert not reusable(typed({**blind, "key": "k", "status": "wrong", "error_type": "Mismatch"}), "k")


def _scaled_inputs(size: int, device: str, seed: int):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(size, generator=gen).to(device), 0.5 + seed)  # the scalar varies with the seed


SCALED = Case(
    id="scaled",
    kernel=None,
    launch=lambda kernel, x, scale: x * scale,
    reference=lambda x, scale: x * scale,
    make_inputs=_scaled_inputs,
    backward=lambda inputs, out, grad: (grad * inputs[1], None),
    flops=lambda x, scale: math.prod(x),
    arg_names=("x", "scale"),
    arg_types={"scale": float},
    sizes=(33, 7),
    meta={},
    configs=[],
    key=[],
    heuristics={},
)


@pytest.mark.parametrize("path", ["subclass_eager", "vmap"])
def test_scalars_that_vary_with_the_seed_are_held_fixed_across_the_batch(path: str, tmp_path: Path):
    record = run(SCALED, "control", path, tmp_path, device="cpu")
    assert record["status"] == "pass", record["error"]


def test_a_fork_server_that_fails_to_start_breaks_the_run(
    write_matrix, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    def fail(*args, **kwargs):
        raise zygote.ZygoteFailed("CUDA was initialised before forking: cell processes could not use the GPU")

    monkeypatch.setattr(zygote, "start", fail)
    matrix = write_matrix(["tests.fixtures.good"], ["control"], {"cpu_fallback": ("cpu", 60)})
    out = tmp_path / "out"
    code = main(["run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "0", "-q", "-p", "no:cacheprovider"])
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert code == EXIT_RUN_BROKE == 6
    assert len(errors) == 1 and "the run broke: 1 of 1 cell(s) measured nothing" in errors[0]
    assert "CUDA was initialised before forking" in errors[0]
    assert "**THE RUN BROKE**" in (out / "matrix.md").read_text()


def _interpret_run(interpret: bool) -> dict:
    failing = make_record(
        "sin", "autotune", "eager", status="error", error_type="RuntimeError", error="0 active drivers"
    )
    docs = {"sources": {"d": "the docs"}, "claims": {"autotune": {"eager": {"supported": True, "source": "d"}}}}
    env = {"device": "cpu", "complete": True, "docs": docs, "triton_interpret": interpret}
    return {"environment": env, "cells": [failing]}


def test_an_interpreter_run_is_not_compared_with_gpu_claims(tmp_path: Path):
    gpu = render(_interpret_run(False))
    interpreted = render(_interpret_run(True))
    assert "## Contradicts the docs" in gpu and "❌ [1] ≠docs" in gpu
    assert "## Contradicts the docs" not in interpreted and "❌ [1] ≠docs" not in interpreted
    assert "❌ [1]" in interpreted
    assert "What the interpreter cannot measure" in interpreted and "not compared with them" in interpreted
    assert "0 active drivers" in interpreted  # the autotuned stacks' failure, explained


@pytest.fixture
def untagged() -> Iterator[None]:
    """No compile cache key tag, as a user's process has it, and the tag put back after the test (monkeypatch
    would delete the config key it did not find in the module's dict)."""
    with torch.compiler.config.patch(cache_key_tag=""):
        yield


def test_no_autotune_result_is_carried_from_one_cell_to_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, untagged: None
):
    """A stand-in kernel in a stand-in Inductor cache: Inductor's own autotune cache, read as compiled code reads
    it. Without the harness's setting, a result stored by one cell makes the next skip benchmarking (its
    verdict then depends on order); with it, every cell benchmarks every config, as a fresh deployment does."""
    import triton
    from torch._inductor import config
    from torch._inductor.runtime.triton_heuristics import check_autotune_cache

    from harness.cell.runner import FRESH_AUTOTUNE_TAG, fresh_autotune

    monkeypatch.setattr(config, "autotune_local_cache", True)  # Inductor's default, as a user's process has it
    for name in ("autotune_remote_cache", "bundled_autotune_remote_cache"):
        monkeypatch.setattr(config, name, getattr(config, name))
    monkeypatch.setattr(triton.knobs.autotuning, "cache", False)
    kernel = tmp_path / "inductor" / "ab" / "cabkernel.py"
    kernel.parent.mkdir(parents=True)
    kernel.write_text("# a generated kernel")
    configs = [triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})]

    def cell() -> list:  # what a cell's compiled code autotunes over (inductor_meta as codegen bakes it in)
        meta = {name: getattr(config, name) for name in ("autotune_local_cache", "autotune_remote_cache")}
        tuned, cache, _ = check_autotune_cache(configs, str(kernel), meta)
        if cache is not None:
            cache.save(configs[1], 1000)
        return tuned

    assert (len(cell()), len(cell())) == (2, 1)  # stored by the first: the second benchmarks nothing
    fresh_autotune()
    assert torch.compiler.config.cache_key_tag == FRESH_AUTOTUNE_TAG
    assert (len(cell()), len(cell())) == (2, 2)  # every cell benchmarks, first or not
    assert triton.knobs.autotuning.cache is False


def test_no_cell_is_served_another_cells_graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, untagged: None):
    """``compile`` and ``fullgraph`` of one style trace one graph: each cell, run by the runner, compiles it through
    its own backend (a miss in the FX graph cache), so no verdict rests on code another cell's program generated;
    the same cell again hits its own. A user's untagged process is not served the harness's code."""
    from torch._dynamo.utils import counters

    from harness.case import load_case
    from harness.cell.runner import FRESH_AUTOTUNE_TAG, run_cell
    from tests.conftest import cell_spec

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    case = load_case("cases.sin", "sin")
    hits, tags = [], []
    for path in ("compile", "fullgraph", "compile"):
        outcome = run_cell(case, cell_spec("sin", "control", path), tmp_path, {}, "cpu")
        assert outcome.status == "pass" and outcome.capture.compiled, outcome.error
        hits.append(counters["inductor"]["fxgraph_cache_hit"])
        tags.append(torch.compiler.config.cache_key_tag)
    assert hits == [0, 0, 1]
    assert tags[0] == tags[2] != tags[1] and tags[0].startswith(f"{FRESH_AUTOTUNE_TAG}:sin-control-compile:")
    torch._dynamo.reset()
    counters.clear()
    with torch.compiler.config.patch(cache_key_tag=""):
        torch.compile(lambda x: torch.sin(x))(torch.ones(3001))
    assert counters["inductor"]["fxgraph_cache_hit"] == 0


INPLACE = """
import triton
from harness.case import Case
from cases.add_inplace import CASE as ADD, add_inplace_kernel

CASE = Case(**{**{name: getattr(ADD, name) for name in ADD.__dataclass_fields__}, "autotune_options": OPTIONS})
"""


def test_cells_whose_kernels_differ_only_in_the_autotuners_hooks_compile_under_different_tags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Inductor writes an autotuner's ``restore_value`` / ``reset_to_zero`` into the code it generates, and the FX
    graph cache does not key on them: two cells of one id whose kernels differ only there (two case modules, or one
    edited between runs that keep the cache folder) must not share a tag, or the second would load the first's
    code. (On CPU Dynamo cannot trace a user's Triton kernel: has_triton() is false, so the tag is what is checked
    here; bench/gpu/shared_tag.py shows the shared artifact on a GPU.)"""
    from harness.cell.runner import cache_tag
    from tests.conftest import cell_spec

    modules = {"inplace_restore": {"restore_value": ["x_ptr"]}, "inplace_reset": {"reset_to_zero": ["x_ptr"]}}
    for name, options in modules.items():
        (tmp_path / f"{name}.py").write_text(f"OPTIONS = {options!r}\n{INPLACE}")
    monkeypatch.syspath_prepend(str(tmp_path))
    specs = [cell_spec("add_inplace", "autotune", "compile", module=name) for name in modules]
    assert cache_tag(specs[0]) != cache_tag(specs[1])
    assert cache_tag(specs[0]) == cache_tag(specs[0])  # the cell's own later compiles hit
    other_path = cell_spec("add_inplace", "autotune", "fullgraph", module="inplace_restore")
    assert cache_tag(other_path) != cache_tag(specs[0])


def test_goals_show_a_graph_break_as_a_near_miss_and_warn_of_wrong_numbers_elsewhere():
    from tests.fast.test_chart import PASS, cells, goal_rows
    from tests.fast.test_records_report import results

    outside = {"status": "graph_break", "reason": "the kernel ran outside the compiled graph (4 graph break(s): x)"}
    wrong = {"status": "wrong", "error_type": "Mismatch", "error": "output: 1 / 9", "stage": "compare"}
    chart = render(
        results(
            *cells(
                {
                    "raw_jit": {"dynamic": outside, "eager": PASS},  # every cell a graph break: still a near miss
                    "autotune": {"dynamic": PASS, "eager": {"add": wrong}},
                    "control": {"dynamic": PASS},
                }
            ),
            goals={"dynamic shapes": ["dynamic"]},
        )
    )
    answers, near = goal_rows(chart)["dynamic shapes"][1:]
    assert answers == "**autotune** ⚠️"
    assert "- **autotune**: add on `eager`" in chart  # where it is wrong, once below the goals
    assert near.startswith("raw_jit: add ✂️ [") and "sin ✂️" in near and "softmax ✂️" in near
    assert "graph break: the kernel ran outside the compiled graph (4 graph break(s): x)" in chart  # the note
    assert "- ✂️ **graph break**" in chart


def test_a_run_in_which_no_cell_of_a_device_could_be_built_broke():
    from harness.report.broken import run_broke

    failed = {"status": "error", "stage": "build", "error_type": "ImportError", "error": "no module triton. Then"}
    records = [make_record(case, "raw_jit", "eager", **failed) for case in ("add", "sin")]
    env = {"paths": {"eager": {"device": "cuda"}, "cpu_fallback": {"device": "cpu"}}}
    cpu = make_record("add", "raw_jit", "cpu_fallback", status="pass")
    assert run_broke(typed({"environment": env, "cells": [*records, cpu]})) == (
        "no cell of the cuda paths could be built (2 error at build; first: no module triton.)"
    )
    built = make_record("mul", "raw_jit", "eager", status="wrong", stage="compare")
    assert run_broke(typed({"environment": env, "cells": [*records, built, cpu]})) is None


class _Probe(torch.autograd.Function):
    """A library's op as shipped: an autograd.Function whose forward calls the harness-registered op."""

    @staticmethod
    def forward(ctx, x):
        return torch.ops.harness.good_custom_op(x)

    @staticmethod
    def backward(ctx, grad):
        return grad


def test_an_op_in_a_higher_order_op_s_body_counts_as_captured(tmp_path: Path):
    """Dynamo traces a whole autograd.Function into one ``autograd_function_apply`` node whose bodies are
    subgraphs: the kernel (here an op) is in the graph, only one level down."""
    from harness.cell.context import Cell

    run("tests.fixtures.good", "custom_op", "cpu_compile", tmp_path)  # registers harness::good_custom_op
    body = torch.fx.symbolic_trace(lambda x: torch.ops.harness.good_custom_op.default(x))
    outer = torch.nn.Module()
    outer.body = body
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    graph.output(graph.call_module("body", (x,)))
    cell = Cell(make_case("nested"), "as_shipped", "cpu", None, tmp_path)
    cell.record_graph(torch.fx.GraphModule(outer, graph))
    assert cell.capture.captured == ("harness.good_custom_op.default",)


def test_a_half_precision_gradient_as_close_to_float64_as_the_reference_is_not_wrong():
    """A compiled bf16 reduction accumulates in another order than eager: outside a fixed tolerance of the eager
    bf16 reference, yet no further from the float64 numbers than that reference is (torch's own accuracy check).
    Numbers further off than that stay wrong."""
    from harness.kernel.compare import within_reference_error

    gen = torch.Generator().manual_seed(0)
    terms = torch.randn(136, 256, generator=gen, dtype=torch.float64)
    exact = terms.sum(0)
    eager = terms.bfloat16().cumsum(0)[-1]  # summed in bf16, one rounding per term
    fused = exact.bfloat16()  # accumulated in float32 or better, rounded once
    assert not torch.allclose(fused.double(), eager.double(), atol=1e-2, rtol=1.6e-2)  # the tolerance alone: wrong
    assert "against float64" in within_reference_error(fused, eager, exact, atol=1e-2)
    assert within_reference_error(fused + 0.5, eager, exact, atol=1e-2) is None  # wrong numbers stay wrong
    assert within_reference_error(fused.float(), eager.float(), exact, atol=1e-2) is None  # float32: tolerance only


def test_a_compiled_module_loaded_by_an_earlier_cell_is_loaded_anew(tmp_path: Path):
    """Inductor keeps each compiled module it loaded (and the kernels in it, autotuned already) in memory, keyed
    by its file: a later cell of the same process compiling the same graph got them back and benchmarked
    nothing. After the harness's per-cell setting, the same file loads as a new module."""
    from torch._inductor.codecache import PyCodeCache

    from harness.cell.runner import fresh_autotune

    source = tmp_path / "compiled_graph.py"
    source.write_text("TUNED = []\n")
    first = PyCodeCache.load_by_key_path("compiled_graph", str(source))
    first.TUNED.append("config picked by the first cell")
    assert PyCodeCache.load_by_key_path("compiled_graph", str(source)) is first  # in memory: the tuned one
    fresh_autotune()
    again = PyCodeCache.load_by_key_path("compiled_graph", str(source))
    assert again is not first and again.TUNED == []
