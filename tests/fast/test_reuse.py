"""--reuse: a cell whose key (versions, GPU, harness and case sources, matrix entry) is unchanged keeps its
record from the earlier run and is not run; a pull request that touches one case module re-runs that case's
cells only. A wrong, flaky, crashed or timed-out cell, or one without a key, is never reused."""

import dataclasses
import json
from pathlib import Path

import pytest

from harness.execution.machine import versions
from harness.kernel.compare import Tolerance
from harness.matrix.config import load_matrix
from harness.records import reuse
from harness.records.reuse import cell_keys, run_ingredients
from tests.conftest import REPO, harness_main, make_record, run_harness, typed
from tests.fast.test_records_report import render, results, section, table

REUSED = "♻"


def kernels(tmp_path: Path) -> Path:
    """A package of two case modules, copies of tests/fixtures/good.py defining cases k1 and k2."""
    package = tmp_path / "lib" / "mykernels"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    good = (REPO / "tests" / "fixtures" / "good.py").read_text()
    for name in ("k1", "k2"):
        (package / f"{name}.py").write_text(good.replace('"good"', f'"{name}"'))
    return package


def write_the_matrix(write_matrix, package: Path) -> Path:
    cases = ["mykernels.k1", "mykernels.k2", "tests.fixtures.wrong"]
    matrix = write_matrix(cases, ["triton_op", "control"], {"cpu_fallback": ("cpu", 120)})
    matrix.write_text(matrix.read_text() + "[run]\nreruns = 1\n")
    return matrix


