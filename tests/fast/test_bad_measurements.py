"""Issue 61: values in a results file that are no measurement (a 0 or negative time, a 400-digit integer, NaN, a
timed state without its median, outcomes that contradict the status, ``schema: true``) are refused where the file
is read: one line naming the file and the key, exit 2, in every command that reads results. They crashed the
readers (ZeroDivisionError, math domain error, OverflowError) or were used as they were (a 0 µs baseline let
``gate --speed`` miss a 10% slowdown)."""

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.__main__ import main
from harness.cell.timing import sample
from harness.records.schema import to_json
from harness.spec import Measurements, Timing, TimingMethod, TimingState
from tests.conftest import TOLERANCES, make_record
from tests.fakes import FakeTimer
from tests.fast.test_bad_inputs import HEAD, one_line

CELL = "sin-control-eager"
HUGE = int("9" * 400)


def timing(**changes: Any) -> Timing:
    bandwidth = Timing(TimingState.TIMED, median_us=100.0, iqr_us=1.0, dispersion=0.01, samples=30, size=1 << 20)
    fields = {"median_us": 10.0, "iqr_us": 0.1, "dispersion": 0.01, "samples": 30, "host_us": 5.0, **changes}
    return Timing(TimingState.TIMED, bandwidth=bandwidth, **fields)


def results(folder: Path, name: str, shard: str, damage: Callable[[dict], None] = lambda data: None) -> Path:
    """A timed run of one passing cell (share ``shard`` of two: 1/2 runs ``CELL``), ``damage`` done to its JSON."""
    style = "control" if shard == "1/2" else "raw_jit"
    record = make_record(
        "sin", style, "eager", status="pass", timing=timing(), measurements=Measurements(compile_seconds=1.5)
    )
    env = {
        "torch": "2.13", "triton": "3.7.1", "device": "NVIDIA H100", "complete": True, "commit": "abc",
        "shard": shard, "goals": {"g": ["eager"]}, "expected_cells": [record["id"]], "timing_seconds": 3.0,
    }  # fmt: skip
    data = {"schema": 3, "environment": env, "cells": [record]}
    damage(data)
    file = folder / name
    file.write_text(json.dumps(data))
    return file


def setting(path: str, value: Any) -> Callable[[dict], None]:
    """A damage: ``value`` at the dotted ``path`` (list items by their index; ``...``: the key removed)."""

    def damage(data: dict) -> None:
        *parents, last = path.split(".")
        for part in parents:
            data = data[int(part)] if part.isdigit() else data[part]
        if value is ...:
            del data[last]
        else:
            data[last] = value

    return damage


DAMAGES = {
    "zero_median": ("cells.0.timing.median_us", 0.0, "expected a time above 0 µs, got 0"),
    "zero_bandwidth_median": ("cells.0.timing.bandwidth.median_us", 0, "expected a time above 0 µs, got 0"),
    "negative_median": ("cells.0.timing.median_us", -3.0, "expected a number >= 0 (no time, size or count is"),
    "negative_host": ("cells.0.timing.host_us", -3.0, "expected a number >= 0"),
    "zero_host": ("cells.0.timing.host_us", 0.0, "expected a time above 0 µs, got 0"),
    "huge_median": ("cells.0.timing.median_us", HUGE, "expected a number of at most 1e+18, got a 400-digit integer"),
    "huge_iqr": ("cells.0.timing.bandwidth.iqr_us", HUGE, "got a 400-digit integer"),
    "huge_bytes": ("cells.0.timing.bytes_moved", HUGE, "got a 400-digit integer"),
    "huge_compile": ("cells.0.measurements.compile_seconds", -HUGE, "got a 400-digit integer"),
    "nan_median": ("cells.0.timing.median_us", float("nan"), "expected a finite number, got nan"),
    "infinite_host": ("cells.0.timing.host_us", float("inf"), "expected a finite number, got inf"),
    "negative_compile": ("cells.0.measurements.compile_seconds", -500.0, "expected a number >= 0"),
    "negative_dispersion": ("cells.0.timing.dispersion", -5.0, "got -5.0"),
    "timed_without_median": ("cells.0.timing.median_us", ..., "missing: a timing in state timed has its median"),
    "negative_phase": ("environment.timing_seconds", -3.0, "expected a number >= 0"),
    "schema_true": ("schema", True, "expected 1, 2 or 3, got True"),
    "outcomes": ("cells.0.outcomes", ["wrong", "pass"], "[wrong, pass] contradicts its status pass"),
}


