"""Every cell autotunes afresh: the configs a style's Triton autotuners picked for an earlier cell of this process
are forgotten before the next (harness/cell/autotuners.py, harness/cell/runner.py ``fresh_autotune``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch._dynamo.utils import counters
from triton.runtime.autotuner import Autotuner

from harness.case import load_case
from harness.cell import runner
from harness.cell import timing as cell_timing
from harness.cell.autotuners import reachable_autotuners
from harness.kernel.styles import build_style
from tests.conftest import cell_spec
from tests.fakes import FakeTimer


@pytest.mark.parametrize("style", ["autotune", "heuristics_autotune", "triton_op_autotune", "custom_op_autotune"])
def test_a_style_s_autotuner_is_found_and_forgets_its_configs_before_each_cell(style: str):
    built: dict = {}
    wrapped = runner.build(load_case("cases.add", "add"), style, built)
    tuners = reachable_autotuners(wrapped)
    assert len(tuners) == 1 and isinstance(tuners[0], Autotuner) and runner.AUTOTUNERS[("add", style)] == tuners
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


def test_a_kept_artifact_is_warmed_and_timed_with_the_configs_its_cell_picked(fake_timer: FakeTimer):
    tuner = reachable_autotuners(build_style("autotune", load_case("cases.add", "add")))[0]
    picked, other = tuner.configs[0], tuner.configs[-1]
    seen: list[dict] = []
    tuner.cache.clear()
    tuner.cache[(3001, "torch.float32")] = picked  # what the cell's own call picked
    cell_timing.keep("add-autotune-eager", "eager", "cuda", lambda: seen.append(dict(tuner.cache)), None, None, [tuner])
    tuner.cache.clear()  # a later cell autotunes afresh, and picks otherwise
    tuner.cache[(3001, "torch.float32")] = other
    cell_timing.warm_kept()
    tuner.cache[(3001, "torch.float32")] = other  # another artifact of the style warmed in between
    timings, _ = cell_timing.time_kept(["add-autotune-eager"], "cuda")
    assert seen and all(cache == {(3001, "torch.float32"): picked} for cache in seen)
    assert timings["add-autotune-eager"].picked == (f"add_kernel (3001, 'torch.float32'): {picked}",)  # in its record


def test_at_the_bandwidth_size_a_kept_artifact_autotunes_afresh_and_each_size_is_timed_with_its_own_pick(
    fake_timer: FakeTimer,
):
    """rmsnorm's key (its columns) is the same at the cell's size and the bandwidth size: the autotuner picks again
    at the bandwidth size, as a model calling the op there does; warm-up and timing give each size its own pick,
    and each timing names the configs it ran."""
    tuner = reachable_autotuners(build_style("autotune", load_case("cases.add", "add")))[0]
    small, large = tuner.configs[0], tuner.configs[-1]
    key = (1000, "torch.float32")
    seen: dict[str, list[dict]] = {"own": [], "check": [], "size": []}
    tuner.cache.clear()
    tuner.cache[key] = small  # what the cell's own call picked, at its small size

    def check(inputs: object) -> None:
        seen["check"].append(dict(tuner.cache))
        tuner.cache[key] = large  # the autotuner's pick there

    at = cell_timing.AtSize(
        4096, lambda: (), check, lambda inputs: lambda: seen["size"].append(dict(tuner.cache)), lambda inputs: 8
    )
    own = lambda: seen["own"].append(dict(tuner.cache))  # noqa: E731
    cell_timing.keep("rmsnorm-autotune-eager", "eager", "cuda", own, None, at, [tuner])
    tuner.cache.clear()  # a later cell autotunes afresh
    cell_timing.warm_kept()
    timings, _ = cell_timing.time_kept(["rmsnorm-autotune-eager"], "cuda")
    assert seen["check"] == [{}]  # nothing picked at the small size reached the call at the bandwidth size
    assert seen["own"] and all(cache == {key: small} for cache in seen["own"])
    assert seen["size"] and all(cache == {key: large} for cache in seen["size"])
    timing = timings["rmsnorm-autotune-eager"]
    assert timing.picked == (f"add_kernel {key}: {small}",)
    assert timing.bandwidth is not None and timing.bandwidth.picked == (f"add_kernel {key}: {large}",)


def test_a_kept_compiled_artifact_is_warmed_from_its_own_cells_graph(
    fake_timer: FakeTimer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Each cell compiles under its own cache key tag; the phase's warm-up re-traces a kept artifact under the tag
    its cell compiled with, so it finds that graph in the FX graph cache instead of compiling it again."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    with torch.compiler.config.patch(cache_key_tag=""):
        runner.fresh_autotune(runner.cache_tag(cell_spec("add", "control", "compile")))
        model = torch.compile(lambda x: torch.relu(x * 2) + 1)
        model(torch.ones(10))
        cell_timing.keep("add-control-compile", "compile", "cuda", lambda: model(torch.ones(10)), None, None, [])
        runner.fresh_autotune(runner.cache_tag(cell_spec("add", "control", "fullgraph")))  # the process's next cell
        torch._dynamo.reset()
        counters.clear()
        cell_timing.warm_kept()
        cell_timing.KEPT.clear()
        assert (counters["inductor"]["fxgraph_cache_hit"], counters["inductor"]["fxgraph_cache_miss"]) == (1, 0)
