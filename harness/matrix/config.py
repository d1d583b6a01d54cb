"""matrix.toml: the axes of the matrix, validated on load into a frozen ``Matrix``."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from difflib import get_close_matches
from functools import cached_property
from pathlib import Path
from typing import Any

import torch

from harness.case import Case, CaseExited, exit_words, exits_raise, load_cases
from harness.cell.paths import PATHS
from harness.errors import InputError, unknown_id
from harness.interrupt import TimeUp, time_limit
from harness.kernel.casecheck import CaseProblem, check_case
from harness.kernel.compare import dtype_name
from harness.kernel.decorators import DECORATORS
from harness.kernel.interpreter import triton_interpreted
from harness.kernel.styles import KNOWN_STYLES, cross
from harness.kernel.wrappers import WRAPPERS
from harness.matrix.builtin import case_ids, case_module
from harness.matrix.docs import resolve_docs
from harness.matrix.goals import check_goal_sets, check_goals
from harness.matrix.tomlcheck import (
    ID_PATTERN,
    environment_table,
    id_list,
    no_unknown,
    nonempty_table,
    number,
    read_toml,
)
from harness.spec import CellSpec, PathSpec, Tolerance

DEVICES = ("cuda", "cpu")
TOP_KEYS = {"cases", "paths", "tolerances"}
STYLE_KEYS = ("decorators", "wrappers", "control")  # the two axes the styles cross, and the control
OPTIONAL_TOP_KEYS = {"environment", "run", "goals", "goal_sets", "styles", *STYLE_KEYS}
DEFAULT_RERUNS = 4
IMPORT_SECONDS = 600.0  # the most a case module's import may take in the run's own process (a hang: exit 2)
IMPORT_NOTICE_SECONDS = 30.0  # an import still running after this says so on stderr, naming the module
MAX_TIMEOUT = 1e6  # seconds a cell may take at most (11.6 days): the waits on a cell overflow far past it
PATH_KEYS = {"device", "timeout"}
OPTIONAL_PATH_KEYS = {"examples"}
TOLERANCE_KEYS = {"atol", "rtol"}


@dataclass(frozen=True)
class Matrix:
    """The declared axes, in chart order."""

    file: Path
    cases: tuple[str, ...]
    styles: tuple[str, ...]
    paths: tuple[PathSpec, ...]
    tolerances: dict[str, Tolerance]
    modules: dict[str, str]  # case id -> the module that defines it
    dtypes: dict[str, str]  # case id -> the dtype it runs in (a key of ``tolerances``)
    style_axes: dict[str, tuple[str | None, str]] = field(default_factory=dict)  # style -> (decorator, wrapper)
    # {"sources": {name: text}, "claims": {style: {path: {"supported": bool, "source": "name[, name]"}}}}
    docs: dict[str, Any] | None = None
    environment: dict[str, str] = field(default_factory=dict)  # for the cell processes
    reruns: int = DEFAULT_RERUNS  # more attempts of a cell that ends wrong (or unlike its baseline)
    goals: dict[str, list[str]] = field(default_factory=dict)  # a user's goal -> the paths it needs
    goal_sets: dict[str, list[str]] = field(default_factory=dict)  # a name -> goals a user wants together

    def path(self, path_id: str) -> PathSpec:
        return next(spec for spec in self.paths if spec.id == path_id)

    @cached_property
    def cells(self) -> tuple[CellSpec, ...]:
        """Every cell, in chart order (case, then style, then path)."""
        return tuple(
            CellSpec(case, self.modules[case], style, path, self.tolerances[self.dtypes[case]])
            for case in self.cases
            for style in self.styles
            for path in self.paths
        )

    def cell_ids(self) -> list[str]:
        return [cell.id for cell in self.cells]


def select(
    matrix: Matrix,
    cases: list[str] | None = None,
    styles: list[str] | None = None,
    paths: list[str] | None = None,
    cuda: bool = True,
) -> Matrix:
    """The matrix narrowed to the ids asked for on the command line (``--cases`` etc.), in matrix order.
    A ``--cases`` item that is not a case of the matrix names a module (``mykernels``, ``mypkg.kernels``): its
    cases join the run. ``--styles`` may name any style, the matrix's or not (``as_shipped`` for a library's ops
    beside the default matrix's re-wrapped styles). A path that needs CUDA, asked for by name on a host without it,
    is bad input (by default it is a skip), unless Triton's interpreter runs it on CPU tensors (``--interpret``)."""
    if cases:
        modules = [item for item in cases if item not in matrix.cases]
        new = [item for item in modules if case_module(item) not in matrix.modules.values()]  # else: its cases
        matrix = _with_modules(matrix, new) if new else matrix
        cases = [item for item in cases if item in matrix.cases and item not in modules] + [
            case for item in modules for case, module in matrix.modules.items() if module == case_module(item)
        ]
    every_style = (*matrix.styles, *(style for style in KNOWN_STYLES if style not in matrix.styles))
    chosen = {
        "cases": _choose("--cases", cases, matrix.cases),
        "styles": _choose("--styles", styles, every_style) if styles else matrix.styles,
        "paths": _choose("--paths", paths, tuple(spec.id for spec in matrix.paths)),
    }
    if paths and not cuda and not triton_interpreted():
        needing = [spec.id for spec in matrix.paths if spec.id in paths and spec.device == "cuda"]
        if needing:
            raise InputError(
                "command line",
                "--paths",
                f"{', '.join(needing)} need(s) CUDA and this host has none (add --interpret to run them in Triton's "
                "CPU interpreter)",
            )
    return replace(
        matrix,
        cases=chosen["cases"],
        modules={case: matrix.modules[case] for case in chosen["cases"]},
        dtypes={case: matrix.dtypes[case] for case in chosen["cases"]},
        styles=chosen["styles"],
        style_axes={style: matrix.style_axes.get(style, KNOWN_STYLES[style]) for style in chosen["styles"]},
        paths=tuple(spec for spec in matrix.paths if spec.id in chosen["paths"]),
    )


