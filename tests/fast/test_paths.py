"""The paths of issue 15 run in this process on CPU: real outcomes per style, and each path able to fail."""

import dataclasses
import re
from pathlib import Path

import pytest
import torch

from harness.case import load_cases
from harness.cell.context import Cell
from harness.cell.paths import PATH_GROUPS, PATHS
from harness.cell.paths.export import _other_sizes
from tests.fast.test_cells import MATRIX
from tests.fast.test_cells import run as run_here

NEW_PATHS = (
    "export_dynamic_strict",
    "export_dynamic_nonstrict",
    "aoti_dynamic",
    "export_saveload",
    "subclass_eager",
    "subclass_compile",
    "vmap",
)
# On CPU, Inductor decomposes triton_op into its Triton body (as on cpu_compile), which has no CPU backend; the
# opaque custom_op keeps calling its CPU kernel. Export keeps triton_op as an op, so exported programs run.
# (torch 2.15 with triton 3.9: "triton not built with the 'cpu' backend")
NO_CPU_DRIVER = r"0 active drivers|triton not built with the 'cpu' backend"
TRITON_OP_ON_CPU = {
    "subclass_compile": ("error", "compile", NO_CPU_DRIVER),
    "aoti_dynamic": ("error", "compile", NO_CPU_DRIVER),
}


def case_of(case_id: str):
    (case, *_) = load_cases(case_id if "." in case_id else MATRIX.modules[case_id])
    return case


def run(case, style: str, path: str, tmp_path: Path) -> dict:
    """A cell on CPU tensors, with the examples its path runs in matrix.toml."""
    return run_here(case, style, path, tmp_path, device="cpu")


def test_every_path_has_a_group_and_the_new_paths_are_in_the_matrix():
    assert set(PATH_GROUPS) == set(PATHS)
    assert set(PATH_GROUPS.values()) == {"compile", "export and deploy", "training", "subsystems"}
    assert {PATH_GROUPS[p] for p in NEW_PATHS[:4]} == {"export and deploy"}
    assert {PATH_GROUPS[p] for p in NEW_PATHS[4:]} == {"subsystems"}
    assert set(NEW_PATHS) <= {spec.id for spec in MATRIX.paths}


@pytest.mark.parametrize("case", ["matmul", "silu"])
def test_control_passes_every_new_path(case: str, tmp_path: Path):
    for path in NEW_PATHS:
        record = run(case, "control", path, tmp_path)
        assert record["status"] == "pass", (path, record["error"])


@pytest.mark.parametrize("style", ["triton_op", "custom_op"])
def test_library_styles_on_cpu(style: str, tmp_path: Path):
    for path in NEW_PATHS:
        record = run("softmax", style, path, tmp_path)
        expected = TRITON_OP_ON_CPU.get(path) if style == "triton_op" else None
        status, stage, message = expected or ("pass", None, None)
        assert (record["status"], record["stage"]) == (status, stage), (path, record["error"])
        assert message is None or re.search(message, record["error"]), (path, record["error"])


def test_raw_kernel_fails_every_new_path_on_cpu(tmp_path: Path):
    """Where the Triton launch is reached: traced by export (and AOTInductor), run by the others; and why: no
    Triton driver for CPU tensors (Dynamo refuses the driver lookup, or to trace Triton's builtin that makes it, or
    Triton finds no active driver or no CPU backend)."""
    for path in NEW_PATHS:
        record = run("sin", "raw_jit", path, tmp_path)
        stage = "trace" if path.startswith(("export", "aoti")) else "run"
        assert (record["status"], record["stage"]) == ("error", stage), (path, record["error"])
        why = rf"{NO_CPU_DRIVER}|Driver\.is_active|the builtin `triton\._C"
        assert re.search(why, record["error"]), (path, record["error"])


def test_in_place_library_ops_have_no_vmap_rule(tmp_path: Path):
    assert run("add_inplace", "control", "vmap", tmp_path)["status"] == "pass"
    for style in ("triton_op", "custom_op"):
        record = run("add_inplace", style, "vmap", tmp_path)
        assert (record["status"], record["stage"]) == ("error", "run")
        assert "Batching rule not implemented for mylib::add_inplace;" in record["error"]  # the script's op


