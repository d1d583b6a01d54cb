"""--reuse: a cell whose key (versions, GPU, harness and case sources, matrix entry) is unchanged keeps its
record from the earlier run and is not run; a pull request that touches one case module re-runs that case's
cells only. A wrong, flaky, crashed or timed-out cell, or one without a key, is never reused."""

import re
from pathlib import Path

from tests.fast.test_records_report import table
from tests.fast.test_reuse import REUSED, by_id, kernels, run, source, write_the_matrix


def test_a_changed_case_module_reruns_its_cells_only(write_matrix, tmp_path: Path):
    package = kernels(tmp_path)
    matrix = write_the_matrix(write_matrix, package)
    first = run(matrix, tmp_path / "first", package, "-n", "2")
    cells = by_id(first)
    assert len(cells) == 6 and all(re.fullmatch(r"[0-9a-f]{16}", c["key"]) for c in cells.values())
    assert not any("reused_from" in c for c in cells.values())
    assert cells["wrong-triton_op-cpu_fallback"]["status"] == "wrong"

    (package / "k2.py").write_text((package / "k2.py").read_text() + "# a pull request touches this case\n")
    first_file = tmp_path / "first" / "results.json"
    second = run(matrix, tmp_path / "second", package, "-n", "2", "--reuse", str(first_file))
    again = by_id(second)
    reused = {cell for cell, record in again.items() if "reused_from" in record}
    # the wrong cell too: wrong on every attempt and reproduced by its script outside the harness
    assert reused == {"k1-triton_op-cpu_fallback", "k1-control-cpu_fallback", "wrong-control-cpu_fallback"} | {
        "wrong-triton_op-cpu_fallback"
    }
    assert cells["wrong-triton_op-cpu_fallback"]["confirmation"]["reproduced"] is True
    for cell in reused:  # copied as they were, marked with the run they come from
        assert again[cell] == {**cells[cell], "reused_from": source(first, first_file)}
    for cell in ("k2-triton_op-cpu_fallback", "k2-control-cpu_fallback"):  # its module changed: run again
        assert again[cell]["key"] != cells[cell]["key"] and again[cell]["status"] == "pass"
        assert again[cell]["measurements"]["started"] > cells[cell]["measurements"]["ended"]
    assert again["wrong-triton_op-cpu_fallback"]["outcomes"] == ["wrong", "wrong"]
    env = second["environment"]
    assert env["complete"] is True and env["reused_cells"] == 4 and len(env["expected_cells"]) == 6
    chart = (tmp_path / "second" / "matrix.md").read_text()
    # a summary cell some of whose cases were reused says so
    assert table(chart, "Summary") == {
        "style \\ path": ["cpu_fallback"],
        "triton_op": [f"2/3 ❗ {REUSED}"],
        "control": [f"✅ {REUSED}"],
    }
    assert f"copied from the run of {first['environment']['timestamp']}, commit {first['environment']['commit']}" in (
        chart
    )
    unchanged = "its key (torch, triton, CUDA, GPU, harness and case sources, matrix entry) is unchanged"
    assert unchanged in " ".join(chart.split())  # the legend's lines are wrapped

    # nothing changed: every cell is reused; a record reused again names the run that measured it
    second_file = tmp_path / "second" / "results.json"
    third = by_id(run(matrix, tmp_path / "third", package, "-n", "0", "--reuse", str(second_file)))
    assert all("reused_from" in record for record in third.values())
    assert third["k1-control-cpu_fallback"]["reused_from"] == source(first, first_file)
    assert third["k2-control-cpu_fallback"]["reused_from"] == source(second, second_file)

    # every selected cell reused: nothing runs, and the run is complete (exit 0)
    fourth = run(matrix, tmp_path / "fourth", package, "-n", "2", "--styles", "control", "--reuse", str(second_file))
    assert all("reused_from" in cell for cell in fourth["cells"]) and len(fourth["cells"]) == 3
    assert fourth["environment"]["complete"] is True and fourth["environment"]["device"] == "cpu"
