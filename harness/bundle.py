"""Bundles: the source text of some of the harness's functions and classes, with every harness definition they
use, however deep, and the imports they need, as one flat module a fresh Python runs with no harness installed.
A repro script is such a bundle around the very functions its cell ran (harness/cell/program.py), so the cell and
its script run one program text; its digest is the sha256 of that text."""

from __future__ import annotations

import ast
import builtins
import hashlib
import importlib
import inspect
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

HARNESS = "harness"
# decorators that only register a definition with its registry (``@path``, ``@wrapper``, ``@decorator``): a
# bundle calls the definition by its name, so the line is left out
REGISTRARS = {
    "harness.cell.paths.common.path",
    "harness.kernel.wrappers.wrapper",
    "harness.kernel.decorators.decorator",
}


class BundleError(Exception):
    """A definition cannot be bundled (an import of the harness inside a function, two definitions of one name)."""


@dataclass(frozen=True)
class Item:
    """One top-level definition: its module, name and source text (registering decorators left out), and the
    names it reads as it is defined (a class's bases, an assignment's value), which must be defined before it."""

    module: str
    name: str
    source: str
    eager: frozenset[str] = frozenset()

    @property
    def qualified(self) -> str:
        return f"{self.module}.{self.name}"


@dataclass
class Bundle:
    """Definitions, dependencies first, and the import lines they need."""

    items: list[Item] = field(default_factory=list)
    imports: set[str] = field(default_factory=set)

    def names(self) -> dict[str, str]:
        return {item.name: item.qualified for item in self.items}

    def text(self, modules: tuple[str, ...] | None = None) -> str:
        """The definitions (of ``modules`` only, by prefix, if given), separated as a module's are."""
        chosen = [item for item in self.items if modules is None or item.module.startswith(modules)]
        return "\n\n\n".join(item.source for item in chosen)

    def import_lines(self) -> str:
        lines = sorted(self.imports)
        plain = [line for line in lines if line.startswith("import ")]
        return "\n".join(plain + [line for line in lines if line.startswith("from ")])

    def digest(self) -> str:
        """sha256 of the imports and every definition: what a cell records and its script holds."""
        return hashlib.sha256((self.import_lines() + "\n" + self.text()).encode()).hexdigest()


def bundle(roots: list[Any], extra_imports: tuple[str, ...] = ()) -> Bundle:
    """The bundle of ``roots``: functions or classes defined at the top level of harness modules, or
    ``(module name, name)`` pairs (a constant's); ``extra_imports``: import lines added as they are."""
    found = Bundle(imports=set(extra_imports))
    seen: set[tuple[str, str]] = set()
    for root in roots:
        module, name = root if isinstance(root, tuple) else (root.__module__, root.__name__)
        _visit(importlib.import_module(module), name, found, seen)
    _check_names(found)
    found.items = _ordered(found.items)
    return found


def harness_imports(source: str) -> list[tuple[str, str]]:
    """``(module, name)`` of each name a module's text imports from the harness at its top level (a case module's
    ``Case``, ...)."""
    names = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == HARNESS:
            for alias in node.names:
                if alias.asname not in (None, alias.name):
                    raise BundleError(f"'from {node.module} import {alias.name} as {alias.asname}': import it as is")
                names.append((str(node.module), alias.name))
    return names


@dataclass(frozen=True)
class _Parsed:
    definitions: dict[str, ast.stmt]
    imports: dict[str, tuple[ast.stmt, ast.alias]]
    lines: list[str]


_PARSED: dict[str, _Parsed] = {}


def _parsed(module: ModuleType) -> _Parsed:
    if module.__name__ not in _PARSED:
        source = inspect.getsource(module)
        definitions: dict[str, ast.stmt] = {}
        imports: dict[str, tuple[ast.stmt, ast.alias]] = {}
        for node in ast.parse(source).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                definitions[node.name] = node
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    for bound in target.elts if isinstance(target, ast.Tuple) else [target]:
                        if isinstance(bound, ast.Name):
                            definitions[bound.id] = node
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                definitions[node.target.id] = node
            elif isinstance(node, ast.Import | ast.ImportFrom) and getattr(node, "module", None) != "__future__":
                for alias in node.names:
                    imports[(alias.asname or alias.name).split(".")[0]] = (node, alias)
        _PARSED[module.__name__] = _Parsed(definitions, imports, source.splitlines())
    return _PARSED[module.__name__]


