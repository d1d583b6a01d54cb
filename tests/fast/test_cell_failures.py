"""How a cell's failures are recorded: a CUDA fault (and the cell process replaced after one), a cell process that
cannot start, the failing example hypothesis shrinks to, and each cell process's memory series."""

from pathlib import Path

import pytest
import torch

from harness.case import load_cases
from harness.cell.runner import CUDA_FAULT_MARKERS, classify, run_cell
from harness.cell.timing import in_own_words
from harness.records.record import Record
from harness.records.results import memory_by_process
from harness.records.reuse import reusable
from harness.spec import Measurements, PathSpec, Status
from tests.conftest import cell_spec

GOOD, WRONG = cell_spec("tests.fixtures.good", "triton_op"), cell_spec("tests.fixtures.wrong", "triton_op")
FAULT = cell_spec("tests.fixtures.cuda_fault", "triton_op")


@pytest.mark.parametrize("marker", CUDA_FAULT_MARKERS)
def test_each_cuda_fault_marker_marks_the_outcome(marker: str):
    assert classify(RuntimeError(f"kernel failed: {marker} (at launch)"), "run").cuda_fault
    assert not classify(RuntimeError("kernel failed: an ordinary error"), "run").cuda_fault


def test_a_cpu_kernel_raising_a_cuda_fault_is_recorded_as_one(tmp_path: Path):
    (case,) = load_cases(FAULT.module)
    outcome = run_cell(case, FAULT, tmp_path, {})
    assert (outcome.status, outcome.stage, outcome.error_type, outcome.cuda_fault) == (
        "error",
        "run",
        "RuntimeError",
        True,
    )
    record = Record.of(FAULT, outcome, "k")
    assert record.cuda_fault is True and not reusable(record, "k")  # re-measured every run


def test_an_asynchronous_cuda_fault_is_charged_to_the_cell_that_caused_it(tmp_path: Path, monkeypatch):
    """The fault surfaces at the end-of-cell sync of the cell whose kernel left it, not in the next cell."""
    from tests.fixtures import async_fault

    def synchronize() -> None:  # raises what the kernels left (the process is replaced after: none is left)
        if async_fault.PENDING:
            fault = async_fault.PENDING[0]
            async_fault.PENDING.clear()
            raise RuntimeError(fault)

    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", synchronize)
    spec = cell_spec("tests.fixtures.async_fault", "triton_op")
    faulted = run_cell(async_fault.CASE, spec, tmp_path, {})
    assert (faulted.status, faulted.stage, faulted.error, faulted.cuda_fault) == (
        "error",
        "run",
        async_fault.FAULT,
        True,
    )
    after = run_cell(load_cases(GOOD.module)[0], GOOD, tmp_path, {})
    assert (after.status, after.cuda_fault, async_fault.PENDING) == ("pass", False, []), after.error


def test_a_fault_found_at_the_cells_end_names_what_the_cell_said_before(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: (_ for _ in ()).throw(RuntimeError("CUDA error: boom")))
    wrong = run_cell(load_cases(WRONG.module)[0], WRONG, tmp_path, {})
    assert (wrong.status, wrong.cuda_fault) == ("error", True)
    assert wrong.error.startswith("CUDA error: boom (found at the cell's end, after: output: Tensor-likes are not")


def test_hypothesis_shrinks_to_the_smallest_failing_example_and_the_record_names_it(tmp_path: Path):
    """wrong_even is right on the case's first size (1001) and wrong on every even size: of the sizes drawn, the
    failing one is shrunk to the smallest, 2, seed 0; the error and the record are that example's."""
    spec = cell_spec("tests.fixtures.wrong_even", "triton_op")
    spec = spec.__class__(
        spec.case, spec.module, spec.style, PathSpec("cpu_fallback", "cpu", 60, examples=10), spec.tolerance
    )
    (case,) = load_cases(spec.module)
    outcome = run_cell(case, spec, tmp_path, {})
    assert (outcome.status, outcome.stage) == ("wrong", "compare")
    assert "Mismatched elements: 1 / 2 " in outcome.error
    assert Record.of(spec, outcome).measurements.example == {"size": 2, "seed": 0}
    right = run_cell(load_cases("tests.fixtures.good")[0], spec, tmp_path, {})
    assert right.status == "pass" and not right.measurements.flaky_example


