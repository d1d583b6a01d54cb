"""Blocks of the chart that read the records and the environment, not the chart's axes: the legend, how each
case's op ships, the contradicted docs' claims (grouped by claim), the stamp; and ``details``, a collapsed block."""

from __future__ import annotations

from typing import Any

from tabulate import tabulate

from harness.records.environment import interpreted
from harness.records.record import Record
from harness.report.marks import LEGEND, escape, is_subsystem, mark, prose, wrap
from harness.report.meta import WRAPPERS, Docs, read_docs


def details(summary: str, lines: list[str]) -> list[str]:
    """``lines`` in a collapsed ``<details>`` block (GitHub renders the markdown inside)."""
    return [f"<details><summary>{escape(summary, 200)}</summary>", "", *lines, "", "</details>", ""]


def legend(
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
    return [wrapped for line in out for wrapped in wrap(line, " " * (len(line) - len(line.lstrip(" -")) + 2))] + [""]


def shipped(cells: list[Record]) -> list[str]:
    """How each case's op as shipped is wrapped (the ``as_shipped`` rows), from its records' ``wrapped_as``."""
    wrapped = {c.case: c.measurements.wrapped_as for c in cells if c.measurements.wrapped_as}
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


def contradiction_section(
    found: dict[str, tuple[bool, str]], docs: Docs, cells: dict[str, Record], info: dict[str, dict[str, Any]]
) -> list[str]:
    """The contradicted claims, one row per claim (wrapper, path, what the docs say, source), with the styles
    and cases that contradict it."""
    out = ["## Contradicts the docs", "", f"{len(found)} cells contradict what the docs claim.", ""]
    if docs.sources:
        out += ["Claims, as declared under `[docs]` in the matrix file, from:", ""]
        out += [
            line for name, text in docs.sources.items() for line in wrap(f"- **{escape(name, 80)}**: {prose(text)}")
        ]
        out.append("")
    claims: dict[tuple[str, str, bool, str], dict[str, list[Record]]] = {}
    for cell_id, (claim, source) in found.items():
        record = cells[cell_id]
        key = (info.get(record.style, {}).get("wrapper", "other"), record.path, claim, source)
        claims.setdefault(key, {}).setdefault(record.style, []).append(record)
    rows = [
        [
            f"{wrapper} ({_stacks(by_style, info)}) on `{path}`",
            "supported" if claim else "not supported",
            escape(source, 80) or "?",
            _by_style(by_style),
        ]
        for (wrapper, path, claim, source), by_style in claims.items()
    ]
    table = tabulate(rows, headers=["claim", "documented", "source", "measured"], tablefmt="github")
    return [*out, *details(f"{len(claims)} claims contradicted by {len(found)} cells", [table]), ""]


def _stacks(by_style: dict[str, list[Record]], info: dict[str, dict[str, Any]]) -> str:
    """The decorator stacks of the styles a claim row is about (``jit, autotune``): two rows of one wrapper and path
    with opposite claims are about different stacks, and say which."""
    return ", ".join(dict.fromkeys(str(info.get(style, {}).get("decorator") or style) for style in by_style))


def _by_style(by_style: dict[str, list[Record]]) -> str:
    """``raw_jit: add ❌ error; autotune: 9 cases ❌`` (cases named up to three)."""
    parts = []
    for style, records in by_style.items():
        kinds = ", ".join(dict.fromkeys(f"{mark(r)} {_status_word(r)}" for r in records))
        if len(records) <= 3:
            parts.append(f"`{style}`: " + ", ".join(f"{r.case} {mark(r)} {_status_word(r)}" for r in records))
        else:
            parts.append(f"`{style}`: {len(records)} cases ({kinds})")
    return "; ".join(parts)


def _status_word(record: Record) -> str:
    if is_subsystem(record):
        return "subsystem blind"
    return ("flaky " if record.flaky else "") + record.status


def _wall(env: dict[str, Any]) -> str:
    """The run's wall time and workers; a merge's: each share's wall (shares run one after another or at once)."""
    walls = env.get("shard_wall_seconds")
    if not walls:
        return f"{env.get('wall_seconds')} s wall with {env.get('workers')} worker(s)"
    each = " + ".join(f"{wall:g}" for wall in walls)
    return f"{len(walls)} shards of {env.get('workers')} worker(s) in all, {each} s wall"


def stamp(env: dict[str, Any]) -> str:
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
        _wall(env),
    ]
    if env.get("autotune_benchmark"):
        parts.append(f"autotuning benchmarked by {escape(str(env['autotune_benchmark']), 160)}")
    if env.get("ld_preload"):
        parts.append(f"LD_PRELOAD={escape(env['ld_preload'], 120)}")
    if env.get("settings"):
        parts.append(escape(" ".join(f"{k}={v}" for k, v in env["settings"].items()), 200))
    if interpreted(env):
        parts.append("**TRITON_INTERPRET=1 (Triton's CPU interpreter)**")
    return "> " + " · ".join(parts)
