"""The case's own code as a short repro script carries it: the case module's source without its harness imports and
its ``Case(...)`` declaration, each field the script uses bound to a name (a field that already is a name is used
as it is), and only the top-level definitions those names need."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.util
import inspect
import sys
import textwrap
from dataclasses import MISSING, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from harness.sources import installed_file, module_file

# a field bound to a name of its own: callables keep the field's name, settings are constants
INLINED = ("shipped_args",)  # a literal value of these is written where the script uses it, not bound
CONSTANTS = ("configs", "key", "heuristics", "config_heuristics", "autotune_options", "kernels", "shipped_args")


class NotShort(Exception):
    """The case module cannot be cut down to its own code (its ``Case`` is built at run time, say): the cell gets
    the long script, the harness's code copied in."""


@dataclass
class UserCode:
    """The code kept (``text``), and the name the script reads each field by (``names``)."""

    text: str
    names: dict[str, str] = field(default_factory=dict)
    defined: set[str] = field(default_factory=set)  # every name the code defines
    whole: bool = False  # the whole module with a stand-in ``Case``: its own code cut down it is not


def user_code(module_name: str, case: Any, fields: tuple[str, ...]) -> UserCode:
    """The code of ``module_name`` that the ``fields`` of its case ``case`` need: cut down to what they use where
    the case is declared by a top-level ``Case(...)``, else the whole module with a stand-in ``Case``."""
    module = importlib.import_module(module_name)
    source = inspect.getsource(module)
    tree = ast.parse(source)
    package = module.__package__ or ""
    home = Path(module.__file__ or ".").parent
    try:
        statement, call = _declaration(tree, case.id)
        if any(kw.arg is None for kw in call.keywords):  # Case(..., **common): fields the cut-down code cannot see
            raise NotShort("its Case(...) takes fields through **: the whole module, inlined")
        if any(_harness_users(node, package, home) for node in tree.body):
            raise NotShort("it imports a module of the user's that a script must carry: the whole module, inlined")
    except NotShort:
        return _whole_module(module, source, tree, case, fields)
    keywords = {kw.arg: kw.value for kw in call.keywords if kw.arg}
    top = {name for node in tree.body for name in defined(node)}
    names: dict[str, str] = {}
    bindings: list[str] = []
    for name in fields:
        value = keywords.get(name)
        if value is None:
            continue
        text = ast.get_source_segment(source, value) or ""
        if _dotted(value):  # a name, or an attribute of one (``Fn.apply``): called as the case names it
            names[name] = text
            continue
        if name in INLINED and _is_literal(value):  # written out where it is used
            continue
        bound = name.upper() if name in CONSTANTS else name
        bound = bound if bound not in top else f"case_{bound}"
        names[name] = bound
        bindings.append(f"{bound} = ({text})" if "\n" in text else f"{bound} = {text}")
    kept = _needed(tree, source, statement, [keywords[name] for name in names], package)
    return UserCode("\n\n\n".join([kept, "\n".join(bindings)]).strip("\n") + "\n", names, top | set(names.values()))


def _declaration(tree: ast.Module, case_id: str) -> tuple[ast.stmt, ast.Call]:
    """The top-level statement declaring case ``case_id`` and its ``Case(...)`` call."""
    for node in tree.body:
        value = getattr(node, "value", None)
        calls = value.elts if isinstance(value, ast.List | ast.Tuple) else [value]
        for call in calls:
            if isinstance(call, ast.Call) and _is_case(call.func) and _case_id(call) == case_id:
                return node, call
    raise NotShort(f"no top-level Case(id={case_id!r}, ...) with literal fields")


def _is_literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except ValueError:
        return False
    return True


def _dotted(node: ast.expr) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _is_case(func: ast.expr) -> bool:
    return (isinstance(func, ast.Name) and func.id == "Case") or (
        isinstance(func, ast.Attribute) and func.attr == "Case"
    )


def _case_id(call: ast.Call) -> object:
    return next((kw.value.value for kw in call.keywords if kw.arg == "id" and isinstance(kw.value, ast.Constant)), None)