def commands(bad: Path, good: Path, matrix: Path, out: Path) -> list[list[str]]:
    """Every command that reads a results file, reading ``bad``."""
    gate = ["gate", "--rerun", "0", "--speed", "--out", str(out / "gate.md")]
    run = ["run", "--matrix", str(matrix), "--report-dir", str(out / "run")]
    return [
        ["report", "--results", str(bad), "--out", str(out / "matrix.md")],
        ["which", "--results", str(bad), "--goals", "g", "--fastest"],
        [*gate, "--baseline", str(bad), "--current", str(good)],
        [*gate, "--baseline", str(good), "--current", str(bad)],
        ["merge", str(good), str(bad), "--out", str(out / "merged.json")],
        ["history", str(good), str(bad), "--out", str(out / "history.md")],
        ["repro", CELL, "--results", str(bad), "--out", str(out / "repros")],
        [*run, "--reuse", str(bad)],
        [*run, "--baseline", str(bad)],
    ]


@pytest.mark.parametrize("name", list(DAMAGES))
def test_a_value_that_is_no_measurement_is_refused_by_every_reader(name, tmp_path, capsys):
    path, value, words = DAMAGES[name]
    bad = results(tmp_path, "bad.json", "1/2", setting(path, value))
    good = results(tmp_path, "good.json", "2/2")
    matrix, out = tmp_path / "m.toml", tmp_path / "out"
    matrix.write_text(HEAD + TOLERANCES)
    key = path.replace(".0.", "[0].").removesuffix(".0")
    for command in commands(bad, good, matrix, out):
        one_line(capsys, main(command), f"{bad}: {key}: ", words)
    assert not out.exists()


def test_the_undamaged_file_is_read_by_every_reader(tmp_path, capsys):
    """The control: the same commands on the file without damage do not stop at reading it."""
    good = results(tmp_path, "good.json", "2/2")
    other = results(tmp_path, "other.json", "1/2")
    same = results(tmp_path, "same.json", "2/2")  # a share is gated against the same share
    matrix, out = tmp_path / "m.toml", tmp_path / "out"
    readers = commands(other, good, matrix, out)[:6]
    readers[2:4] = commands(same, good, matrix, out)[2:4]
    for command in readers:
        assert main(command) in (0, 1), capsys.readouterr().err


def test_a_call_the_profiler_saw_run_no_gpu_work_is_read_with_its_0_us(tmp_path, capsys):
    """0 µs is a measurement only where the profiler saw the call run nothing (kernels 0): the chart leaves it out
    of the speed comparison, as it did."""
    empty = timing(median_us=0.0, iqr_us=0.0, dispersion=0.0, method=TimingMethod.KERNELS, kernels=0)
    file = results(tmp_path, "r.json", "1/2", setting("cells.0.timing", to_json(empty)))
    assert main(["report", "--results", str(file), "--out", str(tmp_path / "m.md")]) == 0, capsys.readouterr().err


def test_events_with_nothing_between_them_are_not_timed_rather_than_0_us():
    """The run never writes the 0 µs its readers refuse: CUDA events around a call that launched nothing."""
    timed = sample(lambda: None, None, FakeTimer([0.0]))
    assert timed == Timing.not_timed("no GPU time between its CUDA events: the call ran no GPU work")
    assert sample(lambda: None, None, FakeTimer([1e-6], kernels=[[]]), kernels=True).method is TimingMethod.KERNELS
