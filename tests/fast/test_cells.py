"""Cells run in this process on CPU: real outcomes of real cases, and every status a cell can get."""

from pathlib import Path

import pytest
import torch

from harness.case import Case, load_case, load_cases
from harness.cell.runner import build, memory, run_cell
from harness.kernel.compare import Mismatch, Tolerance, assert_match, dtype_name
from harness.matrix.config import load_matrix
from harness.spec import CellSpec
from tests.conftest import REPO

MATRIX = load_matrix(REPO / "matrix.toml")
BUILT: dict = {}  # styles register torch.library ops once per process


def run(case: str | Case, style: str, path: str, tmp_path: Path, device: str | None = None) -> dict:
    """A cell in this process, its outcome's fields: a case of the matrix by id, the (first) case of a module
    by its dotted name, or a Case; the path as matrix.toml declares it, on ``device`` when given."""
    module = case.id if isinstance(case, Case) else case if "." in case else MATRIX.modules[case]
    loaded = case if isinstance(case, Case) else load_cases(module)[0]
    tolerance = MATRIX.tolerances[dtype_name(loaded.dtype)]
    spec = CellSpec(loaded.id, module, style, MATRIX.path(path), tolerance)
    return vars(run_cell(loaded, spec, tmp_path, BUILT, device))