def defined(node: ast.stmt) -> set[str]:
    """The names a top-level statement binds."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.Import | ast.ImportFrom):
        return {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
    return {
        name.id for target in targets if target is not None for name in ast.walk(target) if isinstance(name, ast.Name)
    }


def _used(node: ast.AST) -> set[str]:
    return {name.id for name in ast.walk(node) if isinstance(name, ast.Name)}


def _needed(tree: ast.Module, source: str, declaration: ast.stmt, roots: list[ast.expr], package: str) -> str:
    """The module's top-level statements that the ``roots`` need, however deep, in their order; every statement that
    binds no name (a setting, say) is kept, and every import of a package outside the standard library (one may
    register the op the code calls through ``torch.ops``); the docstring, ``__future__`` and harness imports and
    the declaration left out. ``package``: the module's, which a relative import is written absolute against."""
    body = [node for node in tree.body if node is not declaration and not _dropped(node)]
    wanted = set().union(*(_used(root) for root in roots))
    kept: set[int] = set()
    changed = True
    while changed:
        changed = False
        for index, node in enumerate(body):
            if index not in kept and (_registers(node) or not defined(node) or _fills(node) & wanted):
                kept.add(index)
                wanted |= _used(node)
                changed = True
    harness = {name for node in tree.body if _dropped(node) for name in defined(node)}
    missing = sorted(wanted & harness - {"Case", *STAND_INS})
    if missing:
        raise NotShort(f"the case's code uses the harness's {', '.join(missing)}")
    stand_ins = [STAND_INS[name] for name in sorted(wanted & harness & set(STAND_INS))]
    code = _joined([body[index] for index in sorted(kept)], source.splitlines(), package)
    return "\n\n\n".join([*stand_ins, code]) if stand_ins else code


def _fills(node: ast.stmt) -> set[str]:
    """The names a top-level statement binds, and those a loop, ``with``, ``if`` or ``try`` block uses (a ``for``
    that appends to a list of configs fills that list)."""
    if isinstance(node, ast.For | ast.AsyncFor | ast.While | ast.With | ast.AsyncWith | ast.If | ast.Try):
        return defined(node) | _used(node)
    return defined(node)


def _registers(node: ast.stmt) -> bool:
    """An import of a module outside the standard library, which importing may register ops with."""
    if isinstance(node, ast.ImportFrom):
        return bool(node.level) or not _standard(node.module or "")
    return isinstance(node, ast.Import) and any(not _standard(alias.name) for alias in node.names)


def _standard(module: str) -> bool:
    """A module of the standard library."""
    return module.split(".")[0] in sys.stdlib_module_names


def _joined(nodes: list[ast.stmt], lines: list[str], package: str) -> str:
    """The statements' source, separated as a module's are: by no blank line within a run of imports or of
    assignments, by one between those runs, by two around a definition; a relative import written absolute (the
    script is no module of the case's package)."""
    text, previous = "", None
    for node in nodes:
        if previous is not None:
            text += (
                "\n"
                if _simple(node) and type(node) is type(previous)
                else "\n\n"
                if _simple(node) and _simple(previous)
                else "\n\n\n"
            )
        text += _absolute(node, package) or "\n".join(lines[_first_line(node) - 1 : node.end_lineno])
        previous = node
    return text


def _absolute(node: ast.stmt, package: str) -> str | None:
    """``from .x import y`` of a module of ``package`` as ``from package.x import y`` (None: no relative import)."""
    if not isinstance(node, ast.ImportFrom) or not node.level:
        return None
    return ast.unparse(ast.ImportFrom(module=_source_of(node, package), names=node.names, level=0))


def _simple(node: ast.stmt) -> bool:
    """An import or assignment (separated by no blank line from its own kind), not a definition."""
    return (
        not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.end_lineno == node.lineno
    )


def _dropped(node: ast.stmt) -> bool:
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
        return True  # the module's docstring
    if isinstance(node, ast.If) and ast.unparse(node.test).replace("'", '"') == '__name__ == "__main__"':
        return True  # the module's own main block (a self-test, a benchmark): not the cell's
    if isinstance(node, ast.ImportFrom):
        return node.module == "__future__" or (node.module or "").split(".")[0] == "harness"
    return isinstance(node, ast.Import) and any(alias.name.split(".")[0] == "harness" for alias in node.names)


def _first_line(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])


