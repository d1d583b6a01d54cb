"""The support chart: results.json drawn as markdown (summary, one table per case, legend, footnotes)."""

from __future__ import annotations

import html
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tabulate import tabulate

from harness.records import read_results, summary
from harness.spec import FAILURES

SYMBOLS = {"pass": "✅", "wrong": "❗WRONG", "error": "❌", "crash": "💥", "timeout": "⏱️", "skip": "➖"}
LEGEND = {
    "pass": "ran, and every output (and gradient) matched the PyTorch reference",
    "wrong": "ran, but a number differs from the reference: silent wrong results",
    "error": "raised an exception (the note gives type, stage and first line)",
    "crash": "a process died (signal)",
    "timeout": "no result within the path's timeout",
    "skip": "cannot run on this machine (reason in the note); neither a pass nor a fail",
}
BROKEN_PATH = "†"
CONTRADICTS = "≠docs"
MAX_NOTE = 300


def escape(text: str, limit: int = MAX_NOTE) -> str:
    """One line of error text that cannot break a markdown table or inject HTML; shortened to ``limit``."""
    flat = " ".join(text.split())
    if len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    return html.escape(flat, quote=False).replace("|", "\\|").replace("`", "'").replace("*", "\\*")


def _axes(cells: Iterable[dict[str, Any]], expected: list[str]) -> tuple[list[str], list[str], list[str]]:
    """Cases, styles and paths in matrix order (the expected cell ids first, then any extra cells)."""
    cases: list[str] = []
    styles: list[str] = []
    paths: list[str] = []
    parts = [cell_id.split("-") for cell_id in expected] + [[c["case"], c["style"], c["path"]] for c in cells]
    for case, style, path in parts:
        for axis, value in ((cases, case), (styles, style), (paths, path)):
            if value not in axis:
                axis.append(value)
    return cases, styles, paths


def render(data: dict[str, Any]) -> str:
    env = data["environment"]
    cells = {c["id"]: c for c in data["cells"]}
    expected = env.get("expected_cells") or list(cells)
    cases, styles, paths = _axes(cells.values(), expected)
    notes: dict[str, int] = {}

    def note(record: dict[str, Any]) -> int:
        return notes.setdefault(summary(record), len(notes) + 1)

    out = ["# Triton kernel wrapping styles × PyTorch paths: support chart", "", _stamp(env), ""]
    missing = [cell_id for cell_id in expected if cell_id not in cells]
    if missing or not env.get("complete", False):
        out += [
            f"**Incomplete run**: {len(cells)} of {len(expected)} cells recorded."
            + (f" Missing: {', '.join(missing[:50])}{' …' if len(missing) > 50 else ''}" if missing else ""),
            "",
        ]
    contradicting = contradictions(list(cells.values()), env.get("docs"))
    if contradicting:
        out += _contradiction_section(contradicting, env["docs"], cells)
    out += [
        "## Summary",
        "",
        "Cases passing out of cases run, per style and path (❗: some case gives wrong numbers).",
        "",
        _summary(cells, cases, styles, paths),
        "",
    ]
    for case in cases:
        broken = {p for p in paths if cells.get(f"{case}-control-{p}", {}).get("status") in FAILURES}
        rows = []
        for style in styles:
            row = [style]
            for path in paths:
                record = cells.get(f"{case}-{style}-{path}")
                if record is None:
                    row.append("·")
                    continue
                mark = SYMBOLS[record["status"]]
                if record["status"] != "pass":
                    mark += f" [{note(record)}]"
                if path in broken and record["status"] in FAILURES and style != "control":
                    mark += BROKEN_PATH
                if record["id"] in contradicting:
                    mark += f" {CONTRADICTS}"
                row.append(mark)
            rows.append(row)
        out += [f"## {case}", "", tabulate(rows, headers=["style \\ path", *paths], tablefmt="github"), ""]
    out += ["## Legend", ""]
    out += [f"- {SYMBOLS[status]} **{status}**: {meaning}" for status, meaning in LEGEND.items()]
    out += [
        f"- {BROKEN_PATH}: the `control` style (pure PyTorch) fails on this path too: the path is broken on this "
        "machine, not the wrapping style",
        "- ·: not recorded (the run ended before this cell)",
        "",
    ]
    if notes:
        out += ["## Notes", ""]
        out += [f"{number}. {escape(text)}" for text, number in notes.items()]
        out.append("")
    return "\n".join(out)


def contradictions(cells: list[dict[str, Any]], docs: dict[str, Any] | None) -> dict[str, bool]:
    """Cells whose status contradicts the docs' claim, either way: cell id -> the claim (supported or not).
    A skipped cell contradicts nothing. Reads ``docs["claims"][style][path]["supported"]`` (and the
    ``docs["expect"][style][path]`` of results written before the claims came per source)."""
    docs = docs or {}
    claims = docs.get("claims")
    if claims is not None:
        expect = {style: {path: c["supported"] for path, c in paths.items()} for style, paths in claims.items()}
    else:
        expect = docs.get("expect", {})
    found = {}
    for cell in cells:
        claim = expect.get(cell["style"], {}).get(cell["path"])
        if claim is not None and ((claim and cell["status"] in FAILURES) or (not claim and cell["status"] == "pass")):
            found[cell["id"]] = claim
    return found


def _contradiction_section(found: dict[str, bool], docs: dict[str, Any], cells: dict[str, Any]) -> list[str]:
    return [
        f"## Contradicts the docs ({len(found)} cells)",
        "",
        f"Claims from {escape(docs.get('source', ''), 300)}, as declared under `[docs]` in the matrix file.",
        "",
        tabulate(
            [
                [
                    cell,
                    "supported" if claim else "not supported",
                    f"{SYMBOLS[cells[cell]['status']]} {cells[cell]['status']}",
                ]
                for cell, claim in found.items()
            ],
            headers=["cell", "documented", "measured"],
            tablefmt="github",
        ),
        "",
    ]


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


def _summary(cells: dict[str, dict[str, Any]], cases: list[str], styles: list[str], paths: list[str]) -> str:
    rows = []
    for style in styles:
        row = [style]
        for path in paths:
            records = [cells[k] for case in cases if (k := f"{case}-{style}-{path}") in cells]
            ran = [r for r in records if r["status"] != "skip"]
            if not ran:
                row.append(SYMBOLS["skip"] if records else "·")
                continue
            passed = sum(r["status"] == "pass" for r in ran)
            wrong = any(r["status"] == "wrong" for r in ran)
            row.append(f"{passed}/{len(ran)}" + (" ❗" if wrong else ""))
        rows.append(row)
    return tabulate(rows, headers=["style \\ path", *paths], tablefmt="github")


def write_chart(results_file: Path | str, chart_file: Path | str) -> None:
    """Draw ``chart_file`` from ``results_file`` (raises ``InputError`` for an unusable results file)."""
    Path(chart_file).write_text(render(read_results(results_file)))
