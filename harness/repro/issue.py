"""``repro CELL --issue``: a bug report ready to paste into a tracker (PyTorch's, Triton's, the kernel library's):
a title from the failure, the versions the run measured, the cell's short script, what it printed and what was
expected, and the styles and paths where the same op passes (the workaround a maintainer asks about)."""

from __future__ import annotations

import ast
import sys
from typing import Any

from harness.kernel.styles import CONTROL
from harness.records.record import Record
from harness.records.results import Results
from harness.report.casebugs import failing_kernels
from harness.report.mismatch import WrongKernel, wrong_kernels
from harness.repro.bundled import style_words
from harness.sources import installed_file, module_file
from harness.spec import Status

MAX_LISTED = 12  # passing styles or paths a report names before it counts the rest
EXPECTED = {
    Status.WRONG: "Every output and gradient equal to the PyTorch reference's within the tolerance the script states.",
    Status.GRAPH_BREAK: "The kernel compiled into the graph `torch.compile` captures, as the same kernel is in other "
    "wrapping styles.",
    Status.BLIND: "FlopCounterMode counting the flops the op's registered formula gives.",
}


def issue_text(record: Record, results: Results, script: str) -> str:
    """The report of ``record`` (a cell of ``results``), with ``script`` its repro script."""
    env = results.environment
    versions = [
        f"torch {env.get('torch')}",
        f"triton {env.get('triton')}",
        f"CUDA {env.get('cuda') or 'none'}",
        f"GPU {env.get('device')}",
        f"Python {env.get('python')}",
        *(["Triton's CPU interpreter (TRITON_INTERPRET=1): no GPU code ran"] if env.get("triton_interpret") else []),
        *(f"{library} {version or '(version unknown)'}" for library, version in (env.get("libraries") or {}).items()),
    ]
    ran = record.confirmation or {}
    confirmed = ran.get("line")
    printed = confirmed or _first_line(record)
    whose = []  # what the printed line is, where it is not this script's
    if not confirmed:
        whose = ["(the cell's own error: this run did not run the script)", ""]
    elif ran.get("cell", record.id) != record.id:
        whose = [
            f"(what the script of `{ran['cell']}`, the same failure of `{record.style}` on `{record.path}`, printed "
            "when the harness ran it; the script above is this cell's own, written for it)",
            "",
        ]
    styles = _passing_styles(record, results)
    as_others = ", as it runs the same op in the other styles below" if styles else ""
    expected = EXPECTED.get(record.status, f"The path runs the op without an error{as_others}.")
    wrong = wrong_kernels(results.cells).get(record.case)
    notes = [  # the run's own finding: no tracker's bug, the kernel's
        f"> Not a PyTorch or Triton bug: {wrong.line()}. Its other cells are that one bug; this report is for the "
        "kernel's own tracker, if any.",
        "",
    ] if wrong else []  # fmt: skip
    failing = None if wrong else failing_kernels(results.cells).get(record.case)
    if failing:  # the plainest launch fails alike: the kernel's (or Triton's, running it), not the wrapping's
        notes = [
            f"> Not this style's or path's failure: {failing.line().removesuffix(': fix the kernel first')}. The "
            "kernel fails as written, as launched plainly: a report about the kernel, or about Triton running it.",
            "",
        ]
    elif not wrong and _reference_as_fake(record, script):
        notes = [
            "> The op's fake here is the case's reference (the case declares no `fake`): where the launcher's "
            "outputs are laid out otherwise than the reference's, the fake is the case's to fix (`Case(fake=...)`), "
            "before this is reported anywhere.",
            "",
        ]
    return "\n".join(
        [
            f"# {_title(record, wrong)}",
            "",
            *notes,
            f"Found by triton-torch-matrix, cell `{record.id}` (case `{record.case}`, style `{record.style}`, "
            f"path `{record.path}`).",
            "",
            "## Versions",
            "",
            *(f"- {line}" for line in versions),
            "",
            "## Reproducer",
            "",
            "Save it as `repro.py` and run `python repro.py` (it needs torch, triton and the case's own imports).",
            *_local_imports(script),
            "",
            "```python",
            script.rstrip(),
            "```",
            "",
            "## What it printed",
            "",
            "```",
            printed,
            "```",
            "",
            *whose,
            "## What was expected",
            "",
            f"{expected} The script then prints `no failure: {record.id} passes here`.",
            "",
            "## Where the same op passes",
            "",
            *_passing(record, results, styles),
            "",
        ]
    )


