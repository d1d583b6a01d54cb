"""The wall a run records is what the user's clock shows: from ``python -m harness run``'s start, its checks before
the session included, to the chart's pictures drawn (in-process runs, fake cell processes)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from harness.cli import run as run_command
from harness.plugin.processes import CellProcesses
from harness.report import pictures
from tests.conftest import harness_main
from tests.fakes import FakeCells

PAUSE = 3.0  # seconds each stage outside the session's cells takes here: more than writing the records takes


def test_the_wall_runs_from_the_commands_start_to_its_pictures(write_matrix, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch):  # fmt: skip
    monkeypatch.setattr(CellProcesses, "make_process", FakeCells())
    checked, drawn = run_command.check_workers, pictures.write
    monkeypatch.setattr(run_command, "check_workers", lambda args: (time.sleep(PAUSE), checked(args))[1])
    monkeypatch.setattr(pictures, "write", lambda figures, folder: (time.sleep(PAUSE), drawn(figures, folder))[1])
    matrix = write_matrix(["tests.fixtures.good"], ["control"], {"cpu_fallback": ("cpu", 120)})
    began = time.perf_counter()
    done = harness_main("run", "--matrix", str(matrix), "--report-dir", str(tmp_path), "-n", "0", "--no-confirm")
    took = time.perf_counter() - began
    assert done.returncode == 0, done.stdout[-2000:]
    wall = json.loads((tmp_path / "results.json").read_text())["environment"]["wall_seconds"]
    # both stages outside the session counted (one left out: PAUSE short), and nothing after the command's end;
    # the test's own clock also holds what a loaded machine spends before the command starts, so it is no lower bound
    assert 2 * PAUSE <= wall <= took + 0.1, (wall, took)
    assert (tmp_path / "pictures" / "status.png").exists()
