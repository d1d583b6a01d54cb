"""The timing phase over real pytest-xdist workers (issue 42): each worker times its cells only once every worker
has run its last cell, one worker at a time, and the controller puts each timing in its cell's record."""

import itertools
import json
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, matrix_text, run_harness

CASES = ["tests.fixtures.good", "tests.fixtures.wrong"]
RUN = "import runpy, sys; runpy.run_path(sys.argv[1], run_name='__main__')"  # from the folder given as cwd


def test_workers_time_one_at_a_time_after_every_cell_and_the_records_get_the_timings(tmp_path: Path):
    matrix, out, log = tmp_path / "m.toml", tmp_path / "out", tmp_path / "timed.jsonl"
    matrix.write_text(matrix_text(CASES, ["triton_op", "custom_op", "control"], {"eager": ("cuda", 60)}))
    done = run_harness(
        "run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "3", "-p", "tests.fixtures.timed_cells",
        "--no-confirm", "-q", env={"TIMED_CELLS_LOG": str(log)}, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    cells = [(e["start"], e["end"]) for e in entries if "cell" in e]
    timings = sorted((e["start"], e["end"]) for e in entries if "timing" in e)
    assert len(cells) == 6 and len(timings) == 6  # every worker ran cells and took its two turns
    hosts = [e["end"] for e in entries if e.get("turn") == "host"]
    assert max(hosts) <= min(e["start"] for e in entries if e.get("turn") == "time")  # every host sample first
    assert min(start for start, _ in timings) >= max(end for _, end in cells)  # none while a cell ran
    assert all(end <= start for (_, end), (start, _) in itertools.pairwise(timings))  # never two at once
    data = json.loads((out / "results.json").read_text())
    assert {cell["id"]: cell["timing"] for cell in data["cells"]} == {
        cell: {"state": "timed", "median_us": float(len(cell)), "samples": 30}
        for cell in (
            f"{case}-{style}-eager" for case in ("good", "wrong") for style in ("triton_op", "custom_op", "control")
        )
    }
    assert data["environment"]["copy_gbps"] == 2500.0 and data["environment"]["timing_seconds"] > 0
    last = {}
    for line in (out / "records.jsonl").read_text().splitlines():  # the log's last record of each cell has it too
        entry = json.loads(line)
        if "record" in entry:
            last[entry["record"]["id"]] = entry["record"]["timing"]["state"]
    assert set(last.values()) == {"timed"}


def test_a_timed_repro_script_times_the_checked_artifact_on_its_own(tmp_path: Path):
    matrix, out = tmp_path / "m.toml", tmp_path / "out"
    matrix.write_text(matrix_text(["tests.fixtures.good"], ["control"], {"eager": ("cpu", 60)}))
    assert run_harness("run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "0", "-q").returncode == 0
    cell = "good-control-eager"
    made = run_harness("repro", cell, "--results", str(out / "results.json"), "--matrix", str(matrix), "--timed")
    assert made.returncode == 0, made.stderr
    script = out / "repros" / f"{cell}.timed.py"
    assert "import harness" not in script.read_text() and "from harness" not in script.read_text()  # torch only
    ran = subprocess.run(  # from the repository: the fixture's case module imports
        [sys.executable, "-c", RUN, str(script)], capture_output=True, text=True, timeout=300, cwd=REPO
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert re.fullmatch(
        rf"{cell}: [\d.]+ µs ±[\d.]+% \(median of \d+ of 30 samples after 5 warm-ups, host clock: no CUDA device\), "
        r"host [\d.]+ µs per call\n",
        ran.stdout,
    ), ran.stdout
