"""Results files (validation, atomic writes) and the chart drawn from them."""

import json
import re
from pathlib import Path

import pytest

from harness.errors import InputError
from harness.records.files import read_results
from harness.records.results import SCHEMA, write_results
from harness.report import chart
from harness.report.chart import escape
from tests.conftest import harness_main, make_record, typed

pytestmark = pytest.mark.usefixtures("checkout_goals")  # goals of their own, not matrix.toml's


def render(data: dict) -> str:
    return chart.render(typed(data))


ENV = {"device": "NVIDIA H200", "torch": "2.11.0", "triton": "3.6.0", "cuda": "13.0", "complete": True}


def results(*records: dict, **env: object) -> dict:
    environment = {**ENV, "expected_cells": [r["id"] for r in records], **env}
    return {"schema": SCHEMA, "environment": environment, "cells": list(records)}


def unwrap(text: str) -> str:
    """The chart with its wrapped lines joined back (a line indented, not a list item, continues the one above),
    as markdown reads it."""
    return re.sub(r"\n(?! *[-*+] ) +", " ", text)


def section(chart: str, title: str) -> str:
    """The text under ``## title``, up to the next ``## `` heading, its wrapped lines joined."""
    return unwrap(chart.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0])


def rows(text: str) -> list[list[str]]:
    """Every markdown table row in ``text``, cells stripped (separator rows left out)."""
    lines = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("|--")]
    return [[cell.strip() for cell in line.strip().strip("|").split(" | ")] for line in lines]


def tables(chart: str, title: str) -> dict[str, dict[str, list[str]]]:
    """The style tables under ``## title``, keyed by their path group's caption ("" for a lone table):
    style -> its cells (the wrapper column dropped; the header row under "style \\ path")."""
    found: dict[str, dict[str, list[str]]] = {}
    caption = ""
    for block in (block.strip() for block in section(chart, title).split("\n\n")):
        if block.startswith("**") and block.endswith("**"):
            caption = block.strip("*")
        elif block.startswith("| "):
            found[caption] = {row[1]: row[2:] for row in rows(block)}
    return found


def table(chart: str, title: str) -> dict[str, list[str]]:
    """All of a section's style tables side by side: style -> its cells across the path groups, in order."""
    joined: dict[str, list[str]] = {}
    for grid in tables(chart, title).values():
        for style, cells in grid.items():
            joined.setdefault(style, []).extend(cells)
    return joined


def differ(chart: str) -> dict[str, str]:
    """The cells where the cases differ: "style path" -> the cases not passing, by mark and note."""
    return {f"{row[1]} {row[2]}": row[3] for row in rows(section(chart, "Where the cases differ"))[1:]}


def test_write_then_read_round_trip(tmp_path: Path):
    cells = [
        make_record("add", "raw_jit", "eager", status="pass", outcomes=["pass", "pass"]),
        {**make_record("add", "raw_jit", "compile", status="wrong", stage="compare", error="e"), "future_key": 1},
    ]
    write_results(tmp_path / "r.json", typed({"environment": ENV, "cells": cells}))
    assert json.loads((tmp_path / "r.json").read_text())["cells"] == cells  # the same keys, an unknown one kept
    assert read_results(tmp_path / "r.json").cells == typed({"cells": cells}).cells
    assert not (tmp_path / "r.json.tmp").exists()


@pytest.mark.parametrize(
    ("content", "key"),
    [
        ('{"schema": 1, "environment": {}, "cells": [', "(json)"),
        ("[]", "(top)"),
        ('{"schema": 99, "environment": {}, "cells": []}', "schema"),
        ('{"schema": 1, "cells": []}', "environment"),
        ('{"schema": 1, "environment": {}, "cells": {}}', "cells"),
        ('{"schema": 1, "environment": {}, "cells": [{"id": "a-b-c", "case": "a", "style": "b"}]}', "cells[0].path"),
        (
            '{"schema": 1, "environment": {}, "cells": [{"id": "a-b-c", "case": "a", "style": "b", "path": "c",'
            ' "status": "great"}]}',
            "cells[0].status",
        ),
    ],
)
def test_unusable_results_file_names_the_key(tmp_path: Path, content: str, key: str):
    file = tmp_path / "r.json"
    file.write_text(content)
    with pytest.raises(InputError) as raised:
        read_results(file)
    assert str(raised.value).startswith(f"{file}: {key}: ")


def test_duplicate_cell_is_rejected(tmp_path: Path):
    cell = make_record("add", "raw_jit", "eager", status="pass")
    file = tmp_path / "r.json"
    file.write_text(json.dumps(results(cell, cell)))
    with pytest.raises(InputError, match=r"cells\[1\]\.id: duplicate cell"):
        read_results(file)


