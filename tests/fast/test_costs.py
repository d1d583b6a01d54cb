"""The cost model: every cell's seconds split by stage (harness/cell/context.py ``Cell.lap``), and ``python -m bench
costs`` adding a run's records up by path and stage, confirmation and timing phase."""

from pathlib import Path

from bench.costs import costs
from harness.case import load_case
from harness.cell.runner import run_cell
from tests.conftest import cell_spec, typed


def test_a_cells_stages_add_up_to_its_seconds(tmp_path: Path):
    outcome = run_cell(load_case("cases.sin", "sin"), cell_spec("sin", "control", "cpu_compile"), tmp_path, {})
    stages = outcome.measurements.stage_seconds
    assert outcome.status == "pass" and {"setup", "build", "trace", "compile", "end"} <= set(stages)
    assert stages["compile"] > 0 and abs(sum(stages.values()) - outcome.seconds) < 0.05


def test_a_failing_cell_charges_its_seconds_to_the_stage_it_failed_in(tmp_path: Path):
    outcome = run_cell(load_case("cases.sin", "sin"), cell_spec("sin", "raw_jit", "cpu_fallback"), tmp_path, {})
    assert outcome.status == "error" and outcome.stage in outcome.measurements.stage_seconds


def made_up_run() -> dict:
    def cell(path: str, worker: str, start: float, seconds: float, stages: dict, **more) -> dict:
        times = {"started": 1000 + start, "ended": 1000 + start + seconds, "worker": worker, "stage_seconds": stages}
        return {"id": f"a-s-{path}", "case": "a", "style": "s", "path": path, "status": "pass", "seconds": seconds,
                "measurements": times, **more}  # fmt: skip

    script = {"script": "repros/x.py", "reproduced": True, "line": "E", "seconds": 4.0, "started": 1001.0}  # ends at 5
    cells = [
        cell("eager", "gw0", 0, 2.0, {"setup": 0.5, "run": 1.0, "compare": 0.5}),
        cell("compile", "gw1", 0, 6.0, {"setup": 0.5, "compile": 5.0, "end": 0.5}),
        {
            **cell("export_strict", "gw0", 2, 1.0, {"setup": 0.25, "trace": 0.75}),
            **{"status": "error", "error": "E", "error_type": "E", "stage": "trace", "confirmation": script},
        },
    ]
    phases = {"gw0": {"warm": 1006.0, "arrived": 1008.0, "all_arrived": 1009.0, "alone": 1009.5, "done": 1010.0}}
    env = {"wall_seconds": 12.0, "workers": 2, "timing_seconds": 4.0, "timing_phases": phases}
    return {"environment": env, "cells": cells}


def test_costs_add_the_records_up():
    text = costs(typed(made_up_run()))
    assert "cells from the first start to the last end: 6.0 s" in text and "9 cell-seconds on 2 workers" in text
    assert "| compile       |       1 |         6 |     0.5 |       0 |     0   |         5 |     0 |" in text
    assert "| all           |       3 |         9 |     1.2 |       0 |     0.8 |         5 |     1 |" in text
    assert "1 scripts, 4 script-seconds" in text and "1 ended before the last cell, the last 1.0 s before it." in text
    assert "|                                    0 |         2 |         1 |        0.5 |      0.5 |" in text


def test_the_cost_of_every_cell_is_told_apart_from_the_end_stage_some_paths_pay():
    """Setup and build are what every cell pays before its path; the end stage (the GPU waited for, a timed pass's
    check and compile at the bandwidth size) is its own line, by path, not a cost every cell pays."""
    text = costs(typed(made_up_run()))
    before = "Before its path runs (setup + build), what every cell pays: median 0.500 s, 1 cell-seconds in all (14%)."
    assert before in text
    assert ": 0 cell-seconds (6%), most on compile 0.5 s." in text and "Fixed cost" not in text

