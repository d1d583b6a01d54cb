"""The cost model: every cell's seconds split by stage (harness/cell/context.py ``Cell.lap``), and ``python -m bench
costs`` adding a run's records up by path and stage, confirmation and timing phase: on a run's own records (cells
run for real in this process, a script's process faked) and on made-up ones."""

import re
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench.costs import costs
from harness.case import load_case
from harness.cell.runner import run_cell
from harness.execution import confirm
from harness.plugin.processes import CellProcesses
from harness.records.files import read_results
from tests.conftest import cell_spec, harness_main, typed
from tests.fakes import FakeTimer, InProcessCells


def test_a_cells_stages_add_up_to_its_seconds(tmp_path: Path):
    outcome = run_cell(load_case("cases.sin", "sin"), cell_spec("sin", "control", "cpu_compile"), tmp_path, {})
    stages = outcome.measurements.stage_seconds
    assert outcome.status == "pass" and {"setup", "build", "trace", "compile", "end"} <= set(stages)
    assert stages["compile"] > 0 and abs(sum(stages.values()) - outcome.seconds) < 0.05


def test_a_failing_cell_charges_its_seconds_to_the_stage_it_failed_in(tmp_path: Path):
    outcome = run_cell(load_case("cases.sin", "sin"), cell_spec("sin", "raw_jit", "cpu_fallback"), tmp_path, {})
    assert outcome.status == "error" and outcome.stage in outcome.measurements.stage_seconds


def made_up_run() -> dict:
    def cell(path: str, worker: str, start: float, seconds: float, stages: dict, cpu: float = 0.0, held: float = 0.0,
             **more) -> dict:  # fmt: skip
        times = {"started": 1000 + start, "ended": 1000 + start + seconds, "worker": worker, "stage_seconds": stages,
                 "cpu_seconds": cpu, "gpu_held_mb": held}  # fmt: skip
        return {"id": f"a-s-{path}", "case": "a", "style": "s", "path": path, "status": "pass", "seconds": seconds,
                "measurements": times, **more}  # fmt: skip

    script = {"script": "repros/x.py", "reproduced": True, "line": "E", "seconds": 4.0, "started": 1001.0}  # ends at 5
    cells = [
        cell("eager", "gw0", 0, 2.0, {"setup": 0.5, "run": 1.0, "compare": 0.5}, cpu=0.5, held=100.0),
        cell("compile", "gw1", 0, 6.0, {"setup": 0.5, "compile": 5.0, "end": 0.5}, cpu=4.5),
        {
            **cell("export_strict", "gw0", 2, 1.0, {"setup": 0.25, "trace": 0.75}, held=250.0),  # gw0's last
            **{"status": "error", "error": "E", "error_type": "E", "stage": "trace", "confirmation": script},
        },
    ]
    clock = {"warm": 1006.0, "arrived": 1008.0, "all_arrived": 1009.0, "alone": 1009.5, "hosted": 1009.6,
             "all_hosted": 1009.7, "primed": 1009.75, "all_primed": 1009.8, "alone_again": 1009.9, "done": 1010.0}
    phases = {"gw0": {**clock, "warm_gpu_peak_mb": 1536.5}}
    marks = {"command": 998.0, "session": 998.5, "zygote_serving": 999.25, "first_collected": 999.0,
             "last_collected": 999.5}  # fmt: skip
    env = {"wall_seconds": 12.0, "workers": 2, "timing_seconds": 3.0, "timing_phases": phases, "start_marks": marks}
    return {"environment": env, "cells": cells}


def test_costs_add_the_records_up():
    text = costs(typed(made_up_run()))
    assert "cells from the first start to the last end: 6.0 s" in text and "9 cell-seconds on 2 workers" in text
    assert "after the last cell: 4.0 s (33% of the wall; of it the timing phase 3.0 s, then the confirmation" in text
    assert "| compile       |       1 |         6 |   4.5 |       1.5 |     0.5 |       0 |     0   |" in text
    assert "| all           |       3 |         9 |   5   |       4   |     1.2 |       0 |     0.8 |" in text
    start = "the session began at 0.5 s, the zygote served at 1.2 s, the first worker had collected at 1.0 s, the last"
    assert f"- before the first cell: 2.0 s ({start} at 1.5 s)" in text
    assert "1 scripts, 4 script-seconds" in text and "1 ended before the last cell, the last 1.0 s before it." in text
    steps = "|                                    0 |         2 |         1 |        0.5 |            0.1 |"
    held = "                                  250 |"  # after gw0's last cell, not after its first
    assert f"{steps}              0.2 |              0.1 |              0.1 |{held}                   1536.5 |" in text


def test_the_all_row_adds_the_cells_not_the_rounded_rows():
    """Four paths of 0.06 s each: every row shows 0.1, and all of them together 0.2 s, not 0.4."""
    run = made_up_run()
    first = run["cells"][0]
    measured = {**first["measurements"], "ended": 1000.06, "stage_seconds": {"run": 0.06}, "cpu_seconds": 0.0}
    run["cells"] = [
        {**first, "id": f"a-s-{path}", "path": path, "seconds": 0.06, "measurements": measured}
        for path in ("eager", "compile", "dynamic", "fullgraph")
    ]
    text = costs(typed(run))
    row = next(line for line in text.splitlines() if line.startswith("| all "))
    assert [float(value) for value in row.split("|")[2:6]] == [4, 0.2, 0.0, 0.2], row


