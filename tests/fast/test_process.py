"""The cell process: a crash or a hang costs only its own cell, and the next cell gets a fresh process."""

import inspect
import os
from pathlib import Path

import pytest

from tests.conftest import cell_spec

GOOD = cell_spec("tests.fixtures.good", "triton_op")


def test_cell_processes_share_the_cores_among_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """torch's intra-op threads and Inductor's compile threads per cell process: the cores divided among the workers
    (at least 1), unless the caller's environment or matrix.toml's [environment] sets them."""

    from harness.matrix.config import load_matrix
    from harness.plugin.processes import cell_environment
    from tests.conftest import REPO

    matrix = load_matrix(REPO / "matrix.toml")
    for name in THREADS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 32)
    for workers, threads, compiles in ((14, "2", "2"), (30, "1", "2"), (1, "32", "32")):
        environment = cell_environment(matrix.environment, tmp_path, workers)
        assert [environment[name] for name in THREADS] == [threads, compiles]
    for name in THREADS:
        monkeypatch.setenv(name, "4")
        assert name not in cell_environment(matrix.environment, tmp_path, 30)  # the caller's own setting stays


THREADS = ("OMP_NUM_THREADS", "TORCHINDUCTOR_COMPILE_THREADS")  # torch's intra-op threads, Inductor's compile pool


@pytest.mark.parametrize(
    ("cores", "gpus", "workers", "threads", "compiles"),
    [
        (16, 1, 14, 1, 2),  # one H200's host: 14 workers, as before; Inductor's compile pool kept (2, not 1)
        (16, 0, 14, 1, 2),  # no GPU: a worker per core less two, as before
        (32, 2, 28, 1, 2),
        (64, 4, 56, 1, 2),  # 62 before, each with a pool of 32 compile processes: every cell cost 2.4 times as much
        (128, 8, 112, 1, 2),
        (64, 1, 14, 4, 4),  # a GPU shared by no more workers than one H200's host has; their compiles use the cores
        (2, 1, 1, 2, 2),
        (1, 0, 1, 1, 2),
    ],
)
def test_auto_workers_and_their_threads_fit_the_cores_and_the_gpus(
    cores, gpus, workers, threads, compiles, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    import harness.plugin
    from harness.plugin.processes import cell_environment, default_workers

    assert default_workers(cores, gpus) == workers
    monkeypatch.setattr(os, "cpu_count", lambda: cores)
    monkeypatch.setattr(harness.plugin, "visible_gpus", lambda: tuple(map(str, range(gpus))))
    assert harness.plugin.pytest_xdist_auto_num_workers(None) == workers  # -n auto, which run adds
    for name in THREADS:
        monkeypatch.delenv(name, raising=False)
    environment = cell_environment({}, tmp_path, workers)
    assert [environment[name] for name in THREADS] == [str(threads), str(compiles)]


def test_a_cell_process_gives_its_cached_gpu_memory_back_after_each_cell(monkeypatch: pytest.MonkeyPatch):
    """The cell processes' free cached blocks went unused while 4 cells and 110 scripts beside them ran out of
    memory on an 80 GB H100: each cell's end gives them back (a process that never used the GPU has none)."""
    from harness.execution import child

    emptied: list[bool] = []
    monkeypatch.setattr(child.torch.cuda, "empty_cache", lambda: emptied.append(True))
    monkeypatch.setattr(child.torch.cuda, "is_initialized", lambda: False)
    assert child.release_cached_memory() is None
    assert emptied == []
    monkeypatch.setattr(child.torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(child.torch.cuda, "memory_reserved", lambda: 3 * 2**20)
    assert child.release_cached_memory() == 3.0  # what stays reserved, MiB: the process's memory series
    assert emptied == [True]
    assert "release_cached_memory()" in inspect.getsource(child.serve)  # after each cell it runs
