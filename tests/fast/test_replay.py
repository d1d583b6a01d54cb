"""``python -m bench replay``: a run's cells through pytest-xdist's own load scheduling on a simulated clock, and the
harness's ``--maxschedchunk``, which keeps the next cell only on a worker (a cell sent there waits behind the one it
runs, however long)."""

import json
from pathlib import Path

import pytest

from bench import replay
from harness.plugin.collect import SCHEDULE_CHUNK


def cells(seconds: list[float]) -> list[replay.Cell]:
    return [replay.Cell(f"c{n}", "eager", s) for n, s in enumerate(seconds)]


LONG_BEHIND_LONG = [1, 100, 1, 1, 1, 50, *[1] * 10]  # two workers: the 50 s cell runs beside the 100 s one, or after


@pytest.mark.parametrize(("chunk", "held"), [(SCHEDULE_CHUNK, 2), (2, 3)])
def test_a_worker_holds_the_cell_it_runs_and_the_next_only_at_the_harnesss_chunk(chunk: int, held: int,
                                                                                 monkeypatch: pytest.MonkeyPatch):
    most: list[int] = [0]
    send = replay.Node.send_runtest_some

    def counted(node: replay.Node, indices: list[int]) -> None:
        send(node, indices)
        most[0] = max(most[0], len(node.queue))

    monkeypatch.setattr(replay.Node, "send_runtest_some", counted)
    replay.replay(cells(LONG_BEHIND_LONG * 3), 3, chunk)
    assert most[0] == held


def test_the_harnesss_chunk_ends_a_long_cell_queued_behind_a_long_one_sooner():
    ends = {chunk: replay.replay(cells(LONG_BEHIND_LONG), 2, chunk)[0] for chunk in (SCHEDULE_CHUNK, 2)}
    assert ends == {SCHEDULE_CHUNK: 1 + 100 + 1, 2: 1 + 100 + 50 + 1}


def results_file(tmp_path: Path, paths: list[tuple[str, float, float]], workers: object = 2) -> Path:
    records = [{"id": f"a{n}-s-{path}", "case": f"a{n}", "style": "s", "path": path, "status": "pass",
                "seconds": seconds, "measurements": {"started": 1000 + start, "ended": 1000 + start + seconds}}
               for n, (path, start, seconds) in enumerate(paths)]  # fmt: skip
    file = tmp_path / "results.json"
    file.write_text(json.dumps({"schema": 3, "environment": {"workers": workers}, "cells": records}))
    return file


def test_replay_prints_the_run_and_each_chunk(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    file = results_file(tmp_path, [("eager", 0, 2.0), ("compile", 0, 3.0), ("eager", 2, 1.0)])
    matrix = tmp_path / "m.toml"
    matrix.write_text('[paths]\neager = { timeout = 120 }\ncompile = { timeout = 240 }\n')
    assert replay.main([str(file), "--matrix", str(matrix), "--chunks", "1"]) == 0
    out = capsys.readouterr().out
    assert "3 cells, 6 cell-seconds, 2 workers" in out and "| the run  |" in out
    # fewer cells than two a worker: xdist deals them round the workers, compile's first (the longest path)
    assert "| replayed |                 1 |                    4 |                    4 |" in out


def test_a_path_the_matrix_has_no_timeout_for_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    file = results_file(tmp_path, [("eager", 0, 2.0), ("vmap", 0, 1.0)])
    matrix = tmp_path / "m.toml"
    matrix.write_text('[paths]\neager = { timeout = 120 }\n')
    assert replay.main([str(file), "--matrix", str(matrix)]) == 2
    assert capsys.readouterr().err == f"error: {matrix}: paths: no timeout for vmap\n"


@pytest.mark.parametrize("option", [("--chunks", "1,x"), ("--workers", "0")])
def test_a_chunk_or_worker_count_that_is_not_a_whole_number_is_exit_2(tmp_path: Path, option: tuple[str, str],
                                                                       capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit) as stopped:
        replay.main([str(results_file(tmp_path, [("eager", 0, 1.0)])), *option])
    assert stopped.value.code == 2 and "expected a whole number of at least 1" in capsys.readouterr().err


def test_a_run_with_no_timed_cell_or_a_damaged_worker_count_is_exit_2(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]):
    reused = results_file(tmp_path, [("eager", 0, 1.0)])
    data = json.loads(reused.read_text())
    data["cells"][0]["measurements"] = {}
    reused.write_text(json.dumps(data))
    assert replay.main([str(reused)]) == 2
    assert capsys.readouterr().err.endswith("cells[].measurements.started: no record of this run has its times\n")
    damaged = results_file(tmp_path, [("eager", 0, 1.0)], workers=0)
    assert replay.main([str(damaged)]) == 2
    assert "environment.workers: expected a whole number of at least 1, got 0" in capsys.readouterr().err
