"""Issue 60, the run's start: the zygote started before the controller imports the case modules, and its bytecode
cache compiled first, one process per core where there are enough cores; only what the imports would write there
themselves."""

import importlib.util
import sys
import sysconfig
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.execution import bytecode, zygote
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
    torch_folder = Path(importlib.util.find_spec("torch").origin).parent
    assert str(torch_folder / "__init__.py") in sources and importlib.util.find_spec("json").origin in sources
    roots = (torch_folder, Path(sysconfig.get_paths()["stdlib"]))  # the parts below them: a checkout's may hold tests
    below = [Path(path).relative_to(next(r for r in roots if Path(path).is_relative_to(r))) for path in sources]
    assert not [path for path in below if {"test", "tests", "__pycache__"} & set(path.parts)]
    assert all(path.endswith(".py") for path in sources) and not any("/sympy/" in path for path in sources)


@pytest.mark.parametrize(
    ("prefix", "cores", "compiled"),
    [("pycache", bytecode.MIN_CORES, True), (None, 64, False), ("pycache", bytecode.MIN_CORES - 1, False)],
)
def test_the_cache_is_compiled_where_the_run_has_one_and_cores(tmp_path, monkeypatch, prefix, cores, compiled):
    asked = []
    monkeypatch.setattr(bytecode, "compile_all", lambda files, cores: asked.append(cores))
    monkeypatch.setattr(sys, "pycache_prefix", prefix and str(tmp_path / prefix))
    assert bytecode.compile_cache(cores) is compiled
    assert asked == ([cores] if compiled else [])


@pytest.fixture
def spawned(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, str]]:
    """The environments ``zygote.spawn`` was asked to start a zygote with (none starts)."""
    asked: list[dict[str, str]] = []

    def spawn(environment, log_file=None):
        asked.append(environment)
        return zygote.Spawned(SimpleNamespace(pid=1), "socket", Path("log"), 0)

    monkeypatch.setattr(zygote, "spawn", spawn)
    monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)
    return asked


def early_config(tmp_path: Path, matrix: str):
    config = fake_config(tmp_path, ())
    config.cleanups = []
    config.add_cleanup = config.cleanups.append
    (tmp_path / "m.toml").write_text(matrix)
    return config


def test_the_controller_starts_the_zygote_with_the_cell_processes_environment(spawned, tmp_path):
    config = early_config(tmp_path, '[environment]\nPYTHONDONTWRITEBYTECODE = ""\n')
    processes.start_early(config)
    assert len(spawned) == 1 and spawned[0]["PYTHONDONTWRITEBYTECODE"] == ""
    assert spawned[0]["PYTHONPYCACHEPREFIX"] == str(tmp_path / "cache" / "pycache")
    early = config.stash[processes.early_key]
    environment = processes.cell_environment({"PYTHONDONTWRITEBYTECODE": ""}, tmp_path / "cache", 1)
    assert config.cleanups == [early.stop] and early.misfit(environment) is None


@pytest.mark.parametrize("why", ["collect-only", "unreadable matrix", "fake cells"])
def test_no_zygote_starts_early_for_a_run_that_starts_no_cell_process(spawned, tmp_path, monkeypatch, why):
    config = early_config(tmp_path, "[environment\n" if why == "unreadable matrix" else "")
    config.option.collectonly = why == "collect-only"
    if why == "fake cells":
        monkeypatch.setattr(processes.CellProcesses, "make_process", FakeCells())
    processes.start_early(config)
    assert spawned == [] and processes.early_key not in config.stash


def test_an_early_zygote_still_fits_once_scikit_learn_set_its_openmp_variables(spawned, tmp_path, monkeypatch):
    """Liger's modules import transformers, which imports scikit-learn, which sets KMP_DUPLICATE_LIB_OK and
    KMP_INIT_AT_FORK: nothing the zygote imports reads them, and a cell process sets them when it imports the case."""
    config = early_config(tmp_path, "")
    processes.start_early(config)
    early, environment = config.stash[processes.early_key], spawned[0]
    monkeypatch.setenv("KMP_DUPLICATE_LIB_OK", "True")
    monkeypatch.setenv("KMP_INIT_AT_FORK", "FALSE")
    assert early.misfit(environment) is None
    monkeypatch.setenv("TORCHINDUCTOR_SET_BY_A_CASE", "1")  # Inductor's config, which the preloads read
    assert early.misfit(environment) == "environment changed: TORCHINDUCTOR_SET_BY_A_CASE"


@pytest.mark.parametrize("change", ["environment", "sys.path"])
def test_an_early_zygote_no_longer_fits_once_a_case_module_changed_it(spawned, tmp_path, monkeypatch, change):
    config = early_config(tmp_path, "")
    processes.start_early(config)
    early, environment = config.stash[processes.early_key], spawned[0]
    assert early.misfit(environment) is None
    if change == "environment":
        monkeypatch.setenv("SET_BY_A_CASE_MODULE", "1")
    else:
        monkeypatch.setattr(sys, "path", [*sys.path, str(tmp_path / "added")])
    said = "environment changed: SET_BY_A_CASE_MODULE" if change == "environment" else "sys.path changed"
    assert early.misfit(environment) == said


def test_the_cells_caches_stay_the_runs_where_a_case_import_names_another(spawned, tmp_path, monkeypatch):
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    config = early_config(tmp_path, "")
    processes.start_early(config)
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/tmp/torchinductor_user")  # as Inductor's cache_dir() does
    environment = processes.cells_environment(config)
    assert environment["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "cache" / "inductor")
    assert config.stash[processes.early_key].misfit(environment) is None
    assert "TORCHINDUCTOR_CACHE_DIR" not in config.stash[processes.given_key]  # the records' settings: as given
    worker = fake_config(tmp_path, (), workerid="gw0")
    worker.workerinput[processes.ENVIRONMENT_INPUT] = environment
    assert processes.cells_environment(worker) == environment  # what the controller made, not the worker's own


def test_when_the_zygote_served_is_the_first_ready_line_of_this_run():
    """The zygote's log keeps earlier runs' lines (it is appended to): the run's start marks take its own zygote's."""
    line = "zygote {} ready: import torch 2.4 s, CPU-ISA probes 7.0 s; " + zygote.SERVING + " {}\n"
    log = line.format(1, "1000.250") + "--- cell x\n" + line.format(2, "2000.125") + line.format(3, "2050.5")
    assert zygote.served_at(log, since=1500.0) == 2000.125
    assert zygote.served_at(log, since=3000.0) is None and zygote.served_at("", since=0.0) is None