def _inlined(module: ModuleType, source: str, tree: ast.Module, seen: set[str], home: Path) -> str:
    """The module's statements without its harness imports (it may import ``Case`` alone: the script's stand-in
    serves it), each ``from X import ...`` of a module of the user's that imports the harness replaced by that
    module's own statements, inlined so (each once, where first imported), and a line for each name it renamed."""
    harness = [node for node in tree.body if _dropped(node) and not isinstance(node, ast.Expr)]
    if any(defined(node) - {"Case", "annotations", *STAND_INS} for node in harness):
        raise NotShort(f"{module.__name__} uses more of the harness than Case")
    package, lines = module.__package__ or "", source.splitlines()
    parts: list[str] = []
    run: list[ast.stmt] = []
    for node in tree.body:
        if _dropped(node):
            continue
        helpers = _harness_users(node, package, home)
        if not helpers:
            run.append(node)
            continue
        parts += [_joined(run, lines, package)] if run else []
        run = []
        parts += _kept_imports(node, helpers, package)
        for name, bound in helpers.items():
            helper = importlib.import_module(name)
            text = inspect.getsource(helper)
            helper_tree = ast.parse(text)
            if name not in seen:
                seen.add(name)
                parts.append(f"# ---- from {name} ----\n\n" + _inlined(helper, text, helper_tree, seen, home))
            if bound is not None:  # ``import name``: its names read through it, as the module reads them
                parts.append(_namespace(name, helper_tree, bound))
        if isinstance(node, ast.ImportFrom) and None in helpers.values():
            renamed = [f"{a.asname} = {a.name}" for a in node.names if a.asname not in (None, a.name)]
            parts += ["\n".join(renamed)] if renamed else []
    parts += [_joined(run, lines, package)] if run else []
    return "\n\n\n".join(parts)


def _kept_imports(node: ast.Import | ast.ImportFrom, helpers: dict[str, str | None], package: str) -> list[str]:
    """What an import of inlined ``helpers`` still imports of its own: the other modules of an ``import a, b``, the
    other names of a ``from package import module, name``; nothing of a ``from module import ...`` inlined whole."""
    if isinstance(node, ast.Import):
        others = [alias for alias in node.names if alias.name not in helpers]
        return [ast.unparse(ast.Import(names=others))] if others else []
    if None in helpers.values():
        return []
    source = _source_of(node, package)
    others = [alias for alias in node.names if f"{source}.{alias.name}" not in helpers]
    return [ast.unparse(ast.ImportFrom(module=source, names=others, level=0))] if others else []


def _namespace(name: str, tree: ast.Module, bound: str) -> str:
    """``import name`` (as ``bound``) of a module inlined above (``tree``): a namespace of the names it defines."""
    statements = [node for node in tree.body if not isinstance(node, ast.Import | ast.ImportFrom)]
    own = sorted(name for node in statements for name in defined(node))
    listed = textwrap.indent(textwrap.fill(", ".join(f"{name}={name}" for name in own), 112), "    ")
    return f"import types\n{bound} = types.SimpleNamespace(  # import {name}, inlined above\n{listed})"


def _harness_users(node: ast.stmt, package: str, home: Path) -> dict[str, str | None]:
    """The modules of the user's that import the harness which ``node`` imports: each -> the name ``import X``
    binds it to (None for ``from X import ...``, whose names the inlined code defines)."""
    if isinstance(node, ast.ImportFrom):
        if _from_harness_user(node, package, home):
            return {_source_of(node, package): None}
        if _dropped(node):
            return {}
        source = _source_of(node, package)  # ``from package import module``: each such module, bound to its name
        submodules = {f"{source}.{alias.name}": alias.asname or alias.name for alias in node.names}
        return {name: bound for name, bound in submodules.items() if _carried(name, set(), home)}
    if not isinstance(node, ast.Import) or _dropped(node):
        return {}
    return {
        alias.name: alias.asname or alias.name
        for alias in node.names
        if ("." not in alias.name or alias.asname) and _carried(alias.name, set(), home)  # ``import a.b`` binds a
    }


def _source_of(node: ast.ImportFrom, package: str) -> str:
    """The module ``node`` imports from, by its absolute name."""
    if not node.level:
        return node.module or ""
    return importlib.util.resolve_name("." * node.level + (node.module or ""), package)


def _from_harness_user(node: ast.stmt, package: str, home: Path) -> bool:
    """A ``from X import ...`` of a module of the user's (not installed, nor the standard library's) that imports
    the harness, itself or through another such module: a script cannot import it where the harness is not."""
    if not isinstance(node, ast.ImportFrom) or _dropped(node):
        return False
    return _carried(_source_of(node, package), set(), home)