@pytest.mark.parametrize("path", ["subclass_eager", "vmap"])
def test_wrong_cpu_kernel_is_caught_as_wrong(path: str, tmp_path: Path):
    for style in ("triton_op", "custom_op"):
        record = run("tests.fixtures.wrong", style, path, tmp_path)
        assert (record["status"], record["stage"], record["error_type"]) == ("wrong", "compare", "Mismatch"), record
        assert "Mismatched elements: 1 / " in record["error"]
        assert run("tests.fixtures.good", style, path, tmp_path)["status"] == "pass"


class Unwrapping(torch.nn.Module):
    """Calls the op and hands back a plain tensor: the subclass paths must not take it for a pass."""

    def __init__(self, op):
        super().__init__()
        self.op = op

    def forward(self, x):
        out = self.op(x)
        return out.a if hasattr(out, "a") else out


def test_subclass_output_must_stay_a_subclass(tmp_path: Path):
    case = dataclasses.replace(case_of("tests.fixtures.good"), id="unwrapping", module=Unwrapping)
    assert run(case, "control", "eager", tmp_path)["status"] == "pass"
    record = run(case, "control", "subclass_eager", tmp_path)
    assert (record["status"], record["error"]) == ("wrong", "output: expected a TwoTensor, got Tensor")


def test_dynamic_dims_decide_what_export_marks_dynamic(tmp_path: Path):
    """matmul's size is M only: declaring b's dim 0 (K) dynamic with the same Dim is refused at trace; left
    undeclared, only the dim the size moves is marked and the export passes."""
    matmul = case_of("matmul")
    record = run(dataclasses.replace(matmul, dynamic_dims=((0,), (0,))), "control", "export_dynamic_strict", tmp_path)
    assert (record["status"], record["stage"]) == ("error", "trace")
    record = run(dataclasses.replace(matmul, dynamic_dims=None), "control", "export_dynamic_strict", tmp_path)
    assert record["status"] == "pass"


def test_undeclared_dynamic_dims_are_the_dims_the_size_moves():
    """A case without dynamic_dims: a weight's dim 0 and a scalar stay static, a batch dim is dynamic."""
    dropout = case_of("examples.dropout")  # (x, noise, p: float), no dynamic_dims
    assert dropout.dynamic_dims is None and dropout.size_dims() == ((0,), (0,), ())
    weighted = dataclasses.replace(case_of("rmsnorm"), dynamic_dims=None)  # (x, weight, eps)
    assert weighted.size_dims() == ((0,), (), ())
    assert dataclasses.replace(weighted, dynamic_dims=((0,), (0,), ())).size_dims() == ((0,), (0,), ())


def test_undeclared_dynamic_dims_export_a_weighted_case(tmp_path: Path):
    """rmsnorm's weight does not grow with the size: left undeclared, its dims stay static and export passes."""
    undeclared = dataclasses.replace(case_of("rmsnorm"), dynamic_dims=None)
    assert run(undeclared, "control", "export_dynamic_strict", tmp_path)["status"] == "pass"


def test_other_sizes_are_at_least_two_within_bounds(tmp_path: Path):
    sin = case_of("sin")
    cell = Cell(case=sin, style="control", device="cpu", tolerance=None, workdir=tmp_path)
    assert _other_sizes(cell) == (3001, [1000, 5003])
    cell.case = dataclasses.replace(sin, sizes=(100,), size_bounds=(2, 101))
    assert _other_sizes(cell) == (100, [101, 99])
    cell.example = (101, 0)
    assert _other_sizes(cell) == (101, [100, 2])


def test_vmap_items_keep_the_layout_the_case_gives():
    """``vmap`` stacks each input set along a new dim 0: a transposed input stays transposed in every item (with
    ``torch.stack`` each item was contiguous, and a kernel that ignores strides, wrong on every other path, passed
    ``vmap``; found by a probe)."""
    import torch

    from harness.cell.paths.subsystems import stacked

    items = [torch.randn(100, 37).t() for _ in range(3)]
    batch = stacked(tuple(items))
    assert batch.shape == (3, 37, 100)
    for k, item in enumerate(items):
        assert batch[k].stride() == item.stride() and torch.equal(batch[k], item)
    assert stacked((torch.ones(4), torch.zeros(4))).is_contiguous()