def test_chart_tables_symbols_and_notes():
    chart = render(
        results(
            make_record("add", "raw_jit", "eager", status="pass"),
            make_record(
                "add",
                "raw_jit",
                "export_nonstrict",
                status="error",
                error_type="RuntimeError",
                error="Cannot access data pointer\nsecond line",
                stage="trace",
            ),
            make_record("add", "control", "eager", status="pass"),
            make_record("add", "control", "export_nonstrict", status="pass"),
            make_record(
                "sin", "raw_jit", "eager", status="wrong", error_type="Mismatch", error="output: 3 / 9", stage="compare"
            ),
            make_record("sin", "raw_jit", "export_nonstrict", status="skip", reason="no CUDA device"),
            make_record("sin", "control", "eager", status="pass"),
            make_record("sin", "control", "export_nonstrict", status="skip", reason="no CUDA device"),
        )
    )
    assert "NVIDIA H200" in chart and "torch 2.11.0" in chart and "Incomplete" not in chart
    # eager and export_nonstrict are in two path groups: one table each, captioned
    assert tables(chart, "Summary") == {
        "compile": {"style \\ path": ["eager"], "raw_jit": ["1/2 ❗"], "control": ["✅"]},
        "export and deploy": {"style \\ path": ["export_nonstrict"], "raw_jit": ["0/1"], "control": ["1/1"]},
    }  # the cases alike: their mark; else a count, where skips are not counted as run
    # notes are numbered in order of first use: the goals section (sin's wrong eager cell) comes first
    assert differ(chart) == {
        "raw_jit eager": "❗WRONG [1]: sin",
        "raw_jit export_nonstrict": "❌ [2]: add; ➖ [3]: sin",
        "control export_nonstrict": "➖ [3]: sin",
    }
    assert "2. error at trace: RuntimeError: Cannot access data pointer" in chart
    assert "second line" not in chart
    assert "1. wrong at compare: Mismatch: output: 3 / 9" in chart and "3. skip: no CUDA device" in chart


def test_control_failure_marks_the_path_broken():
    chart = render(
        results(
            make_record("add", "raw_jit", "aoti_strict", status="crash", error_type="SIGSEGV", error="died"),
            make_record("add", "control", "aoti_strict", status="crash", error_type="SIGSEGV", error="died"),
        )
    )
    assert table(chart, "Summary") == {"style \\ path": ["aoti_strict"], "raw_jit": ["💥 [1]†"], "control": ["💥 [1]"]}
    assert "- † **broken path**" in section(chart, "Legend")


def test_incomplete_run_lists_missing_cells():
    data = results(make_record("add", "raw_jit", "eager", status="pass"), complete=False)
    data["environment"]["expected_cells"].append("add-raw_jit-compile")
    chart = render(data)
    assert "**Incomplete run**: 1 of 2 cells recorded. Missing: add-raw_jit-compile" in chart
    assert table(chart, "Summary")["raw_jit"] == ["✅", "·"]


@pytest.mark.parametrize("nasty", ["a | b", "`code`", "line1\nline2", "<script>x</script>", "*bold*", "x" * 5000])
def test_error_text_never_breaks_the_table(nasty: str):
    chart = render(results(make_record("add", "raw_jit", "eager", status="error", error_type="E", error=nasty)))
    note = next(line for line in unwrap(chart).splitlines() if line.startswith("1. "))
    assert re.search(r"(?<!\\)<(?!/?(details|summary)>)", chart) is None  # every other < escaped: no HTML
    assert "&lt;" not in chart and "`" not in note
    assert len(note) <= 1020
    assert note.count("|") == note.count("\\|")
    table_rows = [line for line in chart.splitlines() if line.startswith("| launcher ")]
    assert table_rows and all(row.count("|") == 4 for row in table_rows)


def test_escape_shortens_and_flattens():
    assert escape("a\n b |c", 100) == "a b \\|c"
    assert escape("x" * 50, 10) == "x" * 9 + "…"
    assert escape("one two three four five six", 16) == "one two three…"  # never mid-word


def test_report_command_redraws_and_rejects_corrupt_input(tmp_path: Path):
    file = tmp_path / "results.json"
    file.write_text(json.dumps(results(make_record("add", "raw_jit", "eager", status="pass"))))
    done = harness_main("report", "--results", str(file))
    assert done.returncode == 0, done.stderr
    assert "| raw_jit" in (tmp_path / "matrix.md").read_text()
    file.write_text(file.read_text()[:40])
    done = harness_main("report", "--results", str(file))
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: {file}: (json): not valid JSON") and "Traceback" not in done.stderr


def test_cells_contradicting_the_docs_are_listed_and_marked():
    docs = {"source": "the recipe", "expect": {"raw_jit": {"eager": True, "export_nonstrict": False}}}
    chart = render(
        results(
            make_record("add", "raw_jit", "eager", status="error", error_type="E", error="boom", stage="run"),
            make_record("add", "raw_jit", "export_nonstrict", status="pass"),
            make_record("add", "raw_jit", "compile", status="error", error_type="E", error="no claim", stage="run"),
            make_record("sin", "raw_jit", "eager", status="pass"),
            make_record("sin", "raw_jit", "export_nonstrict", status="skip", reason="no CUDA device"),
            docs=docs,
        )
    )
    # the old shape (one unnamed source, expect: style -> path -> bool) is read as one source named "docs"
    top = section(chart, "Contradicts the docs")
    assert "- **docs**: the recipe" in top
    assert rows(top) == [
        ["claim", "documented", "source", "measured"],
        ["launcher (jit) on `eager`", "supported", "docs", "`raw_jit`: add ❌ error"],
        ["launcher (jit) on `export_nonstrict`", "not supported", "docs", "`raw_jit`: add ✅ pass"],
    ]
    # a cell where some case contradicts the docs says so; which cases is said in the claim's row above
    assert table(chart, "Summary")["raw_jit"] == ["1/2 ≠docs", "❌ [3]", "1/1 ≠docs"]
    assert differ(chart) == {"raw_jit eager": "❌ [1]: add", "raw_jit export_nonstrict": "➖ [2]: sin"}
