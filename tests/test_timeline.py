"""python -m bench timeline: a run's cells on one lane per worker, a PNG and a text summary whose numbers add up."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench import timeline as timelines
from bench.__main__ import main as bench_main
from bench.timeline import summary
from tests.conftest import REPO, harness_main, run_harness, typed


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


@pytest.mark.process
def test_timeline_of_a_two_worker_run(write_matrix, tmp_path: Path):
    pytest.importorskip("matplotlib")
    cases = ["tests.fixtures.good", "tests.fixtures.slow"]
    matrix = write_matrix(cases, ["triton_op", "control"], {"cpu_fallback": ("cpu", 120), "cpu_compile": ("cpu", 300)})
    out = tmp_path / "out"
    done = run_harness("run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "2", "-q")
    assert done.returncode == 0, done.stdout[-2000:]
    png = tmp_path / "timeline.png"
    drawn = bench("timeline", str(out / "results.json"), "--out", str(png))
    assert drawn.returncode == 0, drawn.stderr
    assert png.read_bytes()[:8] == PNG_MAGIC
    text = drawn.stdout
    print(text)
    cells = json.loads((out / "results.json").read_text())["cells"]
    durations = {c["id"]: c["measurements"]["ended"] - c["measurements"]["started"] for c in cells}
    by_path = table(text, "path ")
    assert set(by_path) == {"cpu_fallback", "cpu_compile"}
    assert sum(row[0] for row in by_path.values()) == len(cells) == 8
    for path, (count, total, longest, attempt, cpu, share) in by_path.items():
        mine = [cell for cell in cells if cell["path"] == path]
        bars = [durations[cell["id"]] for cell in mine]
        assert (count, total, longest) == (len(mine), round(sum(bars), 1), round(max(bars), 1))
        assert attempt == round(sum(cell["seconds"] for cell in mine), 1)  # one attempt, no process start
        used = sum(cell["measurements"]["cpu_seconds"] for cell in mine)
        assert (cpu, share) == (round(used, 1), round(100 * used / sum(cell["seconds"] for cell in mine), 1))
    assert sum(row[1] for row in by_path.values()) == pytest.approx(sum(durations.values()), abs=0.1)
    by_worker = table(text, "worker ")
    assert set(by_worker) <= {"gw0", "gw1"} and sum(row[1] for row in by_worker.values()) == 8
    assert sum(row[0] for row in by_worker.values()) == pytest.approx(sum(durations.values()), abs=0.1)
    head = text.splitlines()[1]
    total = float(re.search(r"sum of cell seconds ([\d.]+) s", head)[1])
    assert total == pytest.approx(sum(durations.values()), abs=0.05)
    assert re.search(r"busy [\d.]+%; idle tail [\d.]+ s \(critical lane gw[01]\)", head)


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