def _choose(option: str, wanted: list[str] | None, known: tuple[str, ...]) -> tuple[str, ...]:
    if not wanted:
        return known
    for item in wanted:
        if item not in known:
            raise InputError("command line", option, unknown_id(item, list(known), "id"))
    return tuple(item for item in known if item in wanted)


OWN_CASES = "a case not in the matrix file is named by its module (--cases mygelu runs the cases mygelu defines)"


def _with_modules(matrix: Matrix, modules: list[str]) -> Matrix:
    """The matrix with the cases of user modules named on the command line added (validated like the file's); one
    that does not import gets "did you mean" a case id close to it, else how a case of one's own is named."""
    known = {case: (matrix.modules[case], matrix.dtypes[case]) for case in matrix.cases}
    entries = [(module, case_module(module)) for module in modules]
    try:
        found = _load_cases("command line", "--cases", entries, matrix.tolerances, known)
    except InputError as error:
        if "unknown case" not in str(error):
            raise
        where, problem = str(error).split(": ", 2)[1:]
        close = [near for item in modules if (near := get_close_matches(item, matrix.cases, n=1))]
        hint = f"did you mean {close[0][0]!r}?" if close else OWN_CASES
        raise InputError("command line", "--cases" if close else where, f"{problem}; {hint}") from None
    return replace(
        matrix,
        cases=tuple(found),
        modules={case: module for case, (module, _) in found.items()},
        dtypes={case: dtype for case, (_, dtype) in found.items()},
    )


def load_matrix(file: Path | str) -> Matrix:
    """Read and validate ``file``; raise ``InputError`` on the first problem found."""

    file = Path(file)
    data = read_toml(file)
    no_unknown(file, "", data, TOP_KEYS, OPTIONAL_TOP_KEYS | {"docs"})
    docs = data.pop("docs", None)
    environment = environment_table(file, data.get("environment", {}))
    entries = id_list(file, "cases", data, None)
    style_axes = _styles(file, data)
    path_table = nonempty_table(file, "paths", data.get("paths"))
    for path_id in path_table:  # a table's keys: each named by its own key, not by a list index
        if path_id not in PATHS:
            raise InputError(file, f"paths.{path_id}", unknown_id(path_id, list(PATHS)))
    paths = tuple(_path_spec(file, path_id, spec) for path_id, spec in path_table.items())
    tolerances = {
        dtype: _tolerance(file, dtype, spec)
        for dtype, spec in nonempty_table(file, "tolerances", data.get("tolerances")).items()
    }
    found = _load_cases(file, "cases", [(entry, case_module(entry)) for entry in entries], tolerances, {})
    goals = check_goals(file, data.get("goals", {}), path_table)
    return Matrix(
        file=file,
        cases=tuple(found),
        styles=tuple(style_axes),
        style_axes=style_axes,
        paths=paths,
        tolerances=tolerances,
        modules={case: module for case, (module, _) in found.items()},
        dtypes={case: dtype for case, (_, dtype) in found.items()},
        docs=None if docs is None else resolve_docs(file, docs, style_axes, list(path_table)),
        environment=environment,
        reruns=_reruns(file, data.get("run", {})),
        goals=goals,
        goal_sets=check_goal_sets(file, data.get("goal_sets", {}), goals),
    )


