"""What a repro script takes from a module's source (harness/report/repro.py): the names a top-level statement
binds and uses, a definition's source without its ``@style`` / ``@path`` registration, and the imports a script
needs."""

from __future__ import annotations

import ast

REGISTRY_DECORATORS = {"decorator", "wrapper", "path"}


def bound_names(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.FunctionDef | ast.ClassDef):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [target.id for target in node.targets if isinstance(target, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def used_names(node: ast.AST) -> set[str]:
    """Names a definition uses (its ``@style`` / ``@path`` registration aside)."""
    registrations = {
        id(decorator)
        for child in ast.walk(node)
        for decorator in getattr(child, "decorator_list", [])
        if isinstance(decorator, ast.Name) and decorator.id in REGISTRY_DECORATORS
    }
    return {child.id for child in ast.walk(node) if isinstance(child, ast.Name) and id(child) not in registrations}


def used_imports(statements: set[str], used: set[str]) -> list[str]:
    """The import statements, merged per module and cut down to the names the script uses."""
    plain: set[str] = set()
    names_from: dict[str, set[str]] = {}
    for statement in statements:
        node = ast.parse(statement).body[0]
        for alias in node.names:  # type: ignore[attr-defined]
            bound = alias.asname or alias.name.split(".")[0]
            if bound not in used:
                continue
            if isinstance(node, ast.ImportFrom):
                names_from.setdefault(node.module or "", set()).add(ast.unparse(alias))
            else:
                plain.add(f"import {ast.unparse(alias)}")
    froms = [f"from {module} import {', '.join(sorted(names))}" for module, names in names_from.items()]
    return sorted(plain) + sorted(froms)


def without_registry(source: str, node: ast.stmt) -> str:
    """The definition's source, minus the ``@style`` / ``@path`` registration (the repro calls it directly)."""
    decorators = getattr(node, "decorator_list", [])
    kept = [d for d in decorators if not (isinstance(d, ast.Name) and d.id in REGISTRY_DECORATORS)]
    body = ast.get_source_segment(source, node) or ""
    return "".join(f"@{ast.get_source_segment(source, d)}\n" for d in kept) + body