def test_the_cost_of_every_cell_is_told_apart_from_the_end_stage_some_paths_pay():
    """Setup and build are what every cell pays before its path; the end stage (the GPU waited for, a timed pass's
    check and compile at the bandwidth size) is its own line, by path, not a cost every cell pays."""
    text = costs(typed(made_up_run()))
    before = "Before its path runs (setup + build), what every cell pays: median 0.500 s, 1 cell-seconds in all (14%)."
    assert before in text
    assert ": 0 cell-seconds (6%), most on compile 0.5 s." in text and "Fixed cost" not in text


def test_the_warm_ups_are_told_by_path_from_the_records():
    run = made_up_run()
    for cell, warm in zip(run["cells"], (0.25, 0.75), strict=False):
        cell["timing"] = {"state": "timed", "median_us": 1.0, "host_us": 2.0, "warm_s": warm}
    text = costs(typed(run))
    said = "Warm-ups by path (the kept artifacts' `timing.warm_s`, 1.0 s in all): compile 0.8 s (1, median 0.75 s), "
    assert said + "eager 0.2 s (1, median 0.25 s)." in text
    assert "No warm-up seconds recorded" in costs(typed(made_up_run()))


def test_the_scripts_places_are_told_before_and_after_the_last_cell():
    run = made_up_run()
    reading = {"at": 1006.5, "running": 14, "places": 14, "idle_cores": 7.5, "gpu_free_mb": 60000, "held": None}
    run["environment"]["script_places"] = [
        {**reading, "at": 1001.0, "running": 3, "places": 3, "idle_cores": 0.5},
        reading,
        {**reading, "at": 1007.5, "held": "memory", "idle_cores": None},
    ]
    text = costs(typed(run))
    said = ("Scripts waiting for a place (`environment.script_places`): before the last cell's end, 1 readings: "
            "running median 3 of places median 3, idle cores median 0.5; held back by the GPU's memory in 0, by the "
            "timing turns in 0; after the last cell's end, 2 readings: running median 14 of places median 14, idle "
            "cores median 7.5; held back by the GPU's memory in 1, by the timing turns in 0.")  # fmt: skip
    assert said in text
    assert "No script waited for a place" in costs(typed(made_up_run()))


class ScriptProcess:
    """A repro script's process, faked (a fast test starts none): it runs 0.05 s and raises the cell's error."""

    pid = 2**22 + 1

    def __init__(self, command: list[str], **options: object) -> None:
        self.command, self.returncode = command, 1

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        time.sleep(0.05)
        error = "AssertionError: this fixture has no GPU kernel"
        return "", f"Traceback (most recent call last):\n  File \"x.py\"\n{error}\n"


def test_costs_add_up_a_runs_own_records(
    write_matrix, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_timer: FakeTimer
):
    """A run whose cells run for real (``run_cell``, in this process) and whose timed pass goes through the timing
    phase: its records carry each cell's stage seconds, its script's start and the worker's phase clock, which the
    cost table reads (removing any of them from the code fails here)."""
    monkeypatch.setattr(CellProcesses, "make_process", InProcessCells(tmp_path / "cells"))
    fake_subprocess = SimpleNamespace(Popen=ScriptProcess, PIPE=subprocess.PIPE, DEVNULL=subprocess.DEVNULL,
                                      TimeoutExpired=subprocess.TimeoutExpired)  # fmt: skip
    monkeypatch.setattr(confirm, "subprocess", fake_subprocess)
    monkeypatch.setattr(confirm, "forkable", lambda source: False)  # every script a (fake) fresh Python
    paths = {"eager": ("cpu", 120), "cpu_compile": ("cpu", 120)}
    matrix = write_matrix(["tests.fixtures.good"], ["raw_jit", "control"], paths)
    out = tmp_path / "out"
    done = harness_main("run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "0")
    assert done.returncode == 0, done.stdout[-2000:]
    text = costs(read_results(out / "results.json"))
    rows = {line.split("|")[1].strip(): line for line in text.splitlines() if line.startswith("| ")}
    cells, seconds, cpu, waiting, *stages = (float(value) for value in rows["all"].split("|")[2:-1])
    assert cells == 4 and seconds > 0 and abs(sum(stages) - seconds) <= 0.05 * len(stages), rows["all"]
    assert 0 < cpu and abs(cpu + waiting - seconds) <= 0.15, rows["all"]  # each shown to 0.1
    assert rows["cpu_compile"].split("|")[8].strip() not in ("", "0"), rows["cpu_compile"]  # its compile stage
    assert re.search(r"\d scripts, \d+ script-seconds \(median 0\.\d s, longest 0\.\d s\); \d ended", text), text
    began = r"before the first cell: \d+\.\d s \(the session began at \d+\.\d s, "
    assert re.search(began + r"the first worker had collected at \d+\.\d s\)", text), text  # no zygote, no xdist
    phase = [value.strip() for value in rows["main"].split("|")[2:-1]]
    assert all(re.fullmatch(r"-?\d+(\.\d+)?", value) for value in phase[:8]), rows["main"]
    assert phase[8:] == ["", "", ""]  # no GPU: nothing held after the last cell, no warm-up GPU peak, none ran out
