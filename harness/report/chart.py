"""The support chart: results.json drawn as markdown, one function per section (``SECTIONS``, top to bottom):
which style for which goal and for each goal set, the legend and the paths' definitions, the claims of the docs
the cells contradict, the summary, one table per case, the notes; long sections collapsed (``<details>``).

Styles are grouped by wrapper (rows) and paths by group (one table per group); the keys this reads are in
harness/report/meta.py (axes, goals, docs) and harness/report/marks.py (a record's mark and note)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tabulate import tabulate

from harness.records.environment import interpreted
from harness.records.record import Record
from harness.records.results import Results, read_results
from harness.report import goals as chart_goals
from harness.report import which
from harness.report.blocks import contradiction_section, contradictions, details, legend, shipped, stamp
from harness.report.broken import interpreter_banner, run_broke
from harness.report.marks import (
    BROKEN_PATH,
    CONTRADICTS,
    FLAKY,
    GRAPH_BREAK,
    MISSING,
    REUSED,
    SUBSYSTEM,
    SYMBOLS,
    escape,
    is_subsystem,
    mark,
    note_text,
    reused_legend,
    wrap,
    wrong_numbers,
)
from harness.report.meta import Docs, by_group, by_wrapper, goal_sets, goals, in_place, path_info, read_docs, style_info
from harness.report.suspects import confirmed_section
from harness.spec import FAILURES, CellId, Status

__all__ = ["SYMBOLS", "contradictions", "escape", "render", "write_chart"]


def _axes(cells: Iterable[Record], expected: list[str]) -> tuple[list[str], list[str], list[str]]:
    """Cases, styles and paths in matrix order (the expected cell ids first, then any extra cells)."""
    cases: list[str] = []
    styles: list[str] = []
    paths: list[str] = []
    for case, style, path in [*map(CellId.parse, expected), *(c.cell_id for c in cells)]:
        for axis, value in ((cases, case), (styles, style), (paths, path)):
            if value not in axis:
                axis.append(value)
    return cases, styles, paths


class Notes:
    """Footnotes, numbered in order of first use; records with the same text share one."""

    def __init__(self) -> None:
        self.numbers: dict[str, int] = {}

    def __call__(self, record: Record) -> int:
        return self.numbers.setdefault(note_text(record), len(self.numbers) + 1)


@dataclass
class Chart:
    """What every section of a chart reads: the records by id and the axes in chart order."""

    results: Results
    cells: dict[str, Record]
    expected: list[str]
    cases: list[str]
    paths: list[str]
    info: dict[str, dict[str, Any]]
    style_groups: list[tuple[str, list[str]]]
    paths_meta: dict[str, dict[str, str]]
    path_groups: list[tuple[str, list[str]]]
    docs: Docs
    contradicting: dict[str, tuple[bool, str]]
    note: Notes = field(default_factory=Notes)

    @property
    def env(self) -> dict[str, Any]:
        return self.results.environment

    @property
    def candidates(self) -> list[str]:
        """The styles that may answer a goal: all but the control."""
        return [s for wrapper, styles in self.style_groups if wrapper != "control" for s in styles]


def chart_of(results: Results, cases: list[str] | None = None, styles: list[str] | None = None) -> Chart:
    """The chart's view of ``results``, narrowed to ``cases`` and ``styles`` when given."""
    env = results.environment
    cells = results.by_id()
    expected = env.get("expected_cells") or list(cells)
    all_cases, all_styles, paths = _axes(cells.values(), expected)
    cases = [c for c in all_cases if not cases or c in cases]
    chosen = [s for s in all_styles if not styles or s in styles]
    cells = {k: r for k, r in cells.items() if r.case in cases and r.style in chosen}
    info = style_info(env, chosen)
    paths_meta = path_info(env, paths)
    docs = read_docs(env.get("docs"))
    # the docs' claims are about GPU runs: an interpreter run is not compared with them
    contradicting = {} if interpreted(env) else contradictions(list(cells.values()), docs)
    return Chart(
        results, cells, expected, cases, paths, info, by_wrapper(chosen, info), paths_meta,
        by_group(paths, paths_meta), docs, contradicting,
    )  # fmt: skip


def render(results: Results) -> str:
    chart = chart_of(results)
    return "\n".join(line for section in SECTIONS for line in section(chart))


def _head(chart: Chart) -> list[str]:
    env = chart.env
    out = ["# Triton kernel wrapping styles × PyTorch paths: support chart", "", *wrap(stamp(env), "> "), ""]
    if interpreted(env):
        out += interpreter_banner(chart.results)
    broke = run_broke(chart.results)
    if broke:
        out += [f"> ❌ **THE RUN BROKE**: {escape(broke)}. These cells measured nothing of the styles.", ""]
    missing = [cell_id for cell_id in chart.expected if cell_id not in chart.cells]
    if missing or not env.get("complete", False):
        shown = f" Missing: {', '.join(missing[:50])}{' …' if len(missing) > 50 else ''}" if missing else ""
        out += [*wrap(f"**Incomplete run**: {len(chart.cells)} of {len(chart.expected)} cells recorded.{shown}"), ""]
    return out


def _goals(chart: Chart) -> list[str]:
    given = "goals" not in (chart.env.get("derived") or [])  # what an older file lacked, filled in when read
    return chart_goals.section(goals(chart.env), given, chart.cells, chart.cases, chart.style_groups, chart.note)


def _goal_sets(chart: Chart) -> list[str]:
    env, cells = chart.env, chart.cells
    sets, given = goal_sets(env), isinstance(env.get("goal_sets"), dict)
    return which.section(sets, goals(env), cells, chart.cases, chart.candidates, in_place(env, cells.values()), given)


