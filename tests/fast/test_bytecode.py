"""Issue 60, the run's start: the cell processes' bytecode cache compiled in the background while the controller
imports the case modules, where there are enough cores; only what the imports would write there themselves."""

import importlib.util
import sys
from pathlib import Path

import pytest

from harness.execution import bytecode
from harness.plugin import processes
from tests.fakes import FakeCells, fake_config


def test_files_are_compiled_into_the_runs_cache_only(tmp_path, monkeypatch):
    source = tmp_path / "src" / "kernels.py"
    source.parent.mkdir()
    source.write_text("SCALE = 2\n")
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "pycache"))
    bytecode.compile_all([str(source)], cores=2)
    compiled = Path(importlib.util.cache_from_source(str(source)))
    assert compiled.is_relative_to(tmp_path / "pycache") and compiled.stat().st_size > 0
    assert not (source.parent / "__pycache__").exists()


def test_the_sources_are_the_packages_and_the_standard_library_without_tests():
    sources = list(bytecode.sources(["torch"]))
    assert importlib.util.find_spec("torch").origin in sources and importlib.util.find_spec("json").origin in sources
    assert not [path for path in sources if {"test", "tests", "__pycache__"} & set(Path(path).parts)]
    assert all(path.endswith(".py") for path in sources) and not any("/sympy/" in path for path in sources)


def test_nothing_starts_on_few_cores(tmp_path):
    assert bytecode.start(str(tmp_path / "pycache"), bytecode.MIN_CORES - 1) is None
    bytecode.finish(None, 1.0)
    bytecode.stop(None)
    assert not (tmp_path / "pycache").exists()


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """What ``bytecode.start`` was asked to compile (nothing starts), on a host of 64 cores."""
    asked: list[tuple[str, int]] = []
    monkeypatch.setattr(processes, "host_cores", lambda: 64)
    monkeypatch.setattr(bytecode, "start", lambda prefix, cores: asked.append((prefix, cores)) or "compiling")
    monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)
    return asked


@pytest.mark.parametrize(
    ("environment", "prefix"),
    [("", "cache/pycache"), ('[environment]\nPYTHONPYCACHEPREFIX = "/own/prefix"\n', "/own/prefix")],
)
def test_the_controller_compiles_into_the_cell_processes_cache(started, tmp_path, environment, prefix):
    config = fake_config(tmp_path, ())
    cleanups = []
    config.add_cleanup = cleanups.append
    (tmp_path / "m.toml").write_text(environment)
    processes.compile_bytecode(config)
    assert started == [(str(tmp_path / prefix) if prefix.startswith("cache") else prefix, 64)]
    assert config.stash[processes.bytecode_key] == "compiling" and len(cleanups) == 1


@pytest.mark.parametrize("why", ["collect-only", "unreadable matrix", "fake cells"])
def test_nothing_is_compiled_for_a_run_that_starts_no_cell_process(started, tmp_path, monkeypatch, why):
    config = fake_config(tmp_path, ())
    config.add_cleanup = lambda stop: None
    (tmp_path / "m.toml").write_text("[environment\n" if why == "unreadable matrix" else "")
    config.option.collectonly = why == "collect-only"
    if why == "fake cells":
        monkeypatch.setattr(processes.CellProcesses, "make_process", FakeCells())
    processes.compile_bytecode(config)
    assert started == []
