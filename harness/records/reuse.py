"""Cell keys and the reuse of unchanged verdicts (``--reuse RESULTS.json``).

A cell's key is a digest of everything that decides its verdict: torch, triton and CUDA versions, the GPU,
the harness's source (harness/*.py, harness/cell/paths/*.py), its case module's source, its matrix entry (case,
module, style and the style's decorator and wrapper, the path's spec, the tolerance, the matrix's reruns and
[environment]) and TRITON_INTERPRET. Every record carries its key; a later run keeps the record of a cell
whose key is unchanged instead of running it (a blind or graph_break verdict too: both are deterministic), unless
that record is not a stable verdict (wrong, flaky, crash, timeout, a CUDA fault, a cell process that failed to
start, or no key)."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from harness.records.confirmation import is_suspect
from harness.records.environment import harness_digest
from harness.records.record import Record
from harness.records.results import Results
from harness.spec import NOT_STARTED, CellSpec, Status, triton_interpreted


class Keyed(Protocol):
    """What a cell's key reads of the matrix (harness/matrix/config.py's ``Matrix`` has it)."""

    @property
    def cells(self) -> Sequence[CellSpec]: ...
    @property
    def modules(self) -> Mapping[str, str]: ...
    @property
    def style_axes(self) -> Mapping[str, tuple[str | None, str]]: ...
    @property
    def reruns(self) -> int: ...
    @property
    def environment(self) -> Mapping[str, str]: ...

REUSABLE = tuple(status for status in Status if status.rule.reusable)  # deterministic verdicts (harness/spec.py)
NOT_A_VERDICT = (NOT_STARTED,)  # error types that say the harness failed, not the cell


def module_digest(module: str) -> str:
    """sha256 (16 hex) of the source file of ``module`` (a case module); "" when it has no file."""
    spec = importlib.util.find_spec(module)
    origin = spec.origin if spec is not None else None
    if not origin or not Path(origin).is_file():
        return ""
    return hashlib.sha256(Path(origin).read_bytes()).hexdigest()[:16]


def run_ingredients(matrix: Keyed, versions: Mapping[str, str | None], device: str) -> dict[str, Any]:
    """What every cell's key shares: versions, device, harness source, the matrix's run-wide settings."""
    return {
        **versions,
        "device": device,
        "harness": harness_digest(),
        "triton_interpret": "1" if triton_interpreted() else "",  # as keys have always spelled it
        "reruns": matrix.reruns,
        "environment": matrix.environment,
    }


def cell_key(spec: CellSpec, matrix: Keyed, shared: dict[str, Any], modules: dict[str, str]) -> str:
    """sha256 (16 hex) over ``shared`` (``run_ingredients``) and the cell's matrix entry."""
    decorator, wrapper = matrix.style_axes.get(spec.style, (None, None))
    entry = {
        "case": spec.case,
        "module": spec.module,
        "module_source": modules[spec.module],
        "style": spec.style,
        "decorator": decorator,
        "wrapper": wrapper,
        "path": dataclasses.asdict(spec.path),
        "tolerance": dataclasses.asdict(spec.tolerance),
    }
    text = json.dumps({"run": shared, "cell": entry}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cell_keys(matrix: Keyed, versions: Mapping[str, str | None], device: str) -> dict[str, str]:
    """Each cell's key, by cell id (``versions``: harness/execution/machine.py)."""
    shared = run_ingredients(matrix, versions, device)
    modules = {module: module_digest(module) for module in set(matrix.modules.values())}
    return {spec.id: cell_key(spec, matrix, shared, modules) for spec in matrix.cells}


def reusable(record: Record, key: str | None) -> bool:
    """Whether ``record`` may stand for a cell whose key now is ``key``: same key, and a stable verdict. A GPU fault
    is re-measured unless its repro script reproduced it outside the harness, and so is a wrong cell unless it was
    wrong on every attempt and its script reproduced it; a harness suspect (a failure its script did not show)
    always is."""
    confirmed = bool(record.confirmation and record.confirmation.get("reproduced"))
    suspect = is_suspect(record)
    always_wrong = record.status == Status.WRONG and confirmed  # every attempt wrong (not flaky), shown outside
    return (
        key is not None
        and record.key == key
        and (record.status in REUSABLE or always_wrong)
        and not record.flaky
        and not suspect
        and (confirmed or not record.cuda_fault)
        and record.error_type not in NOT_A_VERDICT
    )


def reused_records(results: Results, file: Path | str, keys: dict[str, str]) -> dict[str, Record]:
    """The records of ``results`` that this run keeps: cells of ``keys`` whose key is unchanged, each marked
    ``reused_from`` the run that measured it (a record reused again keeps its first source)."""
    env = results.environment
    source = {"timestamp": env.get("timestamp"), "commit": env.get("commit"), "file": str(file)}
    return {
        record.id: record.replace(reused_from=record.reused_from or source)
        for record in results.cells
        if reusable(record, keys.get(record.id))
    }