def test_memory_by_process_is_each_process_series_in_cell_order():
    def cell(pid: int, nth: int, rss: float, peak: float, **more: float) -> Record:
        return record({"pid": pid, "nth": nth, "rss_mb": rss, "peak_rss_mb": peak, "gpu": "1", **more})

    def record(measured: dict) -> Record:
        return Record("c", "s", "p", Status.PASS, measurements=Measurements(**measured))

    cells = [
        cell(7, 3, 140.0, 150.0, gpu_peak_mb=30.0, gpu_held_mb=8.0),
        cell(7, 1, 100.0, 110.0, gpu_held_mb=2.0),
        cell(9, 1, 50.0, 60.0),
        cell(7, 2, 120.0, 125.0, gpu_peak_mb=12.0),
        record({"pid": 5}),  # no memory: not a process's series (a reused or failed-to-start cell)
        record({}),
    ]
    assert memory_by_process(cells) == {
        "7": {
            "cells": 3,
            "gpu": "1",
            "rss_first_mb": 100.0,
            "rss_last_mb": 140.0,
            "peak_rss_mb": 150.0,
            "gpu_peak_mb": 30.0,
            "gpu_held_last_mb": 8.0,
            "rss_mb_per_cell": 20.0,
        },
        "9": {
            "cells": 1,
            "gpu": "1",
            "rss_first_mb": 50.0,
            "rss_last_mb": 50.0,
            "peak_rss_mb": 60.0,
            "gpu_peak_mb": 0.0,
            "rss_mb_per_cell": 0.0,
        },
    }
    assert memory_by_process([]) == {}


def test_a_compile_error_inductors_pool_wrapped_is_recorded_as_its_own_words():
    """One failure, one headline: whether Inductor's compile pool had started decides whether a kernel's compile
    error arrives wrapped; the record keeps the wrapped error's own line either way."""
    wrapped = (
        "SubprocException: An exception occurred in a subprocess:\n\nName=add_kernel\n"
        "Traceback (most recent call last):\n  File \"compile_tasks.py\", line 68, in _worker_compile_triton\n"
        "    kernel.precompile(warm_cache_only=True)\n"
        "RuntimeError: 0 compatible backends for target (cpu) ([]). There should only be one.\n\n\n"
        "Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace"
    )
    bare = "RuntimeError: 0 compatible backends for target (cpu) ([]). There should only be one."
    outcome = classify(RuntimeError(wrapped), "compile")
    assert outcome.error.splitlines()[0] == bare and outcome.error_type == "RuntimeError"
    assert classify(RuntimeError(bare), "compile").error == bare
    assert classify(RuntimeError("SubprocException: An exception occurred in a subprocess:"), "run").error.startswith(
        "SubprocException"
    )


def test_a_timing_records_a_pool_wrapped_error_in_its_own_words_too():
    """The chart's "not timed" reasons said "InductorError: SubprocException: An exception occurred in a
    subprocess: Name=silu_kernel Traceback ..." for a warm-up call whose compile the pool wrapped."""
    wrapped = (
        "SubprocException: An exception occurred in a subprocess:\n\nName=silu_kernel\n"
        "Traceback (most recent call last):\n  File \"compile_tasks.py\", line 68, in _worker_compile_triton\n"
        "ValueError: pointer argument at 0 cannot be accessed from Triton (cpu tensor?)\n"
    )
    said = in_own_words(RuntimeError(wrapped))
    assert said == "ValueError: pointer argument at 0 cannot be accessed from Triton (cpu tensor?)"
    assert in_own_words(KeyError("x" * 300)) == "KeyError: '" + "x" * 199
