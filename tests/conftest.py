"""Fixtures for the harness's own tests."""

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import settings

# a drawn example's wall time is the machine's load, not the code's: no deadline (hypothesis's default is 200 ms; a
# property of the gate failed once with two test sessions sharing a 2-core machine, and passed alone on the same
# examples, which hypothesis replays)
settings.register_profile("tests", deadline=None)
settings.load_profile("tests")

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
# a test's tier is the folder it is in (tests/README.md), and these are the markers the tiers are selected with
TIER_MARKERS = {"fast": (), "process": ("process",), "slow": ("slow", "process")}
TOLERANCES = """
[tolerances]
float32 = { atol = 1e-5, rtol = 1e-5 }
float16 = { atol = 1e-3, rtol = 4e-3 }
bfloat16 = { atol = 1e-2, rtol = 1.6e-2 }
"""


@pytest.hookimpl(tryfirst=True)  # before -m deselects by them
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with its folder's tier, and order the tiers slowest first (pytest-xdist deals the first tests
    to its workers in turn: minutes-long tests last would leave one worker running alone); a test in tests/ outside
    the tier folders is a usage error. (Items elsewhere, such as the cells of a run a test starts in this process,
    are not the harness's own tests.)"""
    for item in items:
        folder = tier(item)
        if not folder:
            continue
        if folder not in TIER_MARKERS:
            raise pytest.UsageError(f"{item.path}: a test goes in tests/fast, tests/process or tests/slow")
        for marker in TIER_MARKERS[folder]:
            item.add_marker(marker)
    items.sort(key=lambda item: -len(TIER_MARKERS.get(tier(item), ())))


def tier(item: pytest.Item) -> str:
    """The tier folder of one of the harness's own tests ("" for any other item)."""
    return item.path.relative_to(TESTS).parts[0] if item.path.is_relative_to(TESTS) else ""


def run_harness(*args: str, timeout: float = 900, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python -m harness ARGS`` from the repository root, as a user runs it (``env``: added variables)."""
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def run_interpreted(code: str) -> subprocess.CompletedProcess:
    """``python -c CODE`` from the repository root under Triton's CPU interpreter (``TRITON_INTERPRET=1``)."""
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env={**os.environ, "TRITON_INTERPRET": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )


def harness_main(*args: str, main: Callable[[list[str]], int] | None = None) -> subprocess.CompletedProcess:
    """``python -m harness ARGS`` in this process (``harness.__main__.main``, or ``main``) from the repository root:
    its exit status and what it printed, as ``run_harness`` gives them, without starting Python and torch again."""
    if main is None:
        from harness.__main__ import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(REPO), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exit:  # argparse's usage errors
            code = exit.code if isinstance(exit.code, int) else 1
    return subprocess.CompletedProcess(["harness", *args], code, out.getvalue(), err.getvalue())


def matrix_text(cases: list[str], styles: list[str], paths: dict[str, tuple[str, float]]) -> str:
    lines = [f"cases = {cases!r}".replace("'", '"'), f"styles = {styles!r}".replace("'", '"'), "[paths]"]
    lines += [f'{name} = {{ device = "{device}", timeout = {timeout} }}' for name, (device, timeout) in paths.items()]
    return "\n".join(lines) + "\n" + TOLERANCES


@pytest.fixture
def checkout_goals(monkeypatch: pytest.MonkeyPatch) -> None:
    """A results file without goals or goal sets (an older one, or a test's ``typed`` data) gets them from
    tests/fixtures/checkout_goals.toml, not from the repository's matrix.toml: a chart test does not change
    when matrix.toml does."""
    from harness.records import upgrade

    monkeypatch.setattr(upgrade, "CHECKOUT_MATRIX", Path(__file__).parent / "fixtures" / "checkout_goals.toml")


# a matrix of one passing cell: tests/fixtures/good's case, the control, on CPU
GOOD_CELL = 'cases = ["tests.fixtures.good"]\nstyles = ["control"]\n'
GOOD_CELL += '[paths]\ncpu_fallback = { device = "cpu", timeout = 60 }\n'


@pytest.fixture
def matrix(tmp_path: Path) -> Path:
    """A matrix file of one passing cell (``GOOD_CELL``)."""
    file = tmp_path / "m.toml"
    file.write_text(GOOD_CELL + TOLERANCES)
    return file


@pytest.fixture
def write_matrix(tmp_path: Path) -> Callable[..., Path]:
    """Write a matrix file in tmp_path and return its path."""

    def write(cases: list[str], styles: list[str], paths: dict[str, tuple[str, float]], name: str = "m.toml") -> Path:
        file = tmp_path / name
        file.write_text(matrix_text(cases, styles, paths))
        return file

    return write


def cell_spec(case: str, style: str, path: str = "cpu_fallback", timeout: float = 120, module: str | None = None):
    """A CellSpec as the matrix would make it (CPU device, float32 tolerance)."""
    from harness.kernel.compare import Tolerance
    from harness.spec import CellSpec, PathSpec

    module = module or (case if "." in case else f"cases.{case}")
    return CellSpec(case.rpartition(".")[2], module, style, PathSpec(path, "cpu", timeout), Tolerance(1e-5, 1e-5))


def make_record(case: str, style: str, path: str, **fields) -> dict:
    """A record's JSON built the one way records are built, from a spec and an outcome with ``fields``."""
    from harness.records.record import Record
    from harness.spec import CellSpec, Outcome, PathSpec

    spec = CellSpec(case, fields.pop("module", None), style, PathSpec(path, "cuda", 60), None)
    return Record.of(spec, Outcome(**fields)).to_dict()


def typed(data):
    """A results file's JSON (a dict with "cells", read as schema 1: what it lacks is filled in as for an older
    file) or one record's, as the reader types them (None stays)."""
    from harness.matrix.catalogue import Registries
    from harness.records.record import Record
    from harness.records.results import load

    if data is None:
        return None
    if "cells" in data:
        return load({"environment": {}, **data, "schema": 1}, "test", Registries())
    return Record.from_dict(data)
