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


def made_up_run(folder: Path) -> Path:
    """A results.json of two cells on two workers, its first cell started at 1000 s since the epoch."""
    def cell(name: str, worker: str, start: float, end: float) -> dict:
        times = {"started": 1000 + start, "ended": 1000 + end, "worker": worker}
        return {"id": f"{name}-s-eager", "case": name, "style": "s", "path": "eager", "status": "pass",
                "measurements": times, "seconds": end - start}  # fmt: skip

    run = folder / "results.json"
    environment = {"workers": 2, "wall_seconds": 12.0, "axes": {"paths": ["eager"]}}
    run.write_text(json.dumps({"schema": 1, "environment": environment,
                               "cells": [cell("a", "gw0", 0, 4), cell("b", "gw1", 1, 10)]}))  # fmt: skip
    return run


def test_the_hosts_load_is_sampled_from_proc_stat_and_summed_over_the_cells_span_and_after(tmp_path: Path):
    from bench.gpu import hostload

    before = "cpu  100 0 100 700 100 0 0 0 0 0\nprocs_running 3\nprocs_blocked 0\n"
    after = "cpu  400 0 200 900 100 0 0 0 0 0\nprocs_running 9\nprocs_blocked 2\n"  # 600 jiffies, 400 busy
    assert hostload.sample(before, after, 6) == (4.0, 0.0, 9, 2)
    rows = ["time,cores,busy_cores,iowait_cores,running,blocked"]
    rows += [f"{1000 + t},16,{busy},0,{running},0" for t, busy, running in [(-1, 1, 1), (2, 14, 20), (8, 16, 30),
                                                                             (11, 3, 2)]]  # fmt: skip
    (tmp_path / "host.csv").write_text("\n".join(rows) + "\n")
    run = made_up_run(tmp_path)
    line = timeline(json.loads(run.read_text()), str(run))
    line.host = timelines.host_load(tmp_path / "host.csv", line.origin)
    line.scripts = [(9.0, 12.0)]  # a script ends 2 s after the last cell
    assert [sample.at for sample in line.host] == [-1, 2, 8, 11]
    assert summary(line).splitlines()[1] == (
        "host: cells: busy 15.0 of 16 cores, 25.0 runnable (means); after: busy 3.0 of 16 cores, 2.0 runnable (means)"
    )


def test_a_host_load_file_that_is_not_one_is_one_line_and_exit_2(tmp_path: Path):
    run = made_up_run(tmp_path)
    (tmp_path / "host.csv").write_text("time,cores,busy_cores\n1000,16,lots\n")
    done = harness_main("timeline", str(run), "--host", str(tmp_path / "host.csv"), "--out", str(tmp_path / "t.png"),
                        main=bench_main)  # fmt: skip
    assert done.returncode == 2 and done.stderr.strip() == (
        f"error: {tmp_path / 'host.csv'}: line 2: not a row of bench/gpu/hostload.py's CSV"
    )
    assert not (tmp_path / "t.png").exists()


def test_the_timeline_draws_the_hosts_load_under_the_lanes(tmp_path: Path):
    run = made_up_run(tmp_path)
    (tmp_path / "host.csv").write_text("time,cores,busy_cores,iowait_cores,running,blocked\n1002,16,14,0,20,0\n")
    done = harness_main("timeline", str(run), "--host", str(tmp_path / "host.csv"), "--out", str(tmp_path / "t.png"),
                        main=bench_main)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "t.png").read_bytes()[:8] == PNG_MAGIC and "host: cells: busy 14.0 of 16" in done.stdout
