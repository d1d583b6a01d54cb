"""matrix.toml: the axes of the matrix, validated on load into a frozen ``Matrix``."""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.case import load_case
from harness.compare import Tolerance, dtype_name
from harness.errors import InputError

DEVICES = ("cuda", "cpu")
TOP_KEYS = {"cases", "styles", "paths", "tolerances"}
PATH_KEYS = {"device", "timeout"}
TOLERANCE_KEYS = {"atol", "rtol"}
ID_PATTERN = re.compile(r"[A-Za-z0-9_.]+")


@dataclass(frozen=True)
class PathSpec:
    id: str
    device: str
    timeout: float


@dataclass(frozen=True)
class Matrix:
    """The declared axes, in chart order."""

    file: Path
    cases: tuple[str, ...]
    styles: tuple[str, ...]
    paths: tuple[PathSpec, ...]
    tolerances: dict[str, Tolerance]
    docs: dict[str, Any] | None = None  # {"source": url, "expect": {style: {path: documented as supported}}}

    def path(self, path_id: str) -> PathSpec:
        return next(spec for spec in self.paths if spec.id == path_id)

    def cell_ids(self) -> list[str]:
        return [cell_id(c, s, p.id) for c in self.cases for s in self.styles for p in self.paths]


def select(
    matrix: Matrix,
    cases: list[str] | None = None,
    styles: list[str] | None = None,
    paths: list[str] | None = None,
    cuda: bool = True,
) -> Matrix:
    """The matrix narrowed to the ids asked for on the command line (``--cases`` etc.), in matrix order.
    A path that needs CUDA, asked for by name on a host without it, is bad input (by default it is a skip)."""
    chosen = {
        "cases": _choose("--cases", cases, matrix.cases),
        "styles": _choose("--styles", styles, matrix.styles),
        "paths": _choose("--paths", paths, tuple(spec.id for spec in matrix.paths)),
    }
    if paths and not cuda:
        needing = [spec.id for spec in matrix.paths if spec.id in paths and spec.device == "cuda"]
        if needing:
            raise InputError("command line", "--paths", f"{', '.join(needing)} need(s) CUDA and this host has none")
    return replace(
        matrix,
        cases=chosen["cases"],
        styles=chosen["styles"],
        paths=tuple(spec for spec in matrix.paths if spec.id in chosen["paths"]),
    )


def parse_ids(text: str) -> list[str]:
    """``"a, b"`` -> ``["a", "b"]`` (the command line's comma-separated id lists)."""
    return [item.strip() for item in text.split(",") if item.strip()]


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/4"`` -> ``(2, 4)``: the second of four shares of the cells (cell k goes to share k mod 4)."""
    index, _, count = text.partition("/")
    if not (index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count)):
        raise InputError("command line", "--shard", f"expected I/N with 1 <= I <= N, got {text!r}")
    return int(index), int(count)


def _choose(option: str, wanted: list[str] | None, known: tuple[str, ...]) -> tuple[str, ...]:
    if not wanted:
        return known
    for item in wanted:
        if item not in known:
            raise InputError("command line", option, f"unknown id {item!r} (in the matrix: {', '.join(known)})")
    return tuple(item for item in known if item in wanted)


def cell_id(case: str, style: str, path: str) -> str:
    return f"{case}-{style}-{path}"


def case_module(case: str) -> str:
    """A built-in case id names a module of ``cases/``; a dotted id is a user's module path."""
    return case if "." in case else f"cases.{case}"


