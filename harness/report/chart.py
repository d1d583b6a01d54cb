"""The support chart: results.json drawn as markdown. Top: which style for which goal, the legend and the paths'
definitions; then the cells that contradict the docs, the summary, one table per case, the notes.

Styles are grouped by wrapper (rows) and paths by group (one table per group); the keys this reads are in
harness/report/meta.py (axes, goals, docs) and harness/report/marks.py (a record's mark and note)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tabulate import tabulate

from harness.records.confirmation import is_suspect
from harness.records.record import Record
from harness.records.results import Results, read_results
from harness.report import goals as chart_goals
from harness.report.broken import INTERPRETER_BANNER, run_broke
from harness.report.marks import (
    BROKEN_PATH,
    CONTRADICTS,
    FLAKY,
    GRAPH_BREAK,
    LEGEND,
    MISSING,
    REUSED,
    SUBSYSTEM,
    SYMBOLS,
    escape,
    is_subsystem,
    mark,
    note_text,
    prose,
    reused_legend,
    wrong_numbers,
)
from harness.report.meta import WRAPPERS, Docs, by_group, by_wrapper, goals, path_info, read_docs, style_info
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


def render(results: Results) -> str:
    env = results.environment
    cells = results.by_id()
    expected = env.get("expected_cells") or list(cells)
    cases, styles, paths = _axes(cells.values(), expected)
    info = style_info(env, styles)
    style_groups = by_wrapper(styles, info)
    paths_meta = path_info(env, paths)
    derived = env.get("derived") or []  # what an older file lacked, filled in when read
    path_groups = by_group(paths, paths_meta)
    docs = read_docs(env.get("docs"))
    # the docs' claims are about GPU runs: an interpreter run is not compared with them
    contradicting = {} if env.get("triton_interpret") else contradictions(list(cells.values()), docs)
    note = Notes()

    out = ["# Triton kernel wrapping styles × PyTorch paths: support chart", "", _stamp(env), ""]
    if env.get("triton_interpret"):
        out += INTERPRETER_BANNER
    broke = run_broke(results)
    if broke:
        out += [f"> ❌ **THE RUN BROKE**: {escape(broke)}. These cells measured nothing of the styles.", ""]
    missing = [cell_id for cell_id in expected if cell_id not in cells]
    if missing or not env.get("complete", False):
        out += [
            f"**Incomplete run**: {len(cells)} of {len(expected)} cells recorded."
            + (f" Missing: {', '.join(missing[:50])}{' …' if len(missing) > 50 else ''}" if missing else ""),
            "",
        ]
    out += _suspects(results.cells)
    out += chart_goals.section(goals(env), "goals" not in derived, cells, cases, style_groups, note)
    out += _legend(style_groups, info, path_groups, paths_meta, "paths" not in derived, reused_legend(results.cells))
    out += _shipped(results.cells)
    if contradicting:
        out += _contradiction_section(contradicting, docs, cells)
    out += [
        "## Summary",
        "",
        f"Cases passing (every attempt) out of cases run, per style and path. {SYMBOLS['wrong'][0]}: some case "
        f"gives wrong numbers; {SUBSYSTEM}: a subsystem ignored the kernel; {GRAPH_BREAK}: the kernel ran outside "
        f"the compiled graph; {FLAKY}: some case is flaky.",
        "",
    ]
    for group, group_paths in path_groups:
        out += [*_caption(group, path_groups), _summary(cells, cases, style_groups, group_paths), ""]
    for case in cases:
        broken = {p for p in paths if _at(cells, case, "control", p) in FAILURES}
        out += [f"## {case}", ""]
        for group, group_paths in path_groups:
            rows = []
            for style in _rows(style_groups):
                row = [style]
                for path in group_paths:
                    record = cells.get(str(CellId(case, style, path)))
                    text = mark(record)
                    if record is not None and not record.reliable_pass:
                        text += f" [{note(record)}]"
                    if record is not None and path in broken and record.failed and style != "control":
                        text += BROKEN_PATH
                    if record is not None and record.id in contradicting:
                        text += f" {CONTRADICTS}"
                    if record is not None and record.reused_from:
                        text += f" {REUSED}"
                    row.append(text)
                rows.append(row)
            out += [*_caption(group, path_groups), _table(rows, style_groups, group_paths), ""]
    if note.numbers:
        out += ["## Notes", ""]
        out += [f"{number}. {escape(text)}" for text, number in note.numbers.items()]
        out.append("")
    return "\n".join(out)


def _rows(style_groups: list[tuple[str, list[str]]]) -> list[str]:
    return [style for _, styles in style_groups for style in styles]


def _table(rows: list[list[str]], style_groups: list[tuple[str, list[str]]], paths: list[str]) -> str:
    """Rows grouped by wrapper: the wrapper's name in the first column of its first row."""
    first = {styles[0]: wrapper for wrapper, styles in style_groups}
    table = [[first.get(row[0], ""), *row] for row in rows]
    return tabulate(table, headers=["wrapper", "style \\ path", *paths], tablefmt="github")


def _caption(group: str, path_groups: list[tuple[str, list[str]]]) -> list[str]:
    return [f"**{group}**", ""] if len(path_groups) > 1 else []