def _visit(module: ModuleType, name: str, found: Bundle, seen: set[tuple[str, str]]) -> None:
    key = (module.__name__, name)
    if key in seen:
        return
    seen.add(key)
    parsed = _parsed(module)
    if name not in parsed.definitions:
        if name in parsed.imports:
            _visit_import(module, name, found, seen)
            return
        raise BundleError(f"{module.__name__}.{name}: no top-level definition to bundle")
    item, used = _analysed(module, name)
    for one in used:
        if one in parsed.definitions:
            _visit(module, one, found, seen)
        else:
            _visit_import(module, one, found, seen)
    if not any(one.module == item.module and one.source == item.source for one in found.items):
        found.items.append(item)  # (``A, B = ...`` defines two names in one item)


_ANALYSED: dict[tuple[str, str], tuple[Item, list[str]]] = {}


def _analysed(module: ModuleType, name: str) -> tuple[Item, list[str]]:
    """The definition's item, and the module's names it reads (definitions and imports), once per process."""
    key = (module.__name__, name)
    if key not in _ANALYSED:
        parsed = _parsed(module)
        node = parsed.definitions[name]
        for inner in ast.walk(node):
            if isinstance(inner, ast.Import | ast.ImportFrom) and from_harness(inner):
                raise BundleError(f"{module.__name__}.{name} imports the harness inside itself: import it at the top")
        registrars = _registrars(module, node, parsed)
        every = _names_used(node, registrars)
        used = [one for one in sorted(every) if one != name and (one in parsed.definitions or one in parsed.imports)]
        from_file = "__file__" in every and isinstance(node, ast.Assign | ast.AnnAssign)
        source = _value(name, getattr(module, name)) if from_file else _source(node, parsed, registrars)
        _ANALYSED[key] = (Item(module.__name__, name, source, frozenset(_eager_names(node, registrars))), used)
    return _ANALYSED[key]


def _visit_import(module: ModuleType, name: str, found: Bundle, seen: set[tuple[str, str]]) -> None:
    node, alias = _parsed(module).imports[name]
    if not from_harness(node):
        found.imports.add(_import_line(node, alias))
        return
    if not isinstance(node, ast.ImportFrom) or alias.asname not in (None, alias.name):
        raise BundleError(f"{module.__name__}: 'import {alias.name}' of the harness cannot be bundled: import names")
    assert node.module is not None
    _visit(importlib.import_module(node.module), alias.name, found, seen)


def from_harness(node: ast.Import | ast.ImportFrom) -> bool:
    """Whether an import statement imports from the harness."""
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").split(".")[0] == HARNESS
    return any(alias.name.split(".")[0] == HARNESS for alias in node.names)


def _import_line(node: ast.stmt, alias: ast.alias) -> str:
    named = f"{alias.name} as {alias.asname}" if alias.asname else alias.name
    if isinstance(node, ast.ImportFrom):
        return f"from {node.module} import {named}"
    return f"import {named}"


def _names_used(node: ast.AST, skipped: list[ast.expr]) -> set[str]:
    """Every name ``node`` reads, its annotations and ``skipped`` decorators aside (annotations are never evaluated:
    ``from __future__ import annotations``)."""
    used: set[str] = set()
    stack: list[ast.AST] = [node]
    while stack:
        current = stack.pop()
        if any(current is one for one in skipped):
            continue
        if isinstance(current, ast.Name) and isinstance(current.ctx, ast.Load):
            used.add(current.id)
        for name, child in ast.iter_fields(current):
            if name in ("annotation", "returns"):
                continue
            children = child if isinstance(child, list) else [child]
            stack += [one for one in children if isinstance(one, ast.AST)]
    return used


