"""Reading an older results file: a schema 1 file upgraded once, when read, so that nothing downstream needs a
fallback. What such a file may lack is derived from the live registries and matrix.toml (never from a copy of
them): each style's decorator and wrapper, each path's group and definition, the goals; its older docs shape and
its older wording of a subsystem that ignored the kernel (a ``wrong``) becomes today's (``blind``). An older
record's ``diagnostics`` (schema 1 and 2) are read into its typed capture and measurements."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path
from typing import Any, Protocol

from harness.errors import InputError
from harness.records.environment import ROOT
from harness.records.schema import from_json
from harness.spec import Capture, CellId, Measurements

# the subsystem check's message before error_type "SubsystemMismatch" existed
OLD_SUBSYSTEM_TEXT = "flops: FlopCounterMode counted"
OLD_DOCS_SOURCE = "docs"  # the one unnamed source of the older docs shape
CHECKOUT_MATRIX = ROOT / "matrix.toml"  # where a file without goals (or goal sets) gets them


class Catalogue(Protocol):
    """What the harness reading a file knows of each style and path by id (its kernel and cell registries): where
    a file from before runs described their styles and paths gets the descriptions. None: not known."""

    def style_axes(self, style: str) -> tuple[str | None, str] | None: ...  # (decorator, wrapper)

    def path_entry(self, path: str) -> dict[str, str] | None: ...  # {"group", "doc"}


class NoCatalogue:
    """A reader that knows no style or path: an older file's undescribed ones stay so (wrapper "other")."""

    def style_axes(self, style: str) -> tuple[str | None, str] | None:
        return None

    def path_entry(self, path: str) -> dict[str, str] | None:
        return None


def upgrade(data: dict[str, Any], catalogue: Catalogue) -> dict[str, Any]:
    """A schema 1 file's JSON as schema 2 (shape already checked: an object with environment and cells), its
    styles and paths described from ``catalogue`` where the file does not describe them."""
    env = dict(data["environment"])
    cells = [_cell(cell) if isinstance(cell, dict) else cell for cell in data["cells"]]
    ids = [CellId.parse(cell) for cell in env.get("expected_cells") or [] if str(cell).count("-") == 2]
    expected = {"styles": [cell.style for cell in ids], "paths": [cell.path for cell in ids]}
    derived = [key for key in ("styles", "paths", "goals") if not (isinstance(env.get(key), dict) and env[key])]
    for key, entries in (("styles", style_entries), ("paths", path_entries)):
        given = env[key] if isinstance(env.get(key), dict) else {}
        named = dict.fromkeys([*(cell.get(key[:-1]) for cell in cells if isinstance(cell, dict)), *expected[key]])
        missing = [name for name in named if isinstance(name, str) and not isinstance(given.get(name), dict)]
        env[key] = {**entries(missing, catalogue), **given}
    if "goals" in derived:
        env["goals"] = matrix_goals()
    if isinstance(env.get("docs"), dict) and not {"claims", "sources"} & set(env["docs"]):
        env["docs"] = _docs(env["docs"])
    env["derived"] = derived  # the chart says so
    return {**data, "schema": 2, "environment": env, "cells": cells}


def _cell(cell: dict[str, Any]) -> dict[str, Any]:
    """A subsystem that ignored the kernel was a ``wrong`` (``SubsystemMismatch``, or earlier a ``Mismatch`` with
    the FlopCounterMode check's message): today it is status ``blind``."""
    if cell.get("error_type") == "Mismatch" and str(cell.get("error") or "").startswith(OLD_SUBSYSTEM_TEXT):
        cell = {**cell, "error_type": "SubsystemMismatch"}
    if cell.get("error_type") != "SubsystemMismatch":
        return cell
    cell = {**cell, "status": "blind" if cell.get("status") == "wrong" else cell.get("status")}
    if isinstance(cell.get("outcomes"), list):
        cell["outcomes"] = ["blind" if status == "wrong" else status for status in cell["outcomes"]]
    return cell


# what older records stored of a verdict now derived from the capture: present only on a compile-type path
DERIVED = {"kernel_compiled": "compiled", "backward_compiled": "trained"}


def from_diagnostics(diagnostics: Any, file: Path | str, key: str) -> tuple[Capture, Measurements]:
    """An older record's ``diagnostics`` (at ``key`` of ``file``) as its typed capture and measurements, each
    value checked; ``kernel_compiled`` and ``backward_compiled`` say the path compiled (and trained)."""
    diagnostics = {} if diagnostics is None else diagnostics
    if not isinstance(diagnostics, dict):
        raise InputError(file, key, f"expected a table, got {diagnostics!r:.80}")
    capture = {f.name for f in dataclasses.fields(Capture)}
    facts = {name: value for name, value in diagnostics.items() if name in capture}
    facts.update({DERIVED[name]: True for name in DERIVED if name in diagnostics})
    measured = {name: value for name, value in diagnostics.items() if name not in capture}
    return from_json(Capture, facts, file, key), from_json(Measurements, measured, file, key)


def style_entries(styles: list[str], catalogue: Catalogue) -> dict[str, dict[str, str | None]]:
    """style -> {"decorator", "wrapper"} from ``catalogue`` (a style it lacks: wrapper "other")."""
    axes = {style: catalogue.style_axes(style) or (None, "other") for style in styles}
    return {style: {"decorator": decorator, "wrapper": wrapper} for style, (decorator, wrapper) in axes.items()}


def path_entries(paths: list[str], catalogue: Catalogue) -> dict[str, dict[str, str]]:
    """path -> {"group", "doc"} from ``catalogue`` ({} for a path it lacks)."""
    return {path: catalogue.path_entry(path) or {} for path in paths}


def matrix_goals(table: str = "goals") -> dict[str, list[str]]:
    """The goals (or ``table``: ``goal_sets``) of the repository's matrix.toml ({} when it has none)."""
    try:
        goals = tomllib.loads(CHECKOUT_MATRIX.read_text()).get(table, {})
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    return {str(goal): list(paths) for goal, paths in goals.items() if isinstance(paths, list)}


def _docs(docs: dict[str, Any]) -> dict[str, Any]:
    """The older {"source": text, "expect": {style: {path: bool}}} as {"sources", "claims"}."""
    return {
        "sources": {OLD_DOCS_SOURCE: str(docs["source"])} if docs.get("source") else {},
        "claims": {
            style: {path: {"supported": supported, "source": OLD_DOCS_SOURCE} for path, supported in by_path.items()}
            for style, by_path in (docs.get("expect") or {}).items()
            if isinstance(by_path, dict)
        },
    }
