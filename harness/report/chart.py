"""The support chart: results.json drawn as markdown, one function per section (``SECTIONS``, top to bottom): the
stamp and the grid of every style × path as a picture; the answer (per goal the styles that meet it, fastest first;
per case the fastest style compiled: harness/report/answer.py); this run's findings (harness/report/findings.py);
speed (harness/report/speed.py); then the details: each goal's near misses, the goal sets, the summary tables and
the cells where the cases differ (harness/report/tables.py), the claims of the docs the cells contradict, the
legend, the notes; long sections collapsed (``<details>``). The pictures (harness/report/pictures.py) are drawn
from the same records and written beside the chart. The keys this reads are in harness/report/meta.py (axes,
goals, docs) and harness/report/marks.py (a record's mark and note)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from harness.records.environment import interpreted
from harness.records.record import Record
from harness.records.results import Results
from harness.report import answer, findings, pictures, speed, tables, which
from harness.report import goals as chart_goals
from harness.report.blocks import contradiction_section, contradictions, details, legend, shipped, stamp
from harness.report.broken import interpreter_banner, run_broke
from harness.report.casebugs import BrokenCase, FailingKernel, broken_cases, failing_kernels
from harness.report.marks import (
    SYMBOLS,
    escape,
    note_text,
    reused_legend,
    wrap,
)
from harness.report.meta import Docs, by_group, by_wrapper, goal_sets, goals, in_place, path_info, read_docs, style_info
from harness.report.mismatch import WrongKernel, wrong_kernels
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
    undrawn: str | None = None  # why the pictures are not drawn beside the chart (None: they are, and linked)

    @cached_property
    def points(self) -> dict[str, list[speed.Point]]:
        """Regime -> every timed passing cell of the chart's cases and styles."""
        return {regime: speed.points(self.cells.values(), regime) for regime in speed.REGIMES}

    @cached_property
    def compiled_path(self) -> str | None:
        return answer.compiled_path(self.points[speed.BANDWIDTH]) or answer.compiled_path(self.points[speed.LAUNCH])

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

    @cached_property
    def wrong_kernels(self) -> list[WrongKernel]:
        """The cases whose kernel disagrees with its reference in every style on eager (harness/report/mismatch.py):
        their wrong cells are that one bug, not the styles' misses."""
        return list(wrong_kernels(self.cells.values()).values())

    @cached_property
    def left_out(self) -> list[WrongKernel | BrokenCase | FailingKernel]:
        """The cases whose cells measure nothing of the styles: a kernel wrong in itself or failing as written, a case
        broken in its own code (harness/report/casebugs.py). The goals leave them out, naming them once."""
        wrong = {kernel.case for kernel in self.wrong_kernels}
        failing = [kernel for kernel in failing_kernels(self.cells.values()).values() if kernel.case not in wrong]
        named = wrong | {kernel.case for kernel in failing}
        broken = [bug for bug in broken_cases(self.cells.values()).values() if bug.case not in named]
        return [*self.wrong_kernels, *failing, *broken]

    @property
    def answered_cases(self) -> list[str]:
        """The cases the goals are answered over: all but those left out."""
        left = {one.case for one in self.left_out}
        return [case for case in self.cases if case not in left]

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


def render(results: Results, undrawn: str | None = None) -> str:
    """The chart's markdown, linking its pictures (``write_chart`` writes them beside it); ``undrawn``: why they are
    not drawn (then not linked)."""
    chart = chart_of(results)
    chart.undrawn = undrawn
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


def _status_picture(chart: Chart) -> list[str]:
    if chart.undrawn or not chart.cells:
        return [f"> Pictures not drawn: {chart.undrawn}.", ""] if chart.undrawn else []
    return [
        f"![Every style × path over the {len(chart.cases)} case(s), coloured by verdict]({pictures.FOLDER}/status.png)",
        "",
        *wrap(
            "Every style (rows, by wrapper) on every path (columns, by group), over all cases: green, every case "
            "passes; pale green, some; pink, none; **crimson, some case gives wrong numbers**; **orange, the kernel "
            "ran outside the compiled graph**; violet, a subsystem ignored the kernel; the text, cases passing of "
            "those run. The marks and notes are in the [Summary](#summary).",
            "",
        ),
        "",
    ]


