"""The chart's grid, each cell said once: the summary (one cell per style and path over every case: its mark and
note when the cases end alike, else how many pass) and, for the cells where the cases differ, which case ends
how. Styles are rows grouped by wrapper, paths columns grouped by path group."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tabulate import tabulate

from harness.records.record import Record
from harness.report.blocks import details
from harness.report.casebugs import is_case_bug
from harness.report.marks import (
    BROKEN_PATH,
    CONTRADICTS,
    FLAKY,
    GRAPH_BREAK,
    MISSING,
    REUSED,
    SUBSYSTEM,
    SYMBOLS,
    is_subsystem,
    mark,
    wrap,
    wrong_numbers,
)
from harness.spec import FAILURES, CellId, Status

if TYPE_CHECKING:
    from harness.report.chart import Chart

DIFFER = "Where the cases differ"


@dataclass
class Cell:
    """One style and path over the chart's cases: its summary text and, where the cases end differently, the
    cases that do not pass, grouped by their own cell's text (mark, note, broken path)."""

    text: str
    others: list[tuple[str, str]]  # (text, the cases named), for the cells whose cases differ


def summary_section(chart: Chart) -> list[str]:
    """The summary tables, one per path group, after a line per case of its passing cells."""
    grid = {(s, p): _cell(chart, s, p) for s in _rows(chart.style_groups) for p in chart.paths}
    differ = any(cell.others for cell in grid.values())
    named = f", and [{DIFFER}](#where-the-cases-differ) names the others" if differ else ""
    cases = " · ".join(f"{case} {_passed(chart, case)}" for case in chart.cases)
    out = [
        "## Summary",
        "",
        *wrap(
            f"One cell per style and path over the {len(chart.cases)} case(s). When every case ends alike, the cell "
            "is their mark and note; else it counts the cases passing on every attempt out of those run "
            f"({SYMBOLS['wrong'][0]}: some case gives wrong numbers, {SUBSYSTEM}: a subsystem ignored the kernel, "
            f"{GRAPH_BREAK}: the kernel ran outside the compiled graph, {FLAKY}: some case is flaky){named}."
            + _flags(chart),
            "",
        ),
        "",
        *wrap(f"Cells passing on every attempt, per case: {cases}.", ""),
        "",
    ]
    for group, group_paths in chart.path_groups:
        table = [[s, *(grid[s, p].text for p in group_paths)] for s in _rows(chart.style_groups)]
        out += [*_caption(group, chart.path_groups), _style_table(table, chart.style_groups, group_paths), ""]
    return out


def _flags(chart: Chart) -> str:
    """What ≠docs and ♻ mean in a summary cell, for the charts that have them."""
    flags = [
        f"{flag}: {meaning}"
        for flag, meaning, shown in (
            (CONTRADICTS, "some case contradicts the docs", bool(chart.contradicting)),
            (REUSED, "some case's record was reused", any(record.reused_from for record in chart.cells.values())),
        )
        if shown
    ]
    return f" {'; '.join(flags)}." if flags else ""


def differ_section(chart: Chart) -> list[str]:
    """One row per style and path whose cases end differently: the cases that do not pass, by mark and note."""
    wrapper_of = {style: wrapper for wrapper, styles in chart.style_groups for style in styles}
    table: list[list[str]] = []
    for style in _rows(chart.style_groups):
        for path in chart.paths:
            others = _cell(chart, style, path).others
            if others:
                shown = wrapper_of[style] if not table or wrapper_of[table[-1][1]] != wrapper_of[style] else ""
                listed = "; ".join(f"{text}: {cases}" for text, cases in others)
                table.append([shown, style, path, listed])
    if not table:
        return []
    text = tabulate(table, headers=["wrapper", "style", "path", "cases not passing"], tablefmt="github")
    return [f"## {DIFFER}", "", *details(f"{len(table)} cells: the cases that do not pass, by mark and note", [text])]