@pytest.mark.parametrize("case", MATRIX.cases)
def test_triton_op_cpu_fallback_passes_and_raw_kernel_does_not(case: str, tmp_path: Path):
    assert run(case, "triton_op", "cpu_fallback", tmp_path)["status"] == "pass"
    assert run(case, "control", "cpu_fallback", tmp_path)["status"] == "pass"
    raw = run(case, "raw_jit", "cpu_fallback", tmp_path)
    assert (raw["status"], raw["stage"]) == ("error", "run")
    assert raw["error"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only behaviour")
def test_cuda_cell_is_skipped_with_reason(tmp_path: Path):
    record = run("sin", "triton_op", "aoti_standalone", tmp_path)
    assert (record["status"], record["reason"]) == ("skip", "no CUDA device")


def test_wrong_cpu_kernel_is_caught_as_wrong(tmp_path: Path):
    record = run("tests.fixtures.wrong", "triton_op", "cpu_fallback", tmp_path)
    assert (record["status"], record["stage"], record["error_type"]) == ("wrong", "compare", "Mismatch")
    assert "Mismatched elements: 1 / 1001" in record["error"]
    assert run("tests.fixtures.good", "triton_op", "cpu_fallback", tmp_path)["status"] == "pass"


def test_mutating_op_cannot_train_but_still_runs(tmp_path: Path):
    assert run("add_inplace", "custom_op", "cpu_fallback", tmp_path)["status"] == "pass"
    wrapped = build(load_case("cases.add_inplace", "add_inplace"), "custom_op", BUILT)  # its cell ran the script
    with pytest.raises(RuntimeError, match="Cannot register autograd formula for non-functional operator"):
        wrapped.trainable()


def test_compile_error_gets_its_stage_and_graph(tmp_path: Path):
    record = run("sin", "triton_op", "cpu_compile", tmp_path)
    assert (record["status"], record["stage"]) == ("error", "compile")
    assert record["capture"].captured == ("mylib.sin",)  # the op as its script names it
    opaque = run("sin", "custom_op", "cpu_compile", tmp_path)
    assert opaque["status"] == "pass" and opaque["capture"].captured == ("mylib.sin",)


def test_library_wrappers_build_around_every_decorator_stack(tmp_path: Path):
    """On CPU the library ops run their CPU kernel eagerly whatever the stack; under torch.compile triton_op hands
    the decorated kernel to wrap_triton (which refuses heuristics outermost) and custom_op stays opaque."""
    for style in ("triton_op_autotune", "triton_op_heuristics_autotune", "triton_op_autotune_heuristics"):
        assert run("sin", style, "cpu_fallback", tmp_path)["status"] == "pass", style
    for style in ("custom_op_autotune", "custom_op_heuristics_autotune", "custom_op_autotune_heuristics"):
        record = run("add", style, "cpu_compile", tmp_path)
        assert record["status"] == "pass" and record["capture"].captured == ("mylib.add",), style
    traced = run("sin", "triton_op_autotune", "cpu_compile", tmp_path)
    assert (traced["status"], traced["stage"]) == ("error", "compile")  # as the jit kernel's: no CPU Triton backend
    refused = run("sin", "triton_op_heuristics_autotune", "cpu_compile", tmp_path)
    assert refused["status"] == "error" and "wrap_triton only works on functions annotated with" in refused["error"]


@pytest.mark.parametrize(
    ("actual", "message"),
    [
        (torch.tensor([1.0, 2.0, 3.1]), "Mismatched elements: 1 / 3"),
        (torch.tensor([1.0, 2.0, float("nan")]), "Mismatched elements: 1 / 3"),
        (torch.tensor([1.0, 2.0]), r"of shape \(3,\) \(the reference's\), got torch.float32 of shape \(2,\)"),
        (torch.tensor([1, 2, 3]), r"expected torch.float32 of shape \(3,\) \(the reference's\), got torch.int64"),
        (None, "expected a tensor, got NoneType"),
    ],
)
def test_comparison_fails_on_every_kind_of_difference(actual, message: str):
    with pytest.raises(Mismatch, match=message):
        assert_match("output", actual, torch.tensor([1.0, 2.0, 3.0]), Tolerance(atol=1e-5, rtol=1e-5))


def test_comparison_accepts_within_tolerance_and_not_beyond():
    assert_match("output", torch.tensor([1.0, 2.0 + 5e-6]), torch.tensor([1.0, 2.0]), Tolerance(1e-5, 1e-6))
    with pytest.raises(Mismatch, match="Mismatched elements: 1 / 2"):
        assert_match("output", torch.tensor([1.0, 2.0 + 5e-5]), torch.tensor([1.0, 2.0]), Tolerance(1e-5, 1e-6))


def test_memory_is_the_resident_set_now_and_its_peak(tmp_path: Path):
    """rss_mb follows what the process holds (128 MiB more while a tensor of that size lives, back after);
    peak_rss_mb keeps the most it held; a cell's record has both, as measured when it ended."""
    before = memory("cpu")
    block = torch.ones(2**25)  # 128 MiB, written
    held = memory("cpu")
    del block
    after = memory("cpu")
    assert held["rss_mb"] - before["rss_mb"] == pytest.approx(128, abs=16)
    assert held["rss_mb"] - after["rss_mb"] == pytest.approx(128, abs=16)
    assert after["peak_rss_mb"] >= held["rss_mb"] - 4 > after["rss_mb"]  # the kernel's high-water mark lags a little
    measured = run("sin", "control", "cpu_fallback", tmp_path)["measurements"]
    assert measured.rss_mb == pytest.approx(memory("cpu")["rss_mb"], abs=16)
    assert measured.peak_rss_mb >= held["rss_mb"] - 4


def test_a_cells_gpu_mark_collects_earlier_cycles_and_freezes_what_survives(monkeypatch: pytest.MonkeyPatch):
    """Before a CUDA cell: a reference cycle an earlier cell left is collected (not freed inside the cell's peak),
    what is still reachable is frozen (the next cell's collection does not walk it again), and the allocated bytes
    then are the cell's baseline."""
    import gc
    import weakref

    from harness.cell.runner import settle_gpu_memory

    marks: list[str] = []
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda: marks.append("reset"))
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda: 4096)

    class Node:
        pass

    garbage, kept = Node(), Node()
    garbage.me, kept.me = garbage, kept  # two cycles, one of them still reachable
    gone = weakref.ref(garbage)
    del garbage
    frozen = gc.get_freeze_count()
    try:
        assert settle_gpu_memory() == 4096 and marks == ["reset"]
        assert gone() is None
        assert gc.get_freeze_count() > frozen and not any(obj is kept for obj in gc.get_objects())
    finally:
        gc.unfreeze()
