"""Cells run in this process on CPU: real outcomes of real cases, and every status a cell can get."""

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
    assert "Could not find schema for harness::sin_custom_op" in custom["error"]
    assert _own_server == [server]  # the second cell reused the server: one torch import for both


def test_only_first_attempts_share_the_strict_package(tmp_path: Path):
    """aoti_strict builds the package into the run's folder; aoti_standalone's first attempt loads it, a re-run
    (attempt 2) exports and compiles anew. A strided view (layernorm's x) reaches the fresh process as it is."""
    from dataclasses import replace

    (tmp_path / "packages").mkdir()
    shared_folder = RunLocations(packages=str(tmp_path / "packages"))
    case = load_cases(MATRIX.modules["layernorm"])[0]
    tolerance = MATRIX.tolerances[dtype_name(case.dtype)]
    strict, standalone = (
        CellSpec("layernorm", MATRIX.modules["layernorm"], "control", MATRIX.path(p), tolerance)
        for p in ("aoti_strict", "aoti_standalone")
    )
    built = vars(run_cell(case, strict, tmp_path, BUILT, "cpu", shared_folder))
    assert built["status"] == "pass", built["error"]
    assert built["measurements"].package_built_by is None
    package = tmp_path / "layernorm-control-strict.pt2"  # what a cell of the case and style compiles
    compiled = package.stat().st_mtime_ns
    shared = vars(run_cell(case, standalone, tmp_path, BUILT, "cpu", shared_folder))
    assert shared["status"] == "pass", shared["error"]
    assert shared["measurements"].package_built_by == "layernorm-control-aoti_strict"
    assert shared["measurements"].compile_seconds is None and package.stat().st_mtime_ns == compiled  # loaded it
    again = vars(run_cell(case, replace(standalone, attempt=2), tmp_path, BUILT, "cpu", shared_folder))
    assert again["status"] == "pass" and again["measurements"].package_built_by is None
    assert package.stat().st_mtime_ns > compiled  # compiled anew


def test_aoti_nonstrict_loads_the_strict_package_only_where_its_program_is_the_same(tmp_path: Path):
    """A non-strict export printed, weighed and laid out as the strict one is compiled by nobody twice: the cell
    loads the case and style's strict package; a program that differs (another digest) compiles its own."""
    import json

    (tmp_path / "packages").mkdir()
    shared_folder = RunLocations(packages=str(tmp_path / "packages"))
    case = load_cases(MATRIX.modules["layernorm"])[0]
    tolerance = MATRIX.tolerances[dtype_name(case.dtype)]
    strict, nonstrict = (
        CellSpec("layernorm", MATRIX.modules["layernorm"], "control", MATRIX.path(p), tolerance)
        for p in ("aoti_strict", "aoti_nonstrict")
    )
    assert vars(run_cell(case, strict, tmp_path, BUILT, "cpu", shared_folder))["status"] == "pass"
    shared = vars(run_cell(case, nonstrict, tmp_path, BUILT, "cpu", shared_folder))
    assert shared["status"] == "pass", shared["error"]
    assert shared["measurements"].package_built_by == "layernorm-control-aoti_strict"
    assert shared["measurements"].compile_seconds is None
    builder = tmp_path / "packages" / "layernorm-control-shared-strict.json"
    builder.write_text(json.dumps({**json.loads(builder.read_text()), "program": "another"}))
    own = vars(run_cell(case, nonstrict, tmp_path, BUILT, "cpu", shared_folder))
    assert own["status"] == "pass" and own["measurements"].package_built_by is None
    assert own["measurements"].compile_seconds > 0