def _legend_section(chart: Chart) -> list[str]:
    given = "paths" not in (chart.env.get("derived") or [])
    reused = reused_legend(chart.results.cells)
    lines = legend(chart.style_groups, chart.info, chart.path_groups, chart.paths_meta, given, reused)
    return [lines[0], "", *details("every mark, the styles by wrapper, the paths by group", lines[2:])]


def _shipped_section(chart: Chart) -> list[str]:
    return shipped(chart.results.cells)


def _contradictions(chart: Chart) -> list[str]:
    return (
        contradiction_section(chart.contradicting, chart.docs, chart.cells, chart.info) if chart.contradicting else []
    )


def _summary_section(chart: Chart) -> list[str]:
    out = [
        "## Summary",
        "",
        *wrap(
            f"Cases passing (every attempt) out of cases run, per style and path. {SYMBOLS['wrong'][0]}: some case "
            f"gives wrong numbers; {SUBSYSTEM}: a subsystem ignored the kernel; {GRAPH_BREAK}: the kernel ran outside "
            f"the compiled graph; {FLAKY}: some case is flaky. Each case's own cells are under its heading below.",
            "",
        ),
        "",
    ]
    for group, group_paths in chart.path_groups:
        out += [
            *_caption(group, chart.path_groups),
            _summary(chart.cells, chart.cases, chart.style_groups, group_paths),
            "",
        ]
    return out


def _per_case(chart: Chart) -> list[str]:
    out = []
    for case in chart.cases:
        broken = {p for p in chart.paths if _at(chart.cells, case, "control", p) in FAILURES}
        tables = []
        for group, group_paths in chart.path_groups:
            rows = [
                [style, *(_cell(chart, case, style, p, broken) for p in group_paths)]
                for style in _rows(chart.style_groups)
            ]
            tables += [*_caption(group, chart.path_groups), _table(rows, chart.style_groups, group_paths), ""]
        records = [r for r in chart.cells.values() if r.case == case and r.ran]
        passed = sum(r.reliable_pass for r in records)
        out += [
            f"## {case}",
            "",
            *details(f"{case}: {passed} of {len(records)} cells run pass on every attempt", tables),
        ]
    return out


def _cell(chart: Chart, case: str, style: str, path: str, broken: set[str]) -> str:
    """One cell's text in its case's table: mark, note number and flags."""
    record = chart.cells.get(str(CellId(case, style, path)))
    text = mark(record)
    if record is None:
        return text
    if not record.reliable_pass:
        text += f" [{chart.note(record)}]"
    if path in broken and record.failed and style != "control":
        text += BROKEN_PATH
    if record.id in chart.contradicting:
        text += f" {CONTRADICTS}"
    if record.reused_from:
        text += f" {REUSED}"
    return text


def _notes(chart: Chart) -> list[str]:
    if not chart.note.numbers:
        return []
    lines = [line for text, n in chart.note.numbers.items() for line in wrap(f"{n}. {escape(text)}", "   ")]
    return ["## Notes", "", *details(f"{len(chart.note.numbers)} notes: each failure's first sentence", lines)]


# The chart, top to bottom: each section a function of the chart's view.
def _suspects(chart: Chart) -> list[str]:
    return confirmed_section(chart.results.cells)


SECTIONS: tuple[Callable[[Chart], list[str]], ...] = (
    _head,
    _suspects,
    _goals,
    _goal_sets,
    _legend_section,
    _shipped_section,
    _contradictions,
    _summary_section,
    _per_case,
    _notes,
)


def _rows(style_groups: list[tuple[str, list[str]]]) -> list[str]:
    return [style for _, styles in style_groups for style in styles]


def _table(rows: list[list[str]], style_groups: list[tuple[str, list[str]]], paths: list[str]) -> str:
    """Rows grouped by wrapper: the wrapper's name in the first column of its first row."""
    first = {styles[0]: wrapper for wrapper, styles in style_groups}
    table = [[first.get(row[0], ""), *row] for row in rows]
    return tabulate(table, headers=["wrapper", "style \\ path", *paths], tablefmt="github")


def _caption(group: str, path_groups: list[tuple[str, list[str]]]) -> list[str]:
    return [f"**{group}**", ""] if len(path_groups) > 1 else []


def _summary(
    cells: dict[str, Record], cases: list[str], style_groups: list[tuple[str, list[str]]], paths: list[str]
) -> str:
    rows = []
    for style in _rows(style_groups):
        row = [style]
        for path in paths:
            records = [cells[k] for case in cases if (k := str(CellId(case, style, path))) in cells]
            ran = [r for r in records if r.ran]
            if not ran:
                row.append(SYMBOLS["skip"] if records else MISSING)
                continue
            passed = sum(r.reliable_pass for r in ran)
            flags = [
                (SYMBOLS["wrong"][0], any(wrong_numbers(r) for r in ran)),
                (SUBSYSTEM, any(is_subsystem(r) for r in ran)),
                (GRAPH_BREAK, any(Status.GRAPH_BREAK in r.attempts for r in ran)),
                (FLAKY, any(r.flaky for r in ran)),
            ]
            row.append(f"{passed}/{len(ran)}" + "".join(f" {flag}" for flag, on in flags if on))
        rows.append(row)
    return _table(rows, style_groups, paths)


def _at(cells: dict[str, Record], case: str, style: str, path: str) -> Status | None:
    record = cells.get(str(CellId(case, style, path)))
    return record.status if record is not None else None


def write_chart(results_file: Path | str, chart_file: Path | str) -> None:
    """Draw ``chart_file`` from ``results_file`` (raises ``InputError`` for an unusable results file)."""
    Path(chart_file).write_text(render(read_results(results_file)))