def _legend(
    style_groups: list[tuple[str, list[str]]],
    info: dict[str, dict[str, Any]],
    path_groups: list[tuple[str, list[str]]],
    paths_meta: dict[str, dict[str, str]],
    paths_given: bool,
    reused: str | None = None,
) -> list[str]:
    out = ["## Legend", ""]
    out += [f"- {symbol} **{name}**: {meaning}" for symbol, name, meaning in LEGEND]
    out += [f"- {reused}"] if reused else []
    out += ["", "Styles, by wrapper:", ""]
    for wrapper, styles in style_groups:
        names = ", ".join(
            f"`{s}`" + (f" ({prose(str(info[s]['decorator']), 120)})" if info[s]["decorator"] else "") for s in styles
        )
        out.append(f"- **{wrapper}**" + (f" ({WRAPPERS[wrapper]})" if wrapper in WRAPPERS else "") + f": {names}")
    source = "" if paths_given else " (from this harness's paths: this results file has no environment.paths)"
    out += ["", f"Paths, by group{source}:", ""]
    for group, paths in path_groups:
        out.append(f"- **{group}**")
        out += [f"  - `{p}`" + (f": {prose(paths_meta[p]['doc'], 300)}" if paths_meta[p]["doc"] else "") for p in paths]
    return [*out, ""]


def _suspects(cells: list[Record]) -> list[str]:
    """First of all: the failures whose repro script, run outside the harness, did not show them (the harness's
    own scaffolding may cause them: they count against no style), and how many failures were confirmed."""
    failed = [record for record in cells if record.confirmation]
    suspects = [record for record in failed if is_suspect(record)]
    if not failed:
        return []
    out = [f"**Confirmed outside the harness**: {len(failed) - len(suspects)} of {len(failed)} failed cells were "
           "reproduced by their repro script (repros/), run in a fresh Python with no harness code.", ""]
    if suspects:
        out += [f"## ⚠ Harness suspects ({len(suspects)}): failures their repro did not show", "",
                "| cell | recorded | repro script said |", "|---|---|---|"]
        out += [f"| {r.id} | {escape(r.summary[:160])} | `{r.confirmation.get('script')}`: "  # type: ignore[union-attr]
                f"{escape(str(r.confirmation.get('line', ''))[:160])} |" for r in suspects]  # type: ignore[union-attr]
        out.append("")
    return out


def _shipped(cells: list[Record]) -> list[str]:
    """How each case's op as shipped is wrapped (the ``as_shipped`` rows), from its records' ``wrapped_as``."""
    wrapped = {c.case: c.diagnostics["wrapped_as"] for c in cells if c.diagnostics.get("wrapped_as")}
    if not wrapped:
        return []
    return ["`as_shipped`, per case:", "", *(f"- `{case}`: {how}" for case, how in wrapped.items()), ""]


def contradictions(cells: list[Record], docs: Docs | dict[str, Any] | None) -> dict[str, tuple[bool, str]]:
    """Cells whose measurement contradicts the docs' claim, either way: cell id -> (claim, source). A claimed
    supported cell that failed (on any attempt), or a claimed unsupported one that passed every attempt. A
    skipped cell contradicts nothing."""
    docs = docs if isinstance(docs, Docs) else read_docs(docs)
    found = {}
    for cell in cells:
        claim = docs.claims.get((cell.style, cell.path))
        if claim is not None and ((claim[0] and cell.failed) or (not claim[0] and cell.reliable_pass)):
            found[cell.id] = claim
    return found


def _contradiction_section(found: dict[str, tuple[bool, str]], docs: Docs, cells: dict[str, Record]) -> list[str]:
    out = [f"## Contradicts the docs ({len(found)} cells)", ""]
    if docs.sources:
        out += ["Claims, as declared under `[docs]` in the matrix file, from:", ""]
        out += [f"- **{escape(name, 80)}**: {prose(text, 600)}" for name, text in docs.sources.items()]
        out.append("")
    rows = [
        [
            cell,
            "supported" if claim else "not supported",
            escape(source, 80) or "?",
            f"{mark(cells[cell])} {_status_word(cells[cell])}",
        ]
        for cell, (claim, source) in found.items()
    ]
    return [*out, tabulate(rows, headers=["cell", "documented", "source", "measured"], tablefmt="github"), ""]


def _status_word(record: Record) -> str:
    if is_subsystem(record):
        return "subsystem blind"
    return ("flaky " if record.flaky else "") + record.status


def _stamp(env: dict[str, Any]) -> str:
    machine = env.get("device") or "unknown"
    parts = [
        f"Measured on **{escape(machine, 80)}**" + (" (CPU run)" if machine == "cpu" else ""),
        f"torch {env.get('torch')}",
        f"triton {env.get('triton')}",
        f"CUDA {env.get('cuda')}",
        f"Python {env.get('python')}",
        f"host {escape(str(env.get('host')), 60)}",
        f"commit {env.get('commit')} (source digest {env.get('source_digest')})",
        f"{env.get('timestamp')}",
        f"{env.get('wall_seconds')} s wall with {env.get('workers')} worker(s)",
    ]
    if env.get("ld_preload"):
        parts.append(f"LD_PRELOAD={escape(env['ld_preload'], 120)}")
    if env.get("settings"):
        parts.append(escape(" ".join(f"{k}={v}" for k, v in env["settings"].items()), 200))
    if env.get("triton_interpret"):
        parts.append("**TRITON_INTERPRET=1 (Triton's CPU interpreter)**")
    return "> " + " · ".join(parts)


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