def _reference_as_fake(record: Record, script: str) -> bool:
    """Whether the cell failed on a fake that is the case's reference (a ``custom_op`` style's default)."""
    said = f"{record.error or ''} {(record.confirmation or {}).get('line') or ''}".lower()
    return "fake" in said and "register_fake" in script and "    return fake(" not in script


def _title(record: Record, wrong: WrongKernel | None = None) -> str:
    words = {
        "wrong": "wrong numbers",
        "graph_break": "kernel runs outside the compiled graph",
        "blind": "wrong flop count",
    }
    what = words.get(str(record.status), _first_line(record))
    if wrong is not None:
        return _cut(f"{record.case}: the kernel disagrees with its reference in {wrong.scope()} ({record.path} shown)")
    return _cut(f"{record.path}: {style_words(record.style)} ({record.case}): {what}")


TITLE = 160  # characters of an issue's title at most


def _cut(title: str) -> str:
    """``title`` within ``TITLE`` characters: cut at the last word boundary, with an ellipsis (a cut mid-word
    changes what it says: ``triton type int1`` read ``triton type int``)."""
    if len(title) <= TITLE:
        return title
    return title[: TITLE - 1].rsplit(" ", 1)[0].rstrip(" ,;:") + "…"


def _first_line(record: Record) -> str:
    text = (record.error or record.reason or "").strip()
    kind = f"{record.error_type}: " if record.error_type and not text.startswith(record.error_type) else ""
    return f"{kind}{text.splitlines()[0]}" if text else str(record.status)


def _passing_styles(record: Record, results: Results) -> list[str]:
    """The other styles of the same op (not the control: pure PyTorch, no op of the case's) that pass on the cell's
    path."""
    return [
        cell.style
        for cell in results.cells
        if cell.case == record.case and cell.style != CONTROL and cell.path == record.path
        and cell.status == Status.PASS
    ]  # fmt: skip


def _passing(record: Record, results: Results, styles: list[str]) -> list[str]:
    """Where the same op passes: ``styles`` on the cell's path, the other paths where its style passes, and whether
    the pure-PyTorch control passes the cell's path (the path itself works there)."""
    same_style = [cell for cell in results.cells if cell.case == record.case and cell.style == record.style]
    paths = [cell.path for cell in same_style if cell.status == Status.PASS]
    control = [c for c in results.cells if c.case == record.case and c.style == CONTROL and c.path == record.path]
    reference = [f"- The pure-PyTorch `control` on `{record.path}`: {control[0].status}"] if control else []
    return [
        f"- Other styles on `{record.path}`: {_listed(styles)}",
        f"- Other paths of `{record.style}`: {_listed(paths)}",
        *(reference if record.style != CONTROL else []),
    ]


def _local_imports(script: str) -> list[str]:
    """A line naming the modules the script imports that no installed package provides (the user's own files,
    found on the run's ``sys.path``: ``installed_file``, the rule cell keys read too): a tracker's reader has none
    of them."""
    tops = {
        (alias.name if isinstance(node, ast.Import) else node.module or "").partition(".")[0]
        for node in ast.walk(ast.parse(script))
        if isinstance(node, ast.Import | ast.ImportFrom) and not getattr(node, "level", 0)
        for alias in node.names
    }
    tops -= {*sys.stdlib_module_names, "", "torch", "triton"}
    local = [f"`{top}` ({file})" for top in sorted(tops) if (file := module_file(top)) and not installed_file(file)]
    if not local:
        return []
    return ["", f"It imports {', '.join(local)}, which no installed package provides: attach it to the report too."]


def _listed(names: list[Any]) -> str:
    if not names:
        return "none passes"
    shown = ", ".join(f"`{name}`" for name in names[:MAX_LISTED])
    return shown + (f" and {len(names) - MAX_LISTED} more" if len(names) > MAX_LISTED else "") + " pass"
