"""python -m bench timeline: a run's cells on one lane per worker, a PNG and a text summary whose numbers add up."""

import json
import re
from pathlib import Path

import pytest

from tests.conftest import run_harness
from tests.fast.test_timeline import PNG_MAGIC, bench, table


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


def test_a_cells_cpu_seconds_count_the_compile_workers_still_running_below_its_process():
    """Inductor's compile workers live as long as the cell process: no rusage counts what they compile."""
    import subprocess
    import sys
    import time

    from harness.cell.runner import cpu_seconds, descendants_cpu

    before, others = cpu_seconds(), descendants_cpu()  # this test process's own children so far (a zygote)
    burn = "import time\nend = time.process_time() + 0.6\nwhile time.process_time() < end: pass\ntime.sleep(30)"
    worker = subprocess.Popen([sys.executable, "-c", burn])
    try:
        deadline = time.monotonic() + 20
        while descendants_cpu() - others < 0.6 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert descendants_cpu() - others >= 0.6 and cpu_seconds() - before >= 0.6
    finally:
        worker.kill()
        worker.wait()
    assert descendants_cpu() - others < 0.3 and cpu_seconds() - before >= 0.6  # once reaped, rusage counts it