def _reruns(file: Path, value: Any) -> int:
    """The optional [run] table: ``reruns``, how many more times a cell that ends wrong (or unlike its
    baseline) runs, each in a fresh cell process, so the chart shows its measured rate."""
    if not isinstance(value, dict):
        raise InputError(file, "run", "expected a table")
    no_unknown(file, "run.", value, set(), {"reruns"})
    reruns = value.get("reruns", DEFAULT_RERUNS)
    if isinstance(reruns, bool) or not isinstance(reruns, int) or reruns < 0:
        raise InputError(file, "run.reruns", f"expected a whole number >= 0, got {reruns!r}")
    return reruns


def _styles(file: Path, data: dict[str, Any]) -> dict[str, tuple[str | None, str]]:
    """Style id -> (decorator, wrapper), in chart order: every decorator of ``decorators`` inside every wrapper
    of ``wrappers`` (plus the control when ``control = true``), or the style ids ``styles`` lists."""

    axes = [key for key in STYLE_KEYS if key in data]
    if "styles" in data:
        if axes:
            raise InputError(file, axes[0], "give either styles or the axes (decorators, wrappers, control), not both")
        return {style: KNOWN_STYLES[style] for style in id_list(file, "styles", data, KNOWN_STYLES)}
    if not axes:
        raise InputError(file, "styles", "missing (declare the axes decorators and wrappers, or list styles)")
    for key in ("decorators", "wrappers"):
        if key not in data:
            raise InputError(file, key, "missing (the styles cross decorators with wrappers)")
    control = data.get("control", False)
    if not isinstance(control, bool):
        raise InputError(file, "control", f"expected true or false, got {control!r}")
    return cross(id_list(file, "decorators", data, DECORATORS), id_list(file, "wrappers", data, WRAPPERS), control)


Found = dict[str, tuple[str, str]]  # case id -> (the module defining it, its dtype's name), in matrix order