def _eager_names(node: ast.stmt, skipped: list[ast.expr]) -> set[str]:
    """The names ``node`` reads when it runs as a top-level statement: a function's decorators and defaults, a
    class's bases, decorators and body (its methods' bodies aside), an assignment's value."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        heads: list[ast.AST] = [*node.decorator_list, *node.args.defaults, *node.args.kw_defaults]
        return set().union(*(_names_used(head, skipped) for head in heads if head is not None))  # type: ignore[arg-type]
    if isinstance(node, ast.ClassDef):
        names = set().union(*(_names_used(head, skipped) for head in [*node.decorator_list, *node.bases]))  # type: ignore[arg-type]
        for keyword in node.keywords:
            names |= _names_used(keyword.value, skipped)  # type: ignore[arg-type]
        for statement in node.body:
            names |= _eager_names(statement, skipped)
        return names
    return _names_used(node, skipped)


def _ordered(items: list[Item]) -> list[Item]:
    """``items`` with each after the definitions it reads as it is defined, else in the order found."""
    by_name = {item.name: item for item in items}
    placed: dict[str, Item] = {}
    placing: set[str] = set()

    def place(item: Item) -> None:
        if item.name in placed:
            return
        if item.name in placing:
            raise BundleError(f"{item.qualified} reads itself as it is defined, through {sorted(item.eager)}")
        placing.add(item.name)
        for name in sorted(item.eager):
            if name in by_name and name != item.name:
                place(by_name[name])
        placed[item.name] = item

    for item in items:
        place(item)
    return list(placed.values())


def _registrars(module: ModuleType, node: ast.stmt, parsed: _Parsed) -> list[ast.expr]:
    """The decorators of ``node`` that only register it (``REGISTRARS``)."""
    found = []
    for one in getattr(node, "decorator_list", []):
        if isinstance(one, ast.Name) and (one.id in parsed.imports or one.id in parsed.definitions):
            target = getattr(module, one.id)
            if f"{getattr(target, '__module__', '')}.{getattr(target, '__qualname__', '')}" in REGISTRARS:
                found.append(one)
    return found


def _value(name: str, value: Any) -> str:
    """A constant read from a file beside its module (``__file__``), as a literal: a bundle has no such file."""
    if isinstance(value, str) and '"""' not in value and not value.endswith("\\"):
        return f'{name} = r"""{value}"""  # read from a file beside its module'
    return f"{name} = {value!r}  # read from a file beside its module"


def _source(node: ast.stmt, parsed: _Parsed, registrars: list[ast.expr]) -> str:
    """The definition's lines, its registering decorators' (``registrars``) left out."""
    decorators = getattr(node, "decorator_list", [])
    start = min([node.lineno, *(one.lineno for one in decorators)])
    assert node.end_lineno is not None
    dropped: set[int] = set()
    for one in registrars:
        dropped.update(range(one.lineno, (one.end_lineno or one.lineno) + 1))
    lines = [parsed.lines[n - 1] for n in range(start, node.end_lineno + 1) if n not in dropped]
    return "\n".join(lines)


def _check_names(found: Bundle) -> None:
    """A flat module holds one definition per name, and none that hides a builtin the others call."""
    owners: dict[str, str] = {}
    for item in found.items:
        if item.name in owners:
            raise BundleError(f"two definitions named {item.name!r}: {owners[item.name]} and {item.qualified}")
        if hasattr(builtins, item.name):
            raise BundleError(f"{item.qualified} hides the builtin {item.name!r} in a flat module: rename it")
        owners[item.name] = item.qualified
    for line in sorted(found.imports):
        bound = line.rpartition(" as ")[2] if " as " in line else line.split()[-1].split(".")[0]
        if bound in owners and not (line.startswith("import ") and owners[bound].startswith("import ")):
            raise BundleError(f"{owners[bound]} and '{line}' bind one name")
        owners[bound] = line
