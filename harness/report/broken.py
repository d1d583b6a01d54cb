"""Whether a run broke: it measured nothing for some cells because the harness itself failed (their cell
processes could not start, or no cell of a device's paths could even be built). Such a run exits
``EXIT_RUN_BROKE`` and its chart says so at the top; so does the chart of a run in Triton's interpreter, with
what such a run cannot measure."""

from __future__ import annotations

from typing import Any

from harness.records.record import Record
from harness.records.results import Results
from harness.report.marks import first_sentence, wrap
from harness.spec import NOT_STARTED, Stage, Status

FIRST_LAUNCH = "active drivers"  # the error an autotuned kernel raises in the interpreter: no device to time on


def interpreter_banner(results: Results) -> list[str]:
    """The banner of a run in Triton's interpreter: what it measured and what it cannot, as this run shows it
    (autotuned stacks are said to fail at their first launch only where they did)."""
    out = [
        "> ⚠️ **INTERPRETER RUN: TRITON_INTERPRET=1.** Every Triton kernel ran in Triton's CPU interpreter, "
        "not compiled for a GPU: these verdicts say nothing about GPU code generation. What they measure: "
        "whether each wrapping style's Python side (decorators, launch, op registration, tracing) works on "
        "each path, with the kernels' numbers checked.",
        "",
        "What the interpreter cannot measure, so what this run does not say:",
        "",
        "- **the docs' claims**: they are about GPU runs; this run is **not compared with them** (no \"Contradicts "
        'the docs" section, no ≠docs mark).',
        *_autotuned(results.cells),
        "- **compiled or exported kernels**: without a GPU, Dynamo does not recognise user kernels "
        "(`has_triton()` is False), so compile, export and AOTInductor paths trace no Triton kernel.",
        "- **GPU behaviour**: CUDA graphs, memory faults, code generation, timing; bf16 products are computed wrong "
        "by the interpreter (a bf16 cell wrong here says nothing of a style).",
        "",
    ]
    return [line for text in out for line in (wrap(text, "  ") if text.startswith("- ") else wrap(text, "> "))]


def _autotuned(cells: list[Record]) -> list[str]:
    """The banner's line on autotuned stacks, from their cells: how many failed at their first launch."""
    tuned = [c for c in cells if "autotune" in c.style and c.ran]
    failed = [c for c in tuned if c.failed and FIRST_LAUNCH in (c.error or "")]
    if not tuned:
        return []
    if not failed:
        return [
            f"- **autotuning**: the {len(tuned)} autotuned cells ran every config once and kept the first (the "
            "interpreter has no device to time on: not a GPU tuning)."
        ]
    return [
        f"- **autotuned stacks**: {len(failed)} of {len(tuned)} autotuned cells failed at their first launch "
        '("0 active drivers": the autotuner times configs on a device); the others ran every config once and kept '
        "the first (not a GPU tuning)."
    ]


def run_broke(results: Results) -> str | None:
    """One line saying why the run of ``results`` broke, or None when it did not."""
    cells = [cell for cell in results.cells if not cell.reused_from]
    failed = [cell for cell in cells if cell.error_type == NOT_STARTED]
    if failed:
        first = first_sentence(failed[0].error or "")
        unrun = len(set(results.environment.get("expected_cells") or []) - {cell.id for cell in results.cells})
        stopped = f"; the run stopped there: {unrun} selected cell(s) not run" if unrun else ""
        return (
            f"{len(failed)} of {len(cells)} cell(s) measured nothing: their cell processes failed to start or to load "
            f"their case ({first}){stopped}"
        )
    paths = results.environment.get("paths")
    devices: dict[str, list[Record]] = {}
    for cell in cells:
        entry: Any = paths.get(cell.path) if isinstance(paths, dict) else None
        if isinstance(entry, dict) and entry.get("device") and cell.status != Status.SKIP:
            devices.setdefault(entry["device"], []).append(cell)
    for device, ran in devices.items():
        if all(cell.status == Status.ERROR and cell.stage == Stage.BUILD for cell in ran):
            first = first_sentence(ran[0].error or "")
            return f"no cell of the {device} paths could be built ({len(ran)} error at build; first: {first})"
    return None