def _load_cases(
    file: Path | str, key: str, entries: list[tuple[str, str]], tolerances: dict[str, Tolerance], found: Found
) -> Found:
    """Import each (entry, module); ``found`` grows by the cases each defines, in order. A module of
    built-in case's module must define the case named by its entry; another module may define several (``CASES``)."""
    for index, (entry, module) in enumerate(entries):
        where = f"{key}[{index}]"
        try:
            # a module calling os._exit, or whose import never ends: a case that does not load
            with exits_raise(), time_limit(IMPORT_SECONDS, IMPORT_NOTICE_SECONDS, _import_notice(module)):
                cases = load_cases(module)
        except ModuleNotFoundError as error:
            if not _names_the_module(error, module):  # the module exists and imports one that does not
                raise InputError(
                    file, where, f"case {entry!r} does not load: {type(error).__name__}: {error}"
                ) from None
            close = get_close_matches(entry, sorted(case_ids()), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            problem = f"unknown case {entry!r}{hint} (neither a case id nor a module): {error}"
            raise InputError(file, where, problem) from None
        except TimeUp:
            problem = f"case {entry!r} does not load: its import did not end in {IMPORT_SECONDS:g} s"
            raise InputError(file, where, problem) from None
        except (SystemExit, CaseExited) as error:  # a module that exits: one line, exit 2, never a run of nothing
            raise InputError(file, where, f"case {entry!r} does not load: {exit_words(error)} at import") from None
        except Exception as error:  # a broken user module: say so in one line
            problem = f"case {entry!r} does not load: {type(error).__name__}: {error}{_field_hint(error)}"
            raise InputError(file, where, problem + _line_in(module, error)) from None
        if entry in case_ids() and [case.id for case in cases] != [entry]:
            raise InputError(file, where, f"module {module} defines case(s) {[c.id for c in cases]}, not {entry!r}")
        for case in cases:
            _check_case(file, where, case, module, tolerances, found)
            found[case.id] = (module, dtype_name(case.dtype))
    return found


def _import_notice(module: str) -> Callable[[], str]:
    """The line a case module's import still running after ``IMPORT_NOTICE_SECONDS`` prints."""
    return lambda: (
        f"harness: importing case module {module!r}: still running after {IMPORT_NOTICE_SECONDS:g} s (it gives up "
        f"at {IMPORT_SECONDS:g} s)"
    )


def _field_hint(error: Exception) -> str:
    """``(did you mean 'shipped'?)`` for a ``Case(shiped=...)``: a keyword of Case's close to one of its fields."""
    typo = re.search(r"Case\.__init__\(\) got an unexpected keyword argument '(\w+)'", str(error))
    close = get_close_matches(typo.group(1), [f.name for f in dataclasses.fields(Case)], n=1) if typo else []
    return f" (did you mean {close[0]!r}?)" if close else ""


def _line_in(module: str, error: Exception) -> str:
    """`` (at FILE:LINE)``: the case module's own line the error was raised from, where it was."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return ""
    origin = spec.origin if spec is not None else None
    lines = [frame.lineno for frame in traceback.extract_tb(error.__traceback__) if frame.filename == origin]
    return f" (at {origin}:{lines[-1]})" if lines else ""


def _names_the_module(error: ModuleNotFoundError, module: str) -> bool:
    """Whether the missing module is ``module`` itself (or a package above it), not one it imports."""
    return error.name is not None and (module == error.name or module.startswith(error.name + "."))


def _check_case(
    file: Path | str, where: str, case: Case, module: str, tolerances: dict[str, Tolerance], found: Found
) -> None:
    if not isinstance(case.id, str) or not ID_PATTERN.fullmatch(case.id) or "." in case.id:
        raise InputError(file, where, f"{module}: bad case id {case.id!r}: use letters, digits and '_'")
    if case.id in found:
        raise InputError(file, where, f"{module}: case id {case.id!r} is already defined by {found[case.id][0]}")
    dtype = dtype_name(case.dtype)
    if dtype not in tolerances:
        raise InputError(file, f"tolerances.{dtype}", f"missing (case {case.id!r} runs in {dtype})")
    try:
        with exits_raise():
            check_case(case, tolerances[dtype])
    except CaseProblem as problem:  # a broken case, not a style's failure: before any cell runs
        raise InputError(file, where, f"{module}: {problem}") from None


def _path_spec(file: Path, path_id: str, spec: Any) -> PathSpec:
    prefix = f"paths.{path_id}"
    spec = nonempty_table(file, prefix, spec)
    no_unknown(file, prefix + ".", spec, PATH_KEYS, OPTIONAL_PATH_KEYS)
    if spec["device"] not in DEVICES:
        raise InputError(file, f"{prefix}.device", f"expected one of {', '.join(DEVICES)}, got {spec['device']!r}")
    timeout = number(file, f"{prefix}.timeout", spec["timeout"], 1)
    if timeout > MAX_TIMEOUT:  # past it the cell processes' waits overflow (OverflowError in every cell)
        raise InputError(file, f"{prefix}.timeout", f"expected a number of seconds <= {MAX_TIMEOUT:g}, got {timeout:g}")
    examples = spec.get("examples", 1)
    if isinstance(examples, bool) or not isinstance(examples, int) or examples < 1:
        raise InputError(file, f"{prefix}.examples", f"expected a whole number >= 1, got {examples!r}")
    return PathSpec(id=path_id, device=spec["device"], timeout=timeout, examples=examples)


# torch's dtypes by their own names (float32, not float): a case's dtype is named so (``dtype_name``)
DTYPE_NAMES = sorted(
    name for name, value in vars(torch).items() if isinstance(value, torch.dtype) and str(value) == f"torch.{name}"
)


def _tolerance(file: Path, dtype: str, spec: Any) -> Tolerance:
    prefix = f"tolerances.{dtype}"
    if dtype not in DTYPE_NAMES:  # a typo's tolerance was kept, and never used
        raise InputError(file, prefix, unknown_id(dtype, DTYPE_NAMES, "dtype"))
    spec = nonempty_table(file, prefix, spec)
    no_unknown(file, prefix + ".", spec, TOLERANCE_KEYS)
    return Tolerance(
        atol=number(file, f"{prefix}.atol", spec["atol"], 0), rtol=number(file, f"{prefix}.rtol", spec["rtol"], 0)
    )