def load_matrix(file: Path | str) -> Matrix:
    """Read and validate ``file``; raise ``InputError`` on the first problem found."""
    from harness.paths import PATHS
    from harness.styles import STYLES

    file = Path(file)
    try:
        data = tomllib.loads(file.read_text())
    except FileNotFoundError:
        raise InputError(file, "(file)", "no such file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise InputError(file, "(syntax)", str(error)) from None
    docs = _docs(file, data.pop("docs", None))
    _no_unknown(file, "", data, TOP_KEYS)
    cases = _ids(file, "cases", data, None)
    styles = _ids(file, "styles", data, STYLES)
    path_table = _table(file, "paths", data.get("paths"))
    _ids(file, "paths", {"paths": list(path_table)}, PATHS)
    paths = tuple(_path_spec(file, path_id, spec) for path_id, spec in path_table.items())
    tolerances = {
        dtype: _tolerance(file, dtype, spec)
        for dtype, spec in _table(file, "tolerances", data.get("tolerances")).items()
    }
    for index, case_id in enumerate(cases):
        _check_case(file, index, case_id, tolerances)
    for style, expect in (docs or {}).get("expect", {}).items():
        if style not in styles:
            raise InputError(file, f"docs.expect.{style}", f"not a style of this matrix ({', '.join(styles)})")
        for path_id in expect:
            if path_id not in path_table:
                raise InputError(file, f"docs.expect.{style}.{path_id}", "not a path of this matrix")
    return Matrix(file=file, cases=cases, styles=styles, paths=paths, tolerances=tolerances, docs=docs)


def _docs(file: Path, value: Any) -> dict[str, Any] | None:
    """The optional [docs] table: what a document claims, per style and path (true: supported)."""
    if value is None:
        return None
    table = _table(file, "docs", value)
    _no_unknown(file, "docs.", table, {"source", "expect"})
    if not isinstance(table["source"], str):
        raise InputError(file, "docs.source", "expected a string (where the claims come from)")
    for style, expect in _table(file, "docs.expect", table["expect"]).items():
        for path_id, claim in _table(file, f"docs.expect.{style}", expect).items():
            if not isinstance(claim, bool):
                raise InputError(file, f"docs.expect.{style}.{path_id}", f"expected true or false, got {claim!r}")
    return table


def _check_case(file: Path, index: int, case_id: str, tolerances: dict[str, Tolerance]) -> None:
    key = f"cases[{index}]"
    try:
        case = load_case(case_module(case_id))
    except ModuleNotFoundError as error:
        raise InputError(file, key, f"unknown case {case_id!r}: {error}") from None
    except Exception as error:  # a broken user module: say so in one line
        raise InputError(file, key, f"case {case_id!r} does not load: {type(error).__name__}: {error}") from None
    if case.id != case_id.rpartition(".")[2]:
        raise InputError(file, key, f"module {case_module(case_id)} defines case {case.id!r}, not {case_id!r}")
    dtype = dtype_name(case.dtype)
    if dtype not in tolerances:
        raise InputError(file, f"tolerances.{dtype}", f"missing (case {case_id!r} runs in {dtype})")


def _no_unknown(file: Path, prefix: str, table: dict[str, Any], allowed: set[str]) -> None:
    for key in table:
        if key not in allowed:
            raise InputError(file, f"{prefix}{key}", f"unknown key (expected one of {', '.join(sorted(allowed))})")
    for key in sorted(allowed - table.keys()):
        raise InputError(file, f"{prefix}{key}", "missing")


def _table(file: Path, key: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict) or not value:
        raise InputError(file, key, "expected a non-empty table")
    return value


def _ids(file: Path, key: str, data: dict[str, Any], known: dict[str, Any] | None) -> tuple[str, ...]:
    value = data.get(key)
    if not isinstance(value, list) or not value:
        raise InputError(file, key, "expected a non-empty list of ids")
    seen: set[str] = set()
    for index, item in enumerate(value):
        if not isinstance(item, str) or not item:
            raise InputError(file, f"{key}[{index}]", f"expected an id string, got {item!r}")
        if not ID_PATTERN.fullmatch(item):
            raise InputError(file, f"{key}[{index}]", f"bad id {item!r}: use letters, digits, '_' and '.'")
        if item in seen:
            raise InputError(file, f"{key}[{index}]", f"duplicate id {item!r}")
        if known is not None and item not in known:
            raise InputError(file, f"{key}[{index}]", f"unknown id {item!r} (known: {', '.join(known)})")
        seen.add(item)
    return tuple(value)


def _number(file: Path, key: str, value: Any, minimum: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < minimum:
        raise InputError(file, key, f"expected a number >= {minimum}, got {value!r}")
    return float(value)


def _path_spec(file: Path, path_id: str, spec: Any) -> PathSpec:
    prefix = f"paths.{path_id}"
    spec = _table(file, prefix, spec)
    _no_unknown(file, prefix + ".", spec, PATH_KEYS)
    if spec["device"] not in DEVICES:
        raise InputError(file, f"{prefix}.device", f"expected one of {', '.join(DEVICES)}, got {spec['device']!r}")
    timeout = _number(file, f"{prefix}.timeout", spec["timeout"], 1)
    return PathSpec(id=path_id, device=spec["device"], timeout=timeout)


def _tolerance(file: Path, dtype: str, spec: Any) -> Tolerance:
    prefix = f"tolerances.{dtype}"
    spec = _table(file, prefix, spec)
    _no_unknown(file, prefix + ".", spec, TOLERANCE_KEYS)
    return Tolerance(
        atol=_number(file, f"{prefix}.atol", spec["atol"], 0), rtol=_number(file, f"{prefix}.rtol", spec["rtol"], 0)
    )
