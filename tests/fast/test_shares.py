"""``--shard I/N``: cell k to share k mod N, or, with ``--shard-by``, the shares balanced by an earlier run's cell
seconds (greedy, longest first); every share deals the whole selection alike, so each cell is in exactly one; a
balancing file that cannot be read or holds no cell of the selection is one line and exit 2."""

import json
import statistics
from pathlib import Path

import pytest

from harness.__main__ import main
from harness.matrix.config import load_matrix
from harness.plugin.confirming import Confirmer
from harness.plugin.processes import CellProcesses
from harness.records.files import read_results
from harness.records.record import Record
from harness.records.shares import balanced, cell_seconds, estimates, seconds_by_cell, share_of_each
from harness.spec import CellId, Measurements, Outcome
from tests.conftest import REPO, TOLERANCES, cell_spec, harness_main, make_record
from tests.fakes import FakeCells
from tests.fast.test_bad_inputs import HEAD, one_line
from tests.fast.test_scheduling import run_fake_matrix

COMMITTED = REPO / "reports" / "results.json"  # the committed chart's run: the full default matrix on one H200
DEFAULT = [spec.cell_id for spec in load_matrix(REPO / "matrix.toml").cells]
# run_fake_matrix's cells, in matrix order, and seconds that deal them [0, 0, 1, 1] in two shares
FAKE_CELLS = [f"{case}-{style}-cpu_fallback" for case in ("good", "wrong") for style in ("triton_op", "control")]
FAKE_SECONDS = [10.0, 1.0, 1.0, 10.0]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeCells:
    cells = FakeCells()
    monkeypatch.setattr(CellProcesses, "make_process", cells)
    monkeypatch.setattr(Confirmer, "submit", lambda self, record, env: None)
    monkeypatch.setattr(Confirmer, "confirm", lambda self, results, scripts: [])
    return cells


def test_without_a_results_file_cell_k_goes_to_share_k_mod_n():
    for count in (1, 2, 4):
        assert share_of_each(DEFAULT, count, None) == [k % count for k in range(len(DEFAULT))]


def test_the_longest_cell_goes_first_to_the_share_with_the_fewest_seconds():
    # 5 -> share 0, 4 -> 1, the first 3 -> 1 (4 < 5), the next -> 0 (5 < 7), the last -> 1 (7 < 8)
    assert balanced([3.0, 5.0, 3.0, 4.0, 3.0], 2) == [1, 0, 0, 1, 1]
    assert balanced([1.0, 1.0, 1.0], 3) == [0, 1, 2]  # ties: the lowest share, cells in their order
    assert balanced([], 3) == []


def test_the_cells_that_can_share_an_aoti_package_go_to_one_share():
    """aoti_strict, aoti_nonstrict and aoti_standalone of one case and style load the package the first of them
    compiled: split, each share would compile it again (the earlier run counted the loaders' seconds alone)."""
    paths = ("aoti_standalone", "eager", "aoti_strict", "aoti_nonstrict", "aoti_dynamic")
    cells = [CellId(case, "s", path) for case in ("a", "b") for path in paths]
    seconds = dict(zip(cells, [9.0, 1.0, 0.5, 0.5, 9.0] * 2, strict=True))
    dealt = dict(zip(cells, share_of_each(cells, 4, seconds), strict=True))
    for case in ("a", "b"):
        assert (
            len({dealt[CellId(case, "s", path)] for path in ("aoti_standalone", "aoti_strict", "aoti_nonstrict")}) == 1
        )
    assert sorted(set(dealt.values())) == [0, 1, 2, 3]


def test_a_cell_the_earlier_run_lacks_costs_its_paths_median_else_the_median_of_all():
    known = [("a", "eager"), ("b", "eager"), ("a", "aoti"), ("x-y", "eager")]  # a damaged file's case "x-y" too
    seconds = {CellId(case, "s", path): value for (case, path), value in zip(known, [1.0, 2.0, 20.0, 3.0], strict=True)}
    cells = [CellId(case, "s", path) for case, path in [("a", "eager"), ("d", "eager"), ("d", "aoti"), ("d", "vmap")]]
    assert estimates(cells, seconds) == [1.0, 2.0, 20.0, 2.5]


def test_a_cell_costs_its_span_less_its_process_start_else_its_seconds():
    spec, spans = cell_spec("sin", "control"), Measurements(started=100.0, ended=112.0, process_start=2.0)
    rerun = Record.of(spec, Outcome(status="wrong", seconds=1.5, measurements=spans))
    assert cell_seconds(rerun) == 10.0  # every attempt of a re-run cell, not the first one's 1.5 s
    assert cell_seconds(Record.of(spec, Outcome(status="pass", seconds=1.5))) == 1.5


