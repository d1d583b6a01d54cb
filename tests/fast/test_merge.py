"""``merge`` of shares: complete only with every share of the split; a partial merge (2 of 3 shares, one share)
says so (``complete`` false, "Incomplete run" with the missing cells, exit 1) and answers no goal from part of its
cells, in the chart or through ``which``; shares of different selections or splits do not merge (exit 2)."""

import json
from pathlib import Path

import pytest

from tests.conftest import harness_main, make_record

AXES = {"cases": ["sin"], "styles": ["control", "triton_op"], "paths": ["cpu_fallback", "eager"]}
CELLS = [f"sin-{style}-{path}" for style in AXES["styles"] for path in AXES["paths"]]
GOALS = {"on_cpu": ["cpu_fallback"], "in_eager": ["eager"]}


def share(
    folder: Path,
    index: int,
    count: int = 3,
    axes: dict | None = None,
    dealt: list[int] | None = None,
    digest: str = "",
    **stamped,
) -> Path:
    """Share ``index``/``count`` of the 4 cells of AXES, dealt as --shard deals them (cell k to share k mod N), or,
    balanced by cell seconds of ``digest`` (--shard-by), cell k to share ``dealt[k]``; ``stamped``: environment keys
    set or replaced."""
    mine = [cell for k, cell in enumerate(CELLS) if (dealt[k] if dealt else k % count) == index - 1]
    records = [make_record(*cell.split("-"), status="pass") for cell in mine]
    env = {
        "torch": "2.13", "triton": "3.7.1", "device": "cpu", "complete": True, "shard": f"{index}/{count}",
        "axes": axes or AXES, "goals": GOALS, "expected_cells": mine, "workers": 2,
        "wall_seconds": 10.0 * index, "timing_seconds": float(index), "commit": "abc1234",
        "matrix": f"/runner{index}/checkout/matrix.toml",
        **({"shard_by": "earlier.json", "shard_digest": digest} if digest else {}), **stamped,
    }  # fmt: skip
    file = folder / f"share{index}of{count}.json"
    file.write_text(json.dumps({"schema": 1, "environment": env, "cells": records}))
    return file


def merged(tmp_path: Path, *shares: Path) -> tuple[int, str, dict, str]:
    out = tmp_path / "merged" / "results.json"
    done = harness_main("merge", *map(str, shares), "--out", str(out))
    data = json.loads(out.read_text()) if out.exists() else {}
    return done.returncode, done.stderr, data, (out.parent / "matrix.md").read_text() if out.exists() else ""


def test_every_share_merges_complete(tmp_path: Path):
    code, err, data, chart = merged(tmp_path, *(share(tmp_path, n) for n in (3, 1, 2)))
    assert (code, err) == (0, "")
    assert data["environment"]["complete"] is True and data["environment"]["expected_cells"] == CELLS
    assert [cell["id"] for cell in data["cells"]] == CELLS
    assert "Incomplete" not in chart and "- **on_cpu** (`cpu_fallback`): use **triton_op**" in chart
    env = data["environment"]  # each share's wall and timing phase, in share order; no one run's phase
    assert (env["shard_wall_seconds"], env["shard_timing_seconds"], env.get("timing_seconds")) == (
        [10.0, 20.0, 30.0],
        [1.0, 2.0, 3.0],
        None,
    )
    assert "3 shards of 6 worker(s) in all, 10 + 20 + 30 s wall" in chart


def test_two_of_three_shares_are_an_incomplete_merge_answering_no_goal_from_part(tmp_path: Path):
    # share 3 of 3 holds sin-triton_op-cpu_fallback: on_cpu has control's cell only, in_eager has both
    code, err, data, chart = merged(tmp_path, share(tmp_path, 1), share(tmp_path, 2))
    assert code == 1
    assert err == (
        "incomplete: share(s) 3/3 not given; 3 of 4 selected cells recorded (the chart lists the missing ones and "
        "answers no goal on their paths)\n"
    )
    env = data["environment"]
    assert (env["complete"], env["missing_shares"], env["expected_cells"]) == (False, ["3/3"], CELLS)
    assert "**Incomplete run**: 3 of 4 cells recorded. Missing: sin-triton_op-cpu_fallback" in chart
    assert "**on_cpu**" not in chart and "Not answered, the run is incomplete" in chart
    assert "- **in_eager** (`eager`): use **triton_op**" in chart
    results = str(tmp_path / "merged" / "results.json")
    refused = harness_main("which", "--goals", "in_eager,on_cpu", "--results", results)
    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr.startswith(f"not answered: {results} is an incomplete run: cells of the paths of on_cpu ")
    answered = harness_main("which", "--goals", "in_eager", "--results", results)
    assert answered.returncode == 0 and "use: triton_op " in answered.stdout


def test_one_share_alone_is_incomplete(tmp_path: Path):
    code, err, data, chart = merged(tmp_path, share(tmp_path, 2))
    assert code == 1 and err.startswith("incomplete: share(s) 1/3, 3/3 not given; 1 of 4 selected cells recorded")
    assert data["environment"]["complete"] is False and "**Incomplete run**: 1 of 4 cells recorded." in chart
    assert "use **" not in chart  # no goal answered


