"""The support chart: results.json drawn as markdown, one function per section (``SECTIONS``, top to bottom):
which style for which goal and for each goal set, the legend and the paths' definitions, the claims of the docs
the cells contradict, the summary and the cells where the cases differ (harness/report/tables.py), the notes;
long sections collapsed (``<details>``). The keys this reads are in harness/report/meta.py (axes, goals, docs)
and harness/report/marks.py (a record's mark and note)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from harness.records.environment import interpreted
from harness.records.record import Record
from harness.records.results import Results
from harness.report import goals as chart_goals
from harness.report import speed, tables, which
from harness.report.blocks import contradiction_section, contradictions, details, legend, shipped, stamp
from harness.report.broken import interpreter_banner, run_broke
from harness.report.marks import (
    SYMBOLS,
    escape,
    note_text,
    reused_legend,
    wrap,
)
from harness.report.meta import Docs, by_group, by_wrapper, goal_sets, goals, in_place, path_info, read_docs, style_info
from harness.report.suspects import confirmed_section
from harness.spec import CellId

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

    @cached_property
    def expected_ids(self) -> set[str]:
        return set(self.expected)

    @cached_property
    def unrecorded_paths(self) -> set[str]:
        """The paths of the selected cells (of these cases and styles) with no record: an incomplete run (a merge
        missing a share) answers no goal on them."""
        if self.env.get("missing_shares") and not self.env.get("axes"):  # an older merge: its cells are unknown
            return set(self.paths)
        styles = {s for _, group in self.style_groups for s in group}
        recorded = {record.id for record in self.results.cells}
        unrecorded = [CellId.parse(cell) for cell in self.expected if cell not in recorded]
        return {cell.path for cell in unrecorded if cell.case in self.cases and cell.style in styles}

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
    return chart_goals.section(
        goals(chart.env), given, chart.cells, chart.cases, chart.style_groups, chart.note, chart.unrecorded_paths
    )


def _goal_sets(chart: Chart) -> list[str]:
    env, cells = chart.env, chart.cells
    sets, given = goal_sets(env), isinstance(env.get("goal_sets"), dict)
    on = goals(env)
    sets = {name: members for name, members in sets.items() if not answers_from_part(chart, members, on)}
    return which.section(sets, goals(env), cells, chart.cases, chart.candidates, in_place(env, cells.values()), given)


def answers_from_part(chart: Chart, names: list[str], declared: dict[str, list[str]]) -> list[str]:
    """The goals of ``names`` a path of which has a selected cell with no record: not answered."""
    return [goal for goal in names if set(declared.get(goal, [])) & chart.unrecorded_paths]


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


def _notes(chart: Chart) -> list[str]:
    if not chart.note.numbers:
        return []
    lines = [line for text, n in chart.note.numbers.items() for line in wrap(f"{n}. {escape(text)}", "   ")]
    return ["## Notes", "", *details(f"{len(chart.note.numbers)} notes: each failure's first sentence", lines)]


# The chart, top to bottom: each section a function of the chart's view.
def _speed(chart: Chart) -> list[str]:
    return speed.section([cell for cell in chart.results.cells if cell.case in chart.cases], chart.env)


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
    tables.summary_section,
    tables.differ_section,
    _speed,
    _notes,
)


def write_chart(results: Results, chart_file: Path | str) -> None:
    """Draw ``chart_file`` from ``results``."""
    Path(chart_file).write_text(render(results))
