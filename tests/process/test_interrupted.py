"""A run killed mid-way keeps every finished record; report draws it as incomplete; --resume finishes it."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import REPO, harness_main, run_harness
from tests.fast.test_interrupted import read_results


def test_sigkill_keeps_records_and_resume_runs_only_the_missing(write_matrix, tmp_path: Path):
    cases = ["tests.fixtures.good", "tests.fixtures.slow"]
    matrix = write_matrix(cases, ["triton_op", "control"], {"cpu_fallback": ("cpu", 120)})
    out = tmp_path / "reports"
    results = out / "results.json"
    run = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "0", "-q"],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 300
    while not ((out / "records.jsonl").exists() and len(read_results(results)["cells"]) >= 2):
        assert run.poll() is None and time.monotonic() < deadline, "the run ended before it could be killed"
        time.sleep(0.2)
    os.killpg(run.pid, signal.SIGKILL)  # the whole run: controller and cell process
    run.wait()

    kept = read_results(results)
    good, slow = "good", "slow"
    assert [c["id"] for c in kept["cells"]] == [f"{good}-triton_op-cpu_fallback", f"{good}-control-cpu_fallback"]
    assert kept["environment"]["complete"] is False

    assert harness_main("report", "--results", str(results)).returncode == 0
    chart = (out / "matrix.md").read_text()
    missing = f"Missing: {slow}-triton_op-cpu_fallback, {slow}-control-cpu_fallback"
    assert f"**Incomplete run**: 2 of 4 cells recorded. {missing}" in chart

    resumed = run_harness("run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "0", "-q", "--resume")
    assert resumed.returncode == 0, resumed.stdout[-2000:]
    assert "2 passed, 2 deselected" in resumed.stdout
    final = read_results(results)
    assert [c["id"] for c in final["cells"]] == [
        f"{case}-{style}-cpu_fallback" for case in (good, slow) for style in ("triton_op", "control")
    ]
    assert final["cells"][:2] == kept["cells"]  # kept as they were, not run again
    assert final["environment"]["complete"] is True and final["environment"]["resumed_cells"] == 2
    assert "Incomplete" not in (out / "matrix.md").read_text()


def test_shards_merge_into_the_whole_run(write_matrix, tmp_path: Path):
    matrix = write_matrix(
        ["tests.fixtures.good", "tests.fixtures.wrong"], ["triton_op", "control"], {"cpu_fallback": ("cpu", 120)}
    )
    whole, shards = tmp_path / "whole", [tmp_path / "s1", tmp_path / "s2"]
    assert run_harness("run", "--matrix", str(matrix), "--report-dir", str(whole), "-n", "0").returncode == 0
    for index, out in enumerate(shards, start=1):
        done = run_harness("run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "0", "--shard", f"{index}/2")
        assert done.returncode == 0, done.stdout[-2000:]
        assert len(read_results(out / "results.json")["cells"]) == 2
    merged = tmp_path / "merged" / "results.json"
    done = harness_main("merge", *(str(out / "results.json") for out in shards), "--out", str(merged))
    assert done.returncode == 0, done.stderr
    expected = read_results(whole / "results.json")
    result = read_results(merged)
    assert [(c["id"], c["status"]) for c in result["cells"]] == [(c["id"], c["status"]) for c in expected["cells"]]
    assert result["environment"]["complete"] is True and result["environment"]["shards"] == 2
    chart = (merged.parent / "matrix.md").read_text()
    assert "❗WRONG 5/5 [1]" in chart and "Incomplete" not in chart  # re-run 4 times: wrong every time

    shard = str(shards[0] / "results.json")
    again = harness_main("merge", shard, shard, "--out", str(merged))
    assert again.returncode == 2 and "is in another shard too" in again.stderr
    assert harness_main("run", "--matrix", str(matrix), "--shard", "3/2").returncode == 2
