"""python -m bench timeline: a run's cells on one lane per worker, a PNG and a text summary whose numbers add up."""

import json
import subprocess
import sys
from pathlib import Path

from bench import timeline as timelines
from bench.__main__ import main as bench_main
from bench.timeline import summary
from tests.conftest import REPO, harness_main, typed


def timeline(data: dict, file: str):
    return timelines.timeline(typed(data), file)


PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bench", *args], cwd=REPO, capture_output=True, text=True)


def table(text: str, header: str) -> dict[str, list[float]]:
    """A tabulate 'simple' table of the summary, by its first column."""
    lines = text.split(header, 1)[1].splitlines()[2:]  # past the header's rule
    rows = {}
    for line in lines:
        if not line.strip():
            break
        name, *numbers = line.split()
        rows[name] = [float(n) for n in numbers]
    return rows


def test_summary_numbers_on_a_made_up_run(tmp_path: Path):
    def cell(name: str, path: str, worker: str, start: float, end: float) -> dict:
        times = {"started": 1000 + start, "ended": 1000 + end, "worker": worker}
        record = {"id": f"{name}-s-{path}", "case": name, "style": "s", "path": path, "status": "pass",
                  "measurements": times}  # fmt: skip
        return {**record, "seconds": end - start - 1}  # the process's start is not the cell's

    cells = [
        cell("a", "eager", "gw0", 0, 4),
        cell("b", "compile", "gw0", 4, 6),
        cell("c", "compile", "gw1", 1, 10),
        {**cell("d", "eager", "gw1", -50, -40), "reused_from": {"timestamp": "t", "commit": "c", "file": "f"}},
    ]
    line = timeline({"environment": {"workers": 2, "wall_seconds": 12.0, "axes": {"paths": ["eager", "compile"]}},
                     "cells": cells}, "r.json")  # fmt: skip
    assert (line.span, line.cell_seconds, line.critical, line.idle_tail) == (10, 15, "gw1", 4)
    assert line.busy == 15 / (2 * 10) and len(line.bars) == 3  # the reused cell is not on this run's timeline
    text = summary(line)
    # no record says its CPU seconds (an older file): those columns stay empty
    assert table(text, "path ") == {"eager": [1, 4.0, 4.0, 3.0], "compile": [2, 11.0, 9.0, 9.0]}
    assert table(text, "worker ") == {"gw0": [6.0, 2, 6.0], "gw1": [9.0, 1, 10.0]}


def test_a_file_without_times_is_one_line_and_exit_2(tmp_path: Path):
    old = tmp_path / "old.json"
    record = {"id": "a-s-eager", "case": "a", "style": "s", "path": "eager", "status": "pass", "measurements": {}}
    old.write_text(json.dumps({"schema": 1, "environment": {}, "cells": [record]}))
    done = harness_main("timeline", str(old), "--out", str(tmp_path / "t.png"), main=bench_main)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert done.stderr.startswith(f"error: {old}: cells[].measurements.started: no record of this run has")
    assert not (tmp_path / "t.png").exists()
