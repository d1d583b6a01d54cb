"""matrix.toml: the axes of the matrix, validated on load into a frozen ``Matrix``."""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.case import Case, load_cases
from harness.compare import Tolerance, dtype_name
from harness.errors import InputError

DEVICES = ("cuda", "cpu")
TOP_KEYS = {"cases", "paths", "tolerances"}
STYLE_KEYS = ("decorators", "wrappers", "control")  # the two axes the styles cross, and the control
OPTIONAL_TOP_KEYS = {"environment", "styles", *STYLE_KEYS}
PATH_KEYS = {"device", "timeout"}
OPTIONAL_PATH_KEYS = {"examples"}
TOLERANCE_KEYS = {"atol", "rtol"}
ID_PATTERN = re.compile(r"[A-Za-z0-9_.]+")


@dataclass(frozen=True)
class PathSpec:
    id: str
    device: str
    timeout: float
    examples: int = 1  # inputs per cell: the case's first size, then sizes hypothesis draws


@dataclass(frozen=True)
class Matrix:
    """The declared axes, in chart order."""

    file: Path
    cases: tuple[str, ...]
    styles: tuple[str, ...]
    paths: tuple[PathSpec, ...]
    tolerances: dict[str, Tolerance]
    modules: dict[str, str]  # case id -> the module that defines it
    style_axes: dict[str, tuple[str | None, str]] = field(default_factory=dict)  # style -> (decorator, wrapper)
    # {"sources": {name: text}, "claims": {style: {path: {"supported": bool, "source": "name[, name]"}}}}
    docs: dict[str, Any] | None = None
    environment: dict[str, str] = field(default_factory=dict)  # for the cell processes

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
    ``--cases`` may also name a module (dotted, not a case of the matrix): its cases join the run.
    A path that needs CUDA, asked for by name on a host without it, is bad input (by default it is a skip)."""
    if cases:
        matrix = _with_modules(matrix, [item for item in cases if "." in item and item not in matrix.cases])
        cases = [item for item in cases if item in matrix.cases] + [
            case for item in cases if "." in item for case, module in matrix.modules.items() if module == item
        ]
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
        modules={case: matrix.modules[case] for case in chosen["cases"]},
        styles=chosen["styles"],
        style_axes={style: matrix.style_axes[style] for style in chosen["styles"]},
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


def _with_modules(matrix: Matrix, modules: list[str]) -> Matrix:
    """The matrix with the cases of user modules named on the command line added (validated like the file's)."""
    if not modules:
        return matrix
    found = _load_cases("command line", "--cases", modules, matrix.tolerances, dict(matrix.modules))
    return replace(matrix, cases=tuple(found), modules=found)


def case_module(entry: str) -> str:
    """A bare entry of ``cases`` names a module of ``cases/``; a dotted one is a user's module path."""
    return entry if "." in entry else f"cases.{entry}"


def load_matrix(file: Path | str) -> Matrix:
    """Read and validate ``file``; raise ``InputError`` on the first problem found."""
    from harness.docs import resolve_docs
    from harness.paths import PATHS

    file = Path(file)
    try:
        data = tomllib.loads(file.read_text())
    except FileNotFoundError:
        raise InputError(file, "(file)", "no such file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise InputError(file, "(syntax)", str(error)) from None
    docs = data.pop("docs", None)
    _no_unknown(file, "", data, TOP_KEYS, OPTIONAL_TOP_KEYS)
    environment = _environment(file, data.get("environment", {}))
    entries = _ids(file, "cases", data, None)
    style_axes = _styles(file, data)
    path_table = _table(file, "paths", data.get("paths"))
    _ids(file, "paths", {"paths": list(path_table)}, PATHS)
    paths = tuple(_path_spec(file, path_id, spec) for path_id, spec in path_table.items())
    tolerances = {
        dtype: _tolerance(file, dtype, spec)
        for dtype, spec in _table(file, "tolerances", data.get("tolerances")).items()
    }
    modules = _load_cases(file, "cases", list(entries), tolerances, {})
    return Matrix(
        file=file,
        cases=tuple(modules),
        styles=tuple(style_axes),
        style_axes=style_axes,
        paths=paths,
        tolerances=tolerances,
        modules=modules,
        docs=None if docs is None else resolve_docs(file, docs, style_axes, list(path_table)),
        environment=environment,
    )


def _environment(file: Path, value: Any) -> dict[str, str]:
    """The optional [environment] table: variables set for the cell processes (strings only)."""
    if not isinstance(value, dict):
        raise InputError(file, "environment", 'expected a table of NAME = "value"')
    for name, setting in value.items():
        if not isinstance(setting, str):
            raise InputError(file, f"environment.{name}", f"expected a string, got {setting!r}")
    return dict(value)


def _styles(file: Path, data: dict[str, Any]) -> dict[str, tuple[str | None, str]]:
    """Style id -> (decorator, wrapper), in chart order: every decorator of ``decorators`` inside every wrapper
    of ``wrappers`` (plus the control when ``control = true``), or the style ids ``styles`` lists."""
    from harness.decorators import DECORATORS
    from harness.styles import KNOWN_STYLES, cross
    from harness.wrappers import WRAPPERS

    axes = [key for key in STYLE_KEYS if key in data]
    if "styles" in data:
        if axes:
            raise InputError(file, axes[0], "give either styles or the axes (decorators, wrappers, control), not both")
        return {style: KNOWN_STYLES[style] for style in _ids(file, "styles", data, KNOWN_STYLES)}
    if not axes:
        raise InputError(file, "styles", "missing (declare the axes decorators and wrappers, or list styles)")
    for key in ("decorators", "wrappers"):
        if key not in data:
            raise InputError(file, key, "missing (the styles cross decorators with wrappers)")
    control = data.get("control", False)
    if not isinstance(control, bool):
        raise InputError(file, "control", f"expected true or false, got {control!r}")
    return cross(_ids(file, "decorators", data, DECORATORS), _ids(file, "wrappers", data, WRAPPERS), control)


def _load_cases(
    file: Path | str, key: str, entries: list[str], tolerances: dict[str, Tolerance], found: dict[str, str]
) -> dict[str, str]:
    """Import each entry's module; ``found`` grows to {case id: module}, in order. A bare entry must define
    the case of that id; a dotted one may define several (``CASES``)."""
    for index, entry in enumerate(entries):
        where = f"{key}[{index}]"
        module = case_module(entry)
        try:
            cases = load_cases(module)
        except ModuleNotFoundError as error:
            raise InputError(file, where, f"unknown case {entry!r}: {error}") from None
        except Exception as error:  # a broken user module: say so in one line
            raise InputError(file, where, f"case {entry!r} does not load: {type(error).__name__}: {error}") from None
        if "." not in entry and [case.id for case in cases] != [entry]:
            raise InputError(file, where, f"module {module} defines case(s) {[c.id for c in cases]}, not {entry!r}")
        for case in cases:
            _check_case(file, where, case, module, tolerances, found)
            found[case.id] = module
    return found


def _check_case(
    file: Path | str, where: str, case: Case, module: str, tolerances: dict[str, Tolerance], found: dict[str, str]
) -> None:
    if not ID_PATTERN.fullmatch(case.id) or "." in case.id:
        raise InputError(file, where, f"{module}: bad case id {case.id!r}: use letters, digits and '_'")
    if case.id in found:
        raise InputError(file, where, f"{module}: case id {case.id!r} is already defined by {found[case.id]}")
    dtype = dtype_name(case.dtype)
    if dtype not in tolerances:
        raise InputError(file, f"tolerances.{dtype}", f"missing (case {case.id!r} runs in {dtype})")


def _no_unknown(
    file: Path,
    prefix: str,
    table: dict[str, Any],
    required: set[str],
    optional: frozenset[str] | set[str] = frozenset(),
) -> None:
    allowed = required | optional
    for key in table:
        if key not in allowed:
            raise InputError(file, f"{prefix}{key}", f"unknown key (expected one of {', '.join(sorted(allowed))})")
    for key in sorted(required - table.keys()):
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
    _no_unknown(file, prefix + ".", spec, PATH_KEYS, OPTIONAL_PATH_KEYS)
    if spec["device"] not in DEVICES:
        raise InputError(file, f"{prefix}.device", f"expected one of {', '.join(DEVICES)}, got {spec['device']!r}")
    timeout = _number(file, f"{prefix}.timeout", spec["timeout"], 1)
    examples = spec.get("examples", 1)
    if isinstance(examples, bool) or not isinstance(examples, int) or examples < 1:
        raise InputError(file, f"{prefix}.examples", f"expected a whole number >= 1, got {examples!r}")
    return PathSpec(id=path_id, device=spec["device"], timeout=timeout, examples=examples)


def _tolerance(file: Path, dtype: str, spec: Any) -> Tolerance:
    prefix = f"tolerances.{dtype}"
    spec = _table(file, prefix, spec)
    _no_unknown(file, prefix + ".", spec, TOLERANCE_KEYS)
    return Tolerance(
        atol=_number(file, f"{prefix}.atol", spec["atol"], 0), rtol=_number(file, f"{prefix}.rtol", spec["rtol"], 0)
    )