def test_shares_of_different_selections_or_splits_do_not_merge(tmp_path: Path):
    other = tmp_path / "other"
    other.mkdir()
    narrower = share(other, 2, axes={**AXES, "paths": ["cpu_fallback"]})
    code, err, data, _ = merged(tmp_path, share(tmp_path, 1), narrower)
    assert (code, data) == (2, {})
    assert err.startswith(f"error: {narrower}: environment.axes: another selection than ")
    quarter = share(tmp_path, 3, count=4)  # sin-triton_op-cpu_fallback: no cell of share 1/3, of another split
    code, err, data, _ = merged(tmp_path, share(tmp_path, 1), quarter)
    assert (code, data) == (2, {})
    assert err.startswith(f"error: {quarter}: environment.shard: '3/4', but ")


def test_a_merge_missing_a_share_of_an_older_run_without_axes_answers_no_goal(tmp_path: Path):
    shares = [share(tmp_path, n) for n in (1, 2)]
    for file in shares:  # a run that did not record its axes: the missing share's cells cannot be named
        data = json.loads(file.read_text())
        del data["environment"]["axes"]
        file.write_text(json.dumps(data))
    code, _, data, chart = merged(tmp_path, *shares)
    assert code == 1 and data["environment"]["complete"] is False and "**Incomplete run**" in chart
    assert "use **" not in chart and "Not answered, the run is incomplete" in chart


def test_out_naming_one_of_the_shares_is_refused_and_the_share_kept(tmp_path: Path):
    """Issue 61: ``merge A.json B.json --out A.json`` wrote over its own input share (its shard stamp gone)."""
    first, second = share(tmp_path, 1, count=2), share(tmp_path, 2, count=2)
    before = first.read_text()
    for out in (first, tmp_path / "." / first.name):
        done = harness_main("merge", str(first), str(second), "--out", str(out))
        assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
        assert done.stderr.startswith(f"error: {out}: --out: is the share 1 file: the command would write over it")
    assert first.read_text() == before and not (tmp_path / "matrix.md").exists()


@pytest.mark.parametrize(
    ("stamped", "key", "words"),
    [
        ({"commit": "def5678"}, "environment.commit", "'def5678', but {first} has 'abc1234': shares of different "
         "commits do not merge"),
        ({"matrix": "/runner2/checkout/matrix-liger.toml"}, "environment.matrix", "'matrix-liger.toml', but {first} "
         "has 'matrix.toml': shares of different matrix files do not merge"),
        ({"goals": {"on_cpu": ["cpu_fallback"]}}, "environment.goals", "shares of different matrix files"),
        ({"matrix_digest": "0123456789abcdef"}, "environment.matrix_digest", "shares of different matrix files"),
        ({"timing_seconds": -2.0}, "environment.timing_seconds", "expected a number >= 0"),
        # merged as complete, the cells the other -k left out missing
        ({"keyword": "not eager"}, "environment.keyword", "-k 'not eager', but {first} has -k None: shares of "
         "different selections do not merge"),
    ],
)
def test_shares_of_two_commits_or_matrix_files_or_a_negative_phase_do_not_merge(stamped, key, words, tmp_path):
    """Issue 61: these merged silently (the error text named the matrix among what must match); a negative
    ``timing_seconds`` was kept in ``shard_timing_seconds``."""
    first, other = share(tmp_path, 1, count=2), share(tmp_path, 2, count=2, **stamped)
    code, err, data, _ = merged(tmp_path, first, other)
    assert (code, data) == (2, {})
    assert err.startswith(f"error: {other}: {key}: ") and err.count("\n") == 1, err
    assert words.format(first=first) in err


def test_overlapping_shares_of_two_commits_say_the_commits_differ(tmp_path: Path):
    """Two runs' shares hold the same cells: the commit tells why (it said a cell "is in another shard too")."""
    other = tmp_path / "other"
    other.mkdir()
    first, second = share(tmp_path, 1, count=2), share(other, 1, count=2, commit="def5678", shard="2/2")
    code, err, _, _ = merged(tmp_path, first, second)
    assert code == 2 and err.startswith(f"error: {second}: environment.commit: 'def5678', but "), err


def test_shares_balanced_by_cell_seconds_merge_in_matrix_order_and_a_missing_ones_cells_are_named(tmp_path: Path):
    """--shard-by deals by cell seconds, not cell k to share k mod N: the shares' lists interleaved are not the
    matrix order, and a missing share's cells are those no share given holds."""
    balanced = [share(tmp_path, n, count=2, dealt=[0, 0, 1, 1], digest="d1") for n in (1, 2)]
    code, err, data, _ = merged(tmp_path, *balanced)
    assert (code, err) == (0, "")
    assert data["environment"]["expected_cells"] == CELLS == [cell["id"] for cell in data["cells"]]
    code, _, data, chart = merged(tmp_path, balanced[0])
    assert code == 1 and data["environment"]["expected_cells"] == CELLS
    assert "Missing: sin-triton_op-cpu_fallback, sin-triton_op-eager" in chart
    other = tmp_path / "other"
    other.mkdir()
    code, err, data, _ = merged(other, balanced[0], share(other, 2, count=2, dealt=[0, 0, 1, 1], digest="d2"))
    assert (code, data) == (2, {})
    assert err.startswith(f"error: {other / 'share2of2.json'}: environment.shard_digest: 'd2', but ")
    thirds = share(other, 1, count=3, dealt=[0, 0, 1, 2], digest="d3"), share(other, 3, count=3)  # the latter in turn
    code, err, data, _ = merged(other, *thirds)
    assert (code, data) == (2, {}) and "environment.shard_digest: None, but " in err