def _carried(name: str, seen: set[str], home: Path) -> bool:
    """A module of the user's that the script must carry inlined: one that imports the harness (itself or through
    another such module), or a plain file beside the case module (``home``: its folder), which no installed
    package provides: a script copied elsewhere could import neither."""
    return _beside(name, home) or _imports_harness(name, seen)


def _beside(name: str, home: Path) -> bool:
    if _standard(name):
        return False
    origin = module_file(name)
    return (
        origin is not None and origin.suffix == ".py" and origin.name != "__init__.py" and origin.parent == home
        and not installed_file(origin)
    )  # fmt: skip


def _imports_harness(name: str, seen: set[str]) -> bool:
    if name in seen or _standard(name):
        return False
    seen.add(name)
    origin = module_file(name)
    if origin is None or origin.suffix != ".py" or installed_file(origin):
        return False
    tree = ast.parse(origin.read_text(errors="replace"))
    package = name if origin.name == "__init__.py" else name.rpartition(".")[0]
    return any(
        (_dropped(node) and isinstance(node, ast.Import | ast.ImportFrom) and defined(node) - {"annotations"})
        or (isinstance(node, ast.ImportFrom) and _imports_harness(_source_of(node, package), seen))
        or (isinstance(node, ast.Import) and any(_imports_harness(alias.name, seen) for alias in node.names))
        for node in tree.body
    )


STAND_INS = {"Inputs": "Inputs = tuple  # harness.case's Inputs, the type of what make_inputs gives: a tuple"}
STAND_IN = """class Case:  # the module's case declarations, as plain objects: the harness's Case is not needed here
{defaults}    def __init__(self, **fields):
        self.__dict__.update(fields)"""


def stand_in(read: set[str]) -> str:
    """The stand-in ``Case``, with harness.case.Case's default of each field in ``read`` (the attributes the
    module's code reads, by name or by a string) that a literal writes (it comes before the module's imports): a
    case declared without ``outputs`` still has its 1."""
    from harness.case import Case

    defaults = []
    for spec in dataclasses.fields(Case):
        if spec.name not in read or (spec.default is MISSING and spec.default_factory is MISSING):
            continue
        value = spec.default if spec.default is not MISSING else spec.default_factory()  # type: ignore[misc]
        try:
            ast.literal_eval(repr(value))
        except (ValueError, SyntaxError):  # torch.float32: the stand-in comes before ``import torch``
            continue
        defaults.append(f"    {spec.name} = {value!r}\n")
    return STAND_IN.format(defaults="".join(defaults) + ("\n" if defaults else ""))


def _whole_module(module: ModuleType, source: str, tree: ast.Module, case: Any, fields: tuple[str, ...]) -> UserCode:
    """The module as it is (its harness imports left out) with a stand-in ``Case`` defined first, ``CASE`` the case,
    and each field read by the module's own name for its value, else bound from ``CASE``."""
    body = _inlined(module, source, tree, set(), Path(module.__file__ or ".").parent)
    single = getattr(module, "CASE", None)
    pick = (
        "" if single is not None and single.id == case.id else f"\nCASE = next(c for c in CASES if c.id == {case.id!r})"
    )
    names: dict[str, str] = {}
    bindings: list[str] = []
    owners = {id(value): name for name, value in vars(module).items() if not name.startswith("_")}
    for name in fields:
        value = getattr(case, name, None)
        if value is None or (isinstance(value, dict | list | tuple | str) and not value):
            continue
        owner = getattr(value, "__self__", None)
        if inspect.isclass(owner) and id(owner) in owners and getattr(value, "__name__", "") == "apply":
            names[name] = f"{owners[id(owner)]}.apply"  # a Function's apply, called through its class
        elif id(value) in owners:
            names[name] = owners[id(value)]
        else:
            names[name] = name.upper() if name in CONSTANTS else f"case_{name}"
            bindings.append(f"{names[name]} = CASE.{name}")
    top = {name for node in tree.body for name in defined(node)}
    used = _used(ast.parse(body))  # the module's and its inlined helpers' code
    stand_ins = [line for name, line in STAND_INS.items() if name in used]
    nodes = list(ast.walk(ast.parse(body)))  # the attributes it reads, and the strings that may name one
    read = {node.attr for node in nodes if isinstance(node, ast.Attribute)}
    read |= {node.value for node in nodes if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    text = "\n\n\n".join([stand_in(read), *stand_ins, body + "\n" + pick, "\n".join(bindings)])
    return UserCode(text.strip("\n") + "\n", names, top | set(names.values()), whole=True)