def _named(others: dict[str, list[str]], none_pass: bool) -> list[tuple[str, str]]:
    """Each text with its cases named; when no case passes and most end alike, those last, as ``the other N``."""
    texts = list(others)
    largest = max(texts, key=lambda text: len(others[text]))
    if not none_pass or len(texts) == 1 or 2 * len(others[largest]) <= sum(map(len, others.values())):
        return [(text, ", ".join(others[text])) for text in texts]
    texts.remove(largest)
    return [*((text, ", ".join(others[text])) for text in texts), (largest, f"the other {len(others[largest])}")]


def _cell(chart: Chart, style: str, path: str) -> Cell:
    """The summary's cell of ``style`` on ``path``; the cases of the chart that have no such cell in the matrix
    (neither recorded nor expected) are left out."""
    expected = chart.expected_ids
    records: dict[str, Record | None] = {}
    for case in chart.cases:
        cell_id = str(CellId(case, style, path))
        if cell_id in chart.cells or cell_id in expected:
            records[case] = chart.cells.get(cell_id)
    flags = "".join(
        f" {flag}"
        for flag, on in (
            (CONTRADICTS, any(str(CellId(c, style, path)) in chart.contradicting for c in records)),
            (REUSED, any(r is not None and r.reused_from for r in records.values())),
        )
        if on
    )
    texts = {case: _case_text(chart, record) for case, record in records.items()}
    failing = {case: text for case, text in texts.items() if not (records[case] and records[case].reliable_pass)}
    if not records:
        return Cell(MISSING, [])
    if not failing:
        return Cell((texts.popitem()[1] if len(set(texts.values())) == 1 else SYMBOLS["pass"]) + flags, [])
    if len(set(texts.values())) == 1:
        return Cell(texts.popitem()[1] + flags, [])
    others: dict[str, list[str]] = {}
    for case, text in failing.items():
        others.setdefault(text, []).append(case)
    named = _named(others, len(failing) == len(records))
    return Cell(_count([r for r in records.values() if r is not None]) + flags, named)


def _count(records: list[Record]) -> str:
    """``8/9 ❗``: cases passing out of those run, with a flag per kind of trouble some case had."""
    ran = [r for r in records if r.ran]
    if not ran:
        return SYMBOLS["skip"] if records else MISSING
    flags = [
        (SYMBOLS["wrong"][0], any(wrong_numbers(r) for r in ran)),
        (SUBSYSTEM, any(is_subsystem(r) for r in ran)),
        (GRAPH_BREAK, any(Status.GRAPH_BREAK in r.attempts for r in ran)),
        (FLAKY, any(r.flaky for r in ran)),
    ]
    return f"{sum(r.reliable_pass for r in ran)}/{len(ran)}" + "".join(f" {flag}" for flag, on in flags if on)


def _case_text(chart: Chart, record: Record | None) -> str:
    """One case's cell: mark, note number, and † where the control fails on the case and path too (not in the case's
    own code: the path is broken)."""
    text = mark(record)
    if record is None or record.reliable_pass:
        return text
    text += f" [{chart.note(record)}]"
    control = chart.cells.get(str(CellId(record.case, "control", record.path)))
    broken = control is not None and control.status in FAILURES and not is_case_bug(control)
    if record.style != "control" and record.failed and broken and not is_case_bug(record):
        text += BROKEN_PATH
    return text


def _passed(chart: Chart, case: str) -> str:
    records = [r for r in chart.cells.values() if r.case == case and r.ran]
    return f"{sum(r.reliable_pass for r in records)} of {len(records)}"


def _rows(style_groups: list[tuple[str, list[str]]]) -> list[str]:
    return [style for _, styles in style_groups for style in styles]


def _style_table(grid: list[list[str]], style_groups: list[tuple[str, list[str]]], paths: list[str]) -> str:
    """Rows grouped by wrapper: the wrapper's name in the first column of its first row."""
    first = {styles[0]: wrapper for wrapper, styles in style_groups}
    table = [[first.get(row[0], ""), *row] for row in grid]
    return tabulate(table, headers=["wrapper", "style \\ path", *paths], tablefmt="github")


def _caption(group: str, path_groups: list[tuple[str, list[str]]]) -> list[str]:
    return [f"**{group}**", ""] if len(path_groups) > 1 else []
