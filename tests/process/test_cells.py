"""Cells run in this process on CPU: real outcomes of real cases, and every status a cell can get."""

import json
import re
from pathlib import Path

from harness.case import load_cases
from harness.cell.runner import run_cell
from harness.kernel.compare import dtype_name
from harness.spec import CellSpec, RunLocations
from tests.fast.test_cells import BUILT, MATRIX, run


def test_standalone_child_sees_torch_only(tmp_path: Path):
    """aoti_standalone on CPU tensors: each package runs in a fresh fork of one torch-only server, so an op this
    process registered (custom_op) is missing there, while a pure-PyTorch package loads and runs right."""
    from harness.cell.standalone import _own_server

    control = run("sin", "control", "aoti_standalone", tmp_path, device="cpu")
    assert control["status"] == "pass", control["error"]
    server = _own_server[0]
    custom = run("sin", "custom_op", "aoti_standalone", tmp_path, device="cpu")
    assert (custom["status"], custom["stage"]) == ("error", "run")
    assert "Could not find schema for mylib::sin" in custom["error"]  # the op as its script names it
    assert _own_server == [server]  # the second cell reused the server: one torch import for both


def test_only_first_attempts_share_the_strict_package(tmp_path: Path):
    """aoti_strict builds the package into the run's folder; aoti_standalone's first attempt, whose exported program
    is the same, loads it, a re-run (attempt 2) compiles anew. A strided view (layernorm's x) reaches the fresh
    process as it is."""
    from dataclasses import replace

    strict, standalone = specs("layernorm", "control", "aoti_strict", "aoti_standalone")
    case, shared_folder = load_cases(MATRIX.modules["layernorm"])[0], packages(tmp_path)
    built = vars(run_cell(case, strict, tmp_path, BUILT, "cpu", shared_folder))
    assert built["status"] == "pass", built["error"]
    assert built["measurements"].package_built_by is None and built["measurements"].compile_seconds > 0
    shared = vars(run_cell(case, standalone, tmp_path, BUILT, "cpu", shared_folder))
    assert shared["status"] == "pass", shared["error"]
    assert shared["measurements"].package_built_by == "layernorm-control-aoti_strict"
    assert shared["measurements"].compile_seconds is None  # loaded it
    again = vars(run_cell(case, replace(standalone, attempt=2), tmp_path, BUILT, "cpu", shared_folder))
    assert again["status"] == "pass" and again["measurements"].package_built_by is None
    assert again["measurements"].compile_seconds > 0  # compiled anew


def test_aoti_nonstrict_loads_the_strict_package_only_where_its_program_is_the_same(tmp_path: Path):
    """A non-strict export printed, weighed and laid out as the strict one is compiled by nobody twice: the cell
    loads the case and style's strict package; a program that differs (another digest) compiles its own."""
    strict, nonstrict = specs("layernorm", "control", "aoti_strict", "aoti_nonstrict")
    case, shared_folder = load_cases(MATRIX.modules["layernorm"])[0], packages(tmp_path)
    assert vars(run_cell(case, strict, tmp_path, BUILT, "cpu", shared_folder))["status"] == "pass"
    shared = vars(run_cell(case, nonstrict, tmp_path, BUILT, "cpu", shared_folder))
    assert shared["status"] == "pass", shared["error"]
    assert shared["measurements"].package_built_by == "layernorm-control-aoti_strict"
    assert shared["measurements"].compile_seconds is None
    for file in (tmp_path / "packages").glob("layernorm-control-*"):  # as if the strict program had been another
        file.rename(file.with_name(file.name.replace("layernorm-control-", "layernorm-control-0")))
    own = vars(run_cell(case, nonstrict, tmp_path, BUILT, "cpu", shared_folder))
    assert own["status"] == "pass" and own["measurements"].package_built_by is None
    assert own["measurements"].compile_seconds > 0


def test_a_package_that_calls_its_builders_op_is_loaded_only_where_that_op_is_registered_alike(tmp_path: Path):
    """custom_op's package calls the op by the namespace its program registered (named for the op's text): a
    cell of this process, which registered that namespace from the same text, loads it; where this process
    registered it from another text (or never did) the cell compiles its own."""
    from harness.cell import scripted

    strict, nonstrict, standalone = specs("sin", "custom_op", "aoti_strict", "aoti_nonstrict", "aoti_standalone")
    case, shared_folder = load_cases(MATRIX.modules["sin"])[0], packages(tmp_path)
    built = vars(run_cell(case, strict, tmp_path, BUILT, "cpu", shared_folder))
    assert built["status"] == "pass" and built["measurements"].package_built_by is None, built["error"]
    shared = vars(run_cell(case, nonstrict, tmp_path, BUILT, "cpu", shared_folder))
    assert shared["status"] == "pass", shared["error"]
    assert shared["measurements"].package_built_by == "sin-custom_op-aoti_strict"
    builder = json.loads(next((tmp_path / "packages").glob("sin-custom_op-*.json")).read_text())
    assert re.fullmatch(r"mylib_[0-9a-f]{8}(_\d+)?", builder["namespace"]), builder  # the package calls the op by it
    scripted.REGISTERED[builder["namespace"]] = "0" * 8  # as if registered here from another text
    own = vars(run_cell(case, standalone, tmp_path, BUILT, "cpu", shared_folder))
    assert own["measurements"].package_built_by is None and own["measurements"].compile_seconds > 0
    assert (own["status"], own["stage"]) == ("error", "run")  # the torch-only process has no such op
    assert "Could not find schema for mylib::sin" in own["error"]  # as the script names it


def specs(case: str, style: str, *paths: str) -> list[CellSpec]:
    """The specs of ``case`` in ``style`` on ``paths``, as the matrix declares them."""
    tolerance = MATRIX.tolerances[dtype_name(load_cases(MATRIX.modules[case])[0].dtype)]
    return [CellSpec(case, MATRIX.modules[case], style, MATRIX.path(path), tolerance) for path in paths]


def packages(tmp_path: Path) -> RunLocations:
    """A run's package folder, in ``tmp_path``."""
    (tmp_path / "packages").mkdir()
    return RunLocations(packages=str(tmp_path / "packages"))