def _answer(chart: Chart) -> list[str]:
    picture = None if chart.undrawn else pictures.compiled_picture(chart.compiled_path)
    return answer.section(chart, chart.points[speed.LAUNCH], chart.points[speed.BANDWIDTH], picture)


def _findings(chart: Chart) -> list[str]:
    cells = list(chart.cells.values())
    launch, bandwidth = chart.points[speed.LAUNCH], chart.points[speed.BANDWIDTH]
    return findings.section(cells, launch, bandwidth, len(chart.contradicting), chart.left_out)


def _goals(chart: Chart) -> list[str]:
    given = "goals" not in (chart.env.get("derived") or [])  # what an older file lacked, filled in when read
    lines = chart_goals.section(
        goals(chart.env),
        given,
        chart.cells,
        chart.answered_cases,
        chart.style_groups,
        chart.note,
        chart.unrecorded_paths,
        chart.left_out,
    )
    return [f"{lines[0]}, in detail", "", *details("each goal's styles, near misses and their notes", lines[2:])]


def _goal_sets(chart: Chart) -> list[str]:
    env, cells = chart.env, chart.cells
    sets, given = goal_sets(env), isinstance(env.get("goal_sets"), dict)
    on = goals(env)
    sets = {name: members for name, members in sets.items() if not answers_from_part(chart, members, on)}
    cases, places = chart.answered_cases, in_place(env, cells.values())
    return which.section(sets, goals(env), cells, cases, chart.candidates, places, given, chart.left_out)


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


NOTE_WIDTH = 390  # a note is one paragraph: wrapped only where it would pass the chart's widest line


def _notes(chart: Chart) -> list[str]:
    if not chart.note.numbers:
        return []
    lines = [line for text, n in chart.note.numbers.items() for line in wrap(f"{n}. {escape(text)}", "   ", NOTE_WIDTH)]
    return ["## Notes", "", *details(f"{len(chart.note.numbers)} notes: each failure's first sentence", lines)]


# The chart, top to bottom: each section a function of the chart's view.
def _speed(chart: Chart) -> list[str]:
    drawn = {} if chart.undrawn else pictures.speed_pictures(chart.points)
    return speed.section([cell for cell in chart.results.cells if cell.case in chart.cases], chart.env, drawn)


def _suspects(chart: Chart) -> list[str]:
    return confirmed_section(chart.results.cells)


SECTIONS: tuple[Callable[[Chart], list[str]], ...] = (
    _head,
    _status_picture,
    _suspects,
    _answer,
    _findings,
    _speed,
    _goals,
    _goal_sets,
    tables.summary_section,
    tables.differ_section,
    _contradictions,
    _legend_section,
    _shipped_section,
    _notes,
)


def write_chart(results: Results, chart_file: Path | str, pictures_too: bool = True) -> list[Path]:
    """Draw ``chart_file`` from ``results`` and, unless ``pictures_too`` is false (a run draws them before its
    wall ends: ``write_pictures``), its pictures beside it (``pictures/``); without matplotlib, the chart alone,
    saying so. The pictures written."""
    file = Path(chart_file)
    if not has_matplotlib():
        file.write_text(render(results, undrawn="matplotlib is not installed"))
        return []
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(render(results))  # first: a chart that cannot be written leaves no pictures behind
    return write_pictures(results, file.parent) if pictures_too else []


def write_pictures(results: Results, folder: Path) -> list[Path]:
    """The chart's pictures, drawn from ``results`` under ``folder`` (``pictures/``); none without matplotlib."""
    if not has_matplotlib():
        return []
    chart = chart_of(results)
    return pictures.write(pictures.figures(chart, chart.points, chart.compiled_path), folder)


def has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True