@pytest.mark.parametrize("count", [2, 4])
def test_the_committed_run_balances_the_default_matrix_within_a_tenth(count: int):
    seconds = seconds_by_cell(read_results(COMMITTED), COMMITTED, DEFAULT)
    dealt = share_of_each(DEFAULT, count, seconds)
    assert sorted(set(dealt)) == list(range(count)) and len(dealt) == len(DEFAULT)  # each cell in one share
    cost = estimates(DEFAULT, seconds)
    totals = [sum(c for c, share in zip(cost, dealt, strict=True) if share == s) for s in range(count)]
    assert max(totals) / statistics.mean(totals) <= 1.10
    in_turn = [sum(cost[k::count]) for k in range(count)]
    assert max(totals) < max(in_turn)  # balanced closer than dealing in turn
    again = seconds_by_cell(read_results(COMMITTED), COMMITTED, DEFAULT)
    assert share_of_each(DEFAULT, count, again) == dealt  # every share deals the same from the same file


def earlier_run(folder: Path) -> Path:
    """A results file of run_fake_matrix's cells with FAKE_SECONDS."""
    cells = [
        make_record(*cell.split("-"), status="pass", seconds=seconds)
        for cell, seconds in zip(FAKE_CELLS, FAKE_SECONDS, strict=True)
    ]
    file = folder / "earlier.json"
    file.write_text(json.dumps({"schema": 3, "environment": {"torch": "2.13"}, "cells": cells}))
    return file


def test_balanced_shares_run_their_cells_and_merge_into_the_whole_run(fake: FakeCells, tmp_path: Path):
    earlier = earlier_run(tmp_path)
    outs = []
    for share in (1, 2):
        folder = tmp_path / f"share{share}"
        folder.mkdir()
        fake.runs.clear()
        code, data = run_fake_matrix(folder, "--shard", f"{share}/2", "--shard-by", str(earlier))
        assert code == 0 and data["environment"]["shard_by"] == str(earlier)
        ran = sorted(run.cell for run in fake.runs if run.attempt == 1)
        assert ran == sorted(FAKE_CELLS[2 * share - 2 : 2 * share])  # [0, 0, 1, 1]; in turn: [0, 1, 0, 1]
        outs.append(folder / "out" / "results.json")
    digests = {json.loads(out.read_text())["environment"]["shard_digest"] for out in outs}
    assert len(digests) == 1
    merged = tmp_path / "merged" / "results.json"
    done = harness_main("merge", *map(str, reversed(outs)), "--out", str(merged))
    data = json.loads(merged.read_text())
    assert done.returncode == 0 and data["environment"]["complete"] is True
    assert [cell["id"] for cell in data["cells"]] == FAKE_CELLS == data["environment"]["expected_cells"]
    assert "shard_by" not in data["environment"] and "shard_digest" not in data["environment"]


@pytest.mark.parametrize(
    ("text", "key", "words"),
    [
        ("{not json", "(json): ", "not valid JSON"),
        ('{"schema": 9, "environment": {}, "cells": []}', "schema: ", "expected 1, 2 or 3, got 9"),
        ('{"schema": 3, "environment": {}, "cells": [{"id": 5}]}', "cells[0]", ""),
        ('{"schema": 3, "environment": {}, "cells": []}', "cells: ", "no record of a cell of this selection"),
        (None, "(file): ", "no such file"),
    ],
)
def test_a_balancing_file_that_cannot_balance_is_one_line(text, key, words, tmp_path, monkeypatch, capsys):
    (tmp_path / "m.toml").write_text(HEAD + TOLERANCES)
    monkeypatch.chdir(tmp_path)
    if text is not None:
        (tmp_path / "by.json").write_text(text)
    code = main(["run", "--matrix", "m.toml", "--report-dir", "out", "--shard", "1/2", "--shard-by", "by.json"])
    one_line(capsys, code, f"by.json: {key}", words)
    assert not (tmp_path / "out").exists()


def test_shard_by_without_shard_is_one_line(tmp_path, monkeypatch, capsys):
    (tmp_path / "m.toml").write_text(HEAD + TOLERANCES)
    monkeypatch.chdir(tmp_path)
    code = main(["run", "--matrix", "m.toml", "--report-dir", "out", "--shard-by", "by.json"])
    one_line(capsys, code, "command line: --shard-by: ", "balances the shares of --shard I/N: give --shard too")


def test_bench_shares_reads_each_share_of_a_plan_with_another_runs_seconds(capsys: pytest.CaptureFixture[str]):
    """``python -m bench shares``: planned and read with the same run, the balanced shares come out even and the
    dealt ones do not."""
    from bench.shares import main as bench_shares

    assert bench_shares([str(COMMITTED), "--shares", "4"]) == 0
    rows = {line.split("|")[2].strip(): line.split("|")[5].strip() for line in capsys.readouterr().out.splitlines()[3:]}
    assert rows["balanced"] == "0.0%" and rows["in turn"] != "0.0%"
