"""Selecting cells the way pytest does (node ids, -k), --cases naming modules, and cells re-run within a run."""

import json
from pathlib import Path
from xml.etree import ElementTree

from harness.errors import EXIT_SUSPECTS
from tests.conftest import harness_main, run_harness


def test_node_ids_select_cells_and_an_unknown_one_is_one_line(tmp_path: Path):
    wanted = ["sin-triton_op-cpu_fallback", "add-control-cpu_compile"]
    junit = tmp_path / "junit.xml"
    targets = (f"matrix.toml::{cell}" for cell in wanted)
    done = run_harness("run", *targets, "--report-dir", str(tmp_path), "-n", "0", "--junitxml", str(junit))
    assert done.returncode == 0, done.stdout[-2000:]
    cells = json.loads((tmp_path / "results.json").read_text())["cells"]
    assert sorted(cell["id"] for cell in cells) == sorted(wanted)
    cases = {case.get("name"): case for case in ElementTree.parse(junit).getroot().iter("testcase")}
    assert sorted(cases) == sorted(wanted)  # CI systems show each cell by its id
    bad = harness_main("run", "matrix.toml::sin-triton_op-nosuchpath", "--report-dir", str(tmp_path))
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert bad.stderr.startswith("error: command line: matrix.toml::: not a cell of the selection: sin-triton_op-no")


def test_a_wrong_cell_is_rerun_and_keeps_every_outcome(write_matrix, tmp_path: Path):
    matrix = write_matrix(["tests.fixtures.wrong", "tests.fixtures.flaky", "tests.fixtures.good"], ["triton_op"], {})
    matrix.write_text(
        matrix.read_text().replace("[paths]", '[paths]\ncpu_fallback = { device = "cpu", timeout = 120 }')
        + "[run]\nreruns = 2\n"
    )
    out = tmp_path / "out"
    mark = {"HARNESS_TEST_FLAKY_MARK": str(tmp_path / "flaky.mark")}
    done = run_harness("run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "0", "-q", env=mark)
    # the flaky kernel is wrong on the run's first call only: its own script, run after, cannot show it (a suspect)
    assert done.returncode == EXIT_SUSPECTS, done.stdout[-2000:]
    data = json.loads((out / "results.json").read_text())
    cells = {cell["case"]: cell for cell in data["cells"]}
    assert (cells["wrong"]["status"], cells["wrong"]["outcomes"]) == ("wrong", ["wrong", "wrong", "wrong"])
    assert (cells["flaky"]["status"], cells["flaky"]["outcomes"]) == ("wrong", ["wrong", "pass", "pass"])
    assert (cells["wrong"]["confirmation"]["reproduced"], cells["flaky"]["confirmation"]["reproduced"]) == (True, False)
    assert "outcomes" not in cells["good"] and data["environment"]["reruns"] == 2
    for cell in cells.values():
        assert cell["measurements"]["started"] <= cell["measurements"]["ended"]
    # each attempt after the first ran in a fresh process: the last in the worker's own, from then on started ahead
    logs = sorted(log.name for log in (out / "logs").glob("main*.log"))
    assert logs == ["main.attempt2.log", "main.log", "main.spare1.log", "main.spare2.log"]
    assert cells["wrong"]["measurements"]["process_start"] > 0  # the run's first cell started its process


def test_a_cell_unlike_its_baseline_is_rerun(write_matrix, tmp_path: Path):
    matrix = write_matrix(["tests.fixtures.good"], ["triton_op"], {"cpu_fallback": ("cpu", 120)})
    matrix.write_text(matrix.read_text() + "[run]\nreruns = 1\n")
    first = tmp_path / "first"
    assert run_harness("run", "--matrix", str(matrix), "--report-dir", str(first), "-n", "0").returncode == 0
    baseline = json.loads((first / "results.json").read_text())
    baseline["cells"][0]["status"] = "error"
    (tmp_path / "baseline.json").write_text(json.dumps(baseline))
    out = tmp_path / "out"
    args = ("--matrix", str(matrix), "--report-dir", str(out), "-n", "0", "--baseline", str(tmp_path / "baseline.json"))
    assert run_harness("run", *args).returncode == 0
    (cell,) = json.loads((out / "results.json").read_text())["cells"]
    assert cell["outcomes"] == ["pass", "pass"]
    broken = harness_main("run", "--matrix", str(matrix), "--baseline", str(tmp_path / "nope.json"))
    assert broken.returncode == 2 and broken.stderr.startswith(f"error: {tmp_path / 'nope.json'}: (file): no such")
