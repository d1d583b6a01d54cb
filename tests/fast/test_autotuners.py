"""Every cell autotunes afresh: the configs a style's Triton autotuners picked for an earlier cell of this process
are forgotten before the next (harness/cell/autotuners.py, harness/cell/runner.py ``fresh_autotune``)."""

from __future__ import annotations

import pytest
from triton.runtime.autotuner import Autotuner

from harness.case import load_case
from harness.cell import runner
from harness.cell.autotuners import reachable_autotuners
from harness.kernel.styles import build_style


@pytest.mark.parametrize("style", ["autotune", "heuristics_autotune", "triton_op_autotune", "custom_op_autotune"])
def test_a_style_s_autotuner_is_found_and_forgets_its_configs_before_each_cell(style: str):
    built: dict = {}
    wrapped = runner.build(load_case("cases.add", "add"), style, built)
    tuners = reachable_autotuners(wrapped)
    assert len(tuners) == 1 and isinstance(tuners[0], Autotuner) and id(tuners[0]) in runner.AUTOTUNERS
    tuners[0].cache[(3001, "torch.float32")] = tuners[0].configs[0]  # what an earlier cell's call picked
    runner.fresh_autotune()
    assert tuners[0].cache == {}


def test_styles_without_autotune_hold_none():
    case = load_case("cases.add", "add")
    assert [reachable_autotuners(build_style(style, case)) for style in ("raw_jit", "triton_op", "control")] == [
        [],
        [],
        [],
    ]