def run(matrix: Path, out: Path, package: Path, *args: str) -> dict:
    env = {"PYTHONPATH": str(package.parent)}
    done = run_harness("run", "--matrix", str(matrix), "--report-dir", str(out), "-q", *args, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    return json.loads((out / "results.json").read_text())


def by_id(data: dict) -> dict[str, dict]:
    return {cell["id"]: cell for cell in data["cells"]}


def source(data: dict, file: Path) -> dict:
    env = data["environment"]
    return {"timestamp": env["timestamp"], "commit": env["commit"], "file": str(file)}


def test_reuse_of_a_missing_file_is_one_line(write_matrix, tmp_path: Path):
    matrix = write_matrix(["tests.fixtures.good"], ["control"], {"cpu_fallback": ("cpu", 60)})
    done = harness_main("run", "--matrix", str(matrix), "--report-dir", str(tmp_path), "--reuse", "nosuch.json")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert done.stderr.startswith("error: nosuch.json: (file): no such file")


def test_only_a_stable_verdict_with_the_same_key_is_reusable():
    def record(**fields) -> dict:
        return {**make_record("add", "raw_jit", "eager", **fields), "key": "k"}

    def reusable(record: dict, key: str | None) -> bool:
        return reuse.reusable(typed(record), key)

    assert reusable(record(status="pass"), "k") and reusable(record(status="skip"), "k")
    assert reusable(record(status="error", error_type="RuntimeError"), "k")
    assert reusable(record(status="pass", outcomes=["pass", "pass"]), "k")
    assert not reusable(record(status="pass"), "other") and not reusable(record(status="pass"), None)
    assert not reusable({**record(status="pass"), "key": None}, None)
    for status in ("wrong", "crash", "timeout"):
        assert not reusable(record(status=status), "k")
    assert not reusable(record(status="pass", outcomes=["pass", "wrong"]), "k")  # flaky
    assert not reusable(record(status="error", cuda_fault=True), "k")
    reproduced = {"script": "repros/x.py", "reproduced": True, "line": "CUDA error: an illegal memory access"}
    faulted = typed(record(status="error", cuda_fault=True))
    assert reuse.reusable(faulted.replace(confirmation=reproduced), "k")  # the fault was shown outside the harness
    wrong = typed(record(status="wrong", outcomes=["wrong"] * 5))
    assert reuse.reusable(wrong.replace(confirmation=reproduced), "k") and not reuse.reusable(wrong, "k")
    flaky = typed(record(status="wrong", outcomes=["wrong", "pass"])).replace(confirmation=reproduced)
    assert not reuse.reusable(flaky, "k")  # its rate is re-measured
    suspect = typed(record(status="error", error_type="RuntimeError")).replace(confirmation={"reproduced": False})
    assert not reuse.reusable(suspect, "k")
    assert not reusable(record(status="error", error_type="CellProcessFailed"), "k")  # not a verdict


def test_a_key_follows_every_ingredient(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    matrix = load_matrix(REPO / "matrix.toml")
    keys = cell_keys(matrix, versions(), "cpu")
    assert keys == cell_keys(matrix, versions(), "cpu") and len(set(keys.values())) == len(keys)  # stable, one per cell
    assert set(keys) == set(matrix.cell_ids())

    def changed(other: dict[str, str]) -> set[str]:
        return {cell for cell in keys if other[cell] != keys[cell]}

    everything = set(keys)
    assert changed(cell_keys(matrix, versions(), "NVIDIA H200")) == everything
    assert changed(cell_keys(matrix, {**versions(), "torch": "9.9.9"}, "cpu")) == everything  # another torch
    assert changed(cell_keys(dataclasses.replace(matrix, reruns=matrix.reruns + 1), versions(), "cpu")) == everything
    assert changed(cell_keys(dataclasses.replace(matrix, environment={"X": "1"}), versions(), "cpu")) == everything
    looser = {**matrix.tolerances, "float32": Tolerance(1e-3, 1e-3)}
    float32 = {c.id for c in matrix.cells if c.tolerance == matrix.tolerances["float32"]}
    assert changed(cell_keys(dataclasses.replace(matrix, tolerances=looser), versions(), "cpu")) == float32
    eager = dataclasses.replace(matrix.path("eager"), timeout=1)
    paths = tuple(eager if p.id == "eager" else p for p in matrix.paths)
    assert changed(cell_keys(dataclasses.replace(matrix, paths=paths), versions(), "cpu")) == {
        c for c in keys if c.endswith("-eager")
    }
    axes = {**matrix.style_axes, "raw_jit": ("autotune", "launcher")}
    assert changed(cell_keys(dataclasses.replace(matrix, style_axes=axes), versions(), "cpu")) == {
        c.id for c in matrix.cells if c.style == "raw_jit"
    }
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert changed(cell_keys(matrix, versions(), "cpu")) == everything
    # the flag as keys have always spelled it, so that older results files keep their reusable records
    assert run_ingredients(matrix, versions(), "cpu")["triton_interpret"] == "1"
    monkeypatch.delenv("TRITON_INTERPRET")
    assert run_ingredients(matrix, versions(), "cpu")["triton_interpret"] == ""


def test_a_case_modules_key_follows_the_users_modules_it_imports_and_the_libraries_they_import(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    """A case module that imports a module of the user's (its kernel library in a checkout) and an installed
    library (a shipped op): a change to either is a new key (the old key read the case module's own file only, so
    --reuse kept passes of a kernel since made wrong)."""
    package = tmp_path / "keyed_lib"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "kernels.py").write_text("import tabulate\n\nSCALE = 1.0\n")
    (tmp_path / "keyed_cases.py").write_text("import math\n\nimport keyed_lib.kernels\nimport keyed_lib\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    first = reuse.module_digest("keyed_cases")
    assert first and reuse.module_digest("keyed_cases") == first
    (package / "kernels.py").write_text("import tabulate\n\nSCALE = 1.5\n")
    second = reuse.module_digest("keyed_cases")
    assert second != first
    monkeypatch.setattr(reuse, "_version", lambda top: "9.9" if top == "tabulate" else "")
    assert reuse.module_digest("keyed_cases") != second  # another release of the library it imports
    assert reuse.libraries(["keyed_cases"]) == {"tabulate": "9.9"}
    assert reuse.module_digest("no_such_module_here") == ""


def target_metadata(site: Path, name: str, version: str) -> None:
    """The metadata ``pip install --target site`` writes beside package ``name`` (its files already there)."""
    info = site / f"{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "RECORD").write_text(f"{name}/__init__.py,,\n{name}-{version}.dist-info/METADATA,,\n")


def test_a_library_installed_with_pip_target_is_a_library_not_the_users_code(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    """``pip install --target DIR`` (a GPU runner without an index; Liger there): its files sit beside the
    distribution's metadata, no site-packages in their path. Walked as the user's code, every module of the library
    was read and the libraries they import looked up, importing them (transformers, under Liger's modules: the
    Liger suite's 14 workers waited 12-16 s with no cell on one H200); the key names its version instead. A checkout
    of the user's on the path, with no metadata beside it, is still the user's code."""
    site, checkout = tmp_path / "target", tmp_path / "checkout"
    for folder, name in ((site, "targetlib"), (checkout, "mylib")):
        (folder / name).mkdir(parents=True)
        (folder / name / "__init__.py").write_text("import no_such_dependency_here.models\n")
    target_metadata(site, "targetlib", "2.5")
    (tmp_path / "target_cases.py").write_text("import targetlib\nimport mylib\n")
    for folder in (tmp_path, site, checkout):
        monkeypatch.syspath_prepend(str(folder))
    assert reuse.installed_file(site / "targetlib" / "__init__.py")
    assert not reuse.installed_file(checkout / "mylib" / "__init__.py")
    reached = dict(reuse._reached("target_cases"))
    assert reached["targetlib"] == "2.5" and isinstance(reached["mylib"], bytes)
    assert "no_such_dependency_here" not in reached


def test_the_installed_distributions_are_scanned_once_for_every_case_module(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    """Liger's eight modules import one library: the scan of every installed distribution (0.35 s each on a CPU
    host) was taken once per module, before the first cell; now once per import path, and a new path scans again."""
    site = tmp_path / "target"
    (site / "onelib").mkdir(parents=True)
    (site / "onelib" / "__init__.py").write_text("X = 1\n")
    target_metadata(site, "onelib", "1.5")
    for name in ("one_a", "one_b", "one_c"):
        (tmp_path / f"{name}.py").write_text("import onelib\n")
    for folder in (tmp_path, site):
        monkeypatch.syspath_prepend(str(folder))
    scans = []
    scan = reuse.importlib.metadata.packages_distributions
    monkeypatch.setattr(reuse.importlib.metadata, "packages_distributions", lambda: scans.append(1) or scan())
    reuse._distributions.cache_clear()
    assert all(reuse.module_digest(name) for name in ("one_a", "one_b", "one_c"))
    assert reuse.libraries(["one_a", "one_b", "one_c"]) == {"onelib": "1.5"} and len(scans) == 1
    monkeypatch.syspath_prepend(str(tmp_path / "elsewhere"))
    assert reuse.libraries(["one_a"]) == {"onelib": "1.5"} and len(scans) == 2


def test_a_case_modules_key_follows_a_module_it_imports_by_name(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """``importlib.import_module("dyn_helper")``: the helper is the user's code the cells run, keyed as an import."""
    (tmp_path / "dyn_helper.py").write_text("SCALE = 1.0\n")
    (tmp_path / "dyn_cases.py").write_text(
        "import importlib\n\nhelper = importlib.import_module('dyn_helper')\nother = __import__('dyn_other')\n"
    )
    (tmp_path / "dyn_other.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    first = reuse.module_digest("dyn_cases")
    (tmp_path / "dyn_helper.py").write_text("SCALE = 1.5\n")
    second = reuse.module_digest("dyn_cases")
    (tmp_path / "dyn_other.py").write_text("X = 2\n")
    assert len({first, second, reuse.module_digest("dyn_cases")}) == 3


def test_a_reused_record_is_marked_and_the_legend_names_its_run():
    source = {"timestamp": "2026-11-20T08:00:00+00:00", "commit": "abc123", "file": "old/results.json"}
    reused = {**make_record("sin", "raw_jit", "eager", status="pass"), "reused_from": source}
    chart = render(results(reused, make_record("sin", "autotune", "eager", status="pass")))
    assert table(chart, "Summary") == {"style \\ path": ["eager"], "raw_jit": ["✅ ♻"], "autotune": ["✅"]}
    legend = section(chart, "Legend")
    assert (
        "- ♻ **reused**: not run this time, the record was copied from the run of 2026-11-20T08:00:00+00:00, "
        "commit abc123 (1 cell): its key (torch, triton, CUDA, GPU, harness and case sources, matrix entry) "
        "is unchanged"
    ) in legend
    assert "♻" not in render(results(make_record("sin", "raw_jit", "eager", status="pass")))


def test_a_case_modules_key_follows_the_packages_above_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Importing ``mylib.kernels.cases`` runs ``mylib/__init__.py`` and ``mylib/kernels/__init__.py`` first, whether
    the module names them or not: a change there (a constant set, a kernel registered) is a new key (the key read
    the case module and what it names alone, so --reuse kept passes of a kernel since made wrong there)."""
    inner = tmp_path / "parent_lib" / "kernels"
    inner.mkdir(parents=True)
    (tmp_path / "parent_lib" / "__init__.py").write_text("SCALE = 1.0\n")
    (inner / "__init__.py").write_text("")
    (inner / "cases.py").write_text("import math\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    first = reuse.module_digest("parent_lib.kernels.cases")
    (tmp_path / "parent_lib" / "__init__.py").write_text("SCALE = 1.5\n")
    second = reuse.module_digest("parent_lib.kernels.cases")
    assert second != first
    (inner / "__init__.py").write_text("from parent_lib import SCALE\n")
    assert reuse.module_digest("parent_lib.kernels.cases") != second


def test_a_checkout_built_with_pip_install_dot_is_the_users_code(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """``pip install .`` leaves ``mylib.egg-info`` (and build/) in the checkout it built; run from there, the checkout
    is on the path before site-packages and its files are what the cells import. Taken for a library installed there
    (``pip --target``), its modules were keyed by the distribution's version alone, and an edited kernel kept its
    old verdicts under --reuse."""
    checkout = tmp_path / "checkout"
    (checkout / "eggy_lib").mkdir(parents=True)
    (checkout / "eggy_lib" / "__init__.py").write_text("SCALE = 1.0\n")
    info = checkout / "eggy_lib.egg-info"
    info.mkdir()
    (info / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: eggy-lib\nVersion: 0.1\n")
    (info / "top_level.txt").write_text("eggy_lib\n")
    (info / "SOURCES.txt").write_text("eggy_lib/__init__.py\n")
    (checkout / "eggy_cases.py").write_text("import eggy_lib\n")
    monkeypatch.syspath_prepend(str(checkout))
    assert not reuse.installed_file(checkout / "eggy_lib" / "__init__.py")
    first = reuse.module_digest("eggy_cases")
    (checkout / "eggy_lib" / "__init__.py").write_text("SCALE = 1.5\n")
    assert reuse.module_digest("eggy_cases") != first
