"""Cell keys and the reuse of unchanged verdicts (``--reuse RESULTS.json``).

A cell's key is a digest of everything that decides its verdict: torch, triton and CUDA versions, the GPU,
the harness's source (harness/*.py, harness/cell/paths/*.py), its case module's source (with the user's modules it
imports and the versions of the installed libraries they import: ``module_digest``), its matrix entry (case,
module, style and the style's decorator and wrapper, the path's spec, the tolerance, the matrix's reruns and
[environment]) and TRITON_INTERPRET. Every record carries its key; a later run keeps the record of a cell
whose key is unchanged instead of running it (a blind or graph_break verdict too: both are deterministic), unless
that record is not a stable verdict (wrong, flaky, crash, timeout, a CUDA fault, a cell process that failed to
start, or no key)."""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from harness.records.confirmation import is_suspect
from harness.records.environment import harness_digest
from harness.records.record import Record
from harness.records.results import Results
from harness.sources import installed_file, module_file
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
    """sha256 (16 hex) over the source file of ``module`` (a case module), those of the modules of the user's it
    imports, itself or through another (a file outside the installed packages and the standard library: a helper,
    the user's own kernel library in a checkout) and the packages above each (their ``__init__.py``), and the
    version of each installed distribution they import (the library a shipped op comes from); "" when it has no
    file. torch, triton and the harness are in every key."""
    if module_file(module) is None:
        return ""
    digest = hashlib.sha256()
    for name, found in _reached(module):
        digest.update(f"{name}=={found}\n".encode() if isinstance(found, str) else f"{name}\n".encode() + found)
    return digest.hexdigest()[:16]


def libraries(modules: Iterable[str]) -> dict[str, str]:
    """The libraries the case ``modules`` import, themselves or through a module of the user's, that a distribution
    installed (into site-packages, or with ``pip --target`` onto the path): top-level package -> its version (what
    a bug report names beside torch and triton)."""
    tops = {name.partition(".")[0] for module in modules for name, _ in _reached(module)}
    return {top: version for top in sorted(tops) if (version := _version(top))}


def _reached(module: str) -> Iterator[tuple[str, bytes | str]]:
    """What ``module`` imports, itself or through a module of the user's: each such module's name and source
    (itself first), and each installed library's top-level package and version."""
    seen: set[str] = set()
    installed: set[str] = set()  # top-level packages of installed libraries, each reported once
    pending = [module]
    while pending:
        name = pending.pop()
        top = name.partition(".")[0]
        if name in seen or top in installed or top in sys.stdlib_module_names or top in KEYED_ELSEWHERE:
            continue
        seen.add(name)
        origin = module_file(name)
        if origin is None:
            continue
        if installed_file(origin):
            installed.add(top)
            yield top, _version(top)
            continue
        source = origin.read_bytes()
        yield name, source
        package = name if origin.name == "__init__.py" else name.rpartition(".")[0]
        pending += _imported(source, package)
        pending += _parents(name)  # importing a.b.c runs a/__init__.py and a/b/__init__.py first


def _parents(name: str) -> list[str]:
    """The packages above module ``name`` (``a.b.c``: ``a``, ``a.b``), which every import of it runs first."""
    parts = name.split(".")
    return [".".join(parts[:end]) for end in range(1, len(parts))]


KEYED_ELSEWHERE = ("torch", "triton", "harness")  # versions and the harness's digest: in every key already


def _imported(source: bytes, package: str) -> list[str]:
    """The modules a source imports anywhere in it (``from a import b``: ``a``, and ``a.b`` where that is one; a
    module named by a string literal to ``importlib.import_module``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                try:
                    base = importlib.util.resolve_name("." * node.level + base, package)
                except (ImportError, ValueError):
                    continue
            names += [base, *(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")]
        elif _imports_by_name(node):  # importlib.import_module("helpers"), __import__("helpers")
            names.append(node.args[0].value)  # type: ignore[attr-defined]
    return [name for name in names if name]


def _imports_by_name(node: ast.AST) -> bool:
    """A call importing a module named by a string literal: ``importlib.import_module("x")``, ``import_module("x")``
    or ``__import__("x")`` (a relative name, ``.x``, is left out)."""
    if not isinstance(node, ast.Call) or not node.args:
        return False
    called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    first = node.args[0]
    return (
        called in ("import_module", "__import__") and isinstance(first, ast.Constant) and isinstance(first.value, str)
        and not first.value.startswith(".")
    )  # fmt: skip


def _version(top: str) -> str:
    """The version of the installed distribution that provides top-level package ``top`` ("" if none says)."""
    for dist in _distributions(tuple(sys.path)).get(top, []):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return ""


@functools.lru_cache(maxsize=4)
def _distributions(path: tuple[str, ...]) -> Mapping[str, list[str]]:
    """Top-level package -> the distributions that install it, on the import path ``path``: a scan of every
    distribution installed there, taken once per path rather than once per library a case module imports (on a
    CPU host with Liger's eight modules: 2.8 s of the run's start, before any cell)."""
    return importlib.metadata.packages_distributions()


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
