"""The ``@triton.autotune`` kernels a built style can launch, found by walking what it holds (its functions'
closures and defaults, the globals of its own and its library's functions, autograd.Function classes, custom op
definitions, a decorator's ``fn``), never torch's or Triton's own modules. A Triton autotuner keeps the config it
picked per key in memory (``Autotuner.cache``); the runner empties it before each cell, so that every cell
autotunes as a fresh process does, whichever cells of the same style ran before it in this process (what a cell
measures, its peak GPU memory with autotuning's benchmark buffers among it, and a kernel wrong whenever its configs
are benchmarked, must not depend on cell order)."""

from __future__ import annotations

import gc
import types
from typing import Any

from triton.runtime.autotuner import Autotuner

LIBRARIES = ("torch", "triton", "builtins", "numpy", "sympy", "typing", "collections", "functools", "abc", "enum")
OWN = ("harness",)  # whose functions' globals are not walked (the harness's registries hold every style built)
MAX_OBJECTS = 200_000  # a walk stops after this many objects (a style holding a whole program)


def reachable_autotuners(root: object) -> list[Autotuner]:
    """Every ``Autotuner`` reachable from ``root`` through code outside ``LIBRARIES``."""
    found: dict[int, Autotuner] = {}
    seen: set[int] = set()
    todo: list[Any] = [root]
    while todo and len(seen) < MAX_OBJECTS:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, Autotuner):
            found[id(obj)] = obj
        todo += _next(obj)
    return list(found.values())


def _library(obj: object, also: tuple[str, ...] = ()) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return module.split(".")[0] in (*LIBRARIES, *also)


def _next(obj: object) -> list[Any]:
    """What the walk visits after ``obj``: a function's closure, defaults and (for code outside the libraries and
    the harness) its module's globals; a class's namespace; a decorator's ``fn``; an object's referents."""
    if isinstance(obj, types.ModuleType | types.BuiltinFunctionType | str | bytes | int | float):
        return []
    if isinstance(obj, types.FunctionType):
        cells = [cell.cell_contents for cell in obj.__closure__ or () if _filled(cell)]
        held = [*cells, *(obj.__defaults__ or ()), *(obj.__kwdefaults__ or {}).values()]
        return held if _library(obj, OWN) else [*held, *obj.__globals__.values()]
    if isinstance(obj, type):
        return [] if _library(obj) else list(vars(obj).values())
    if hasattr(obj, "fn") and type(obj).__module__.startswith("triton"):  # Autotuner, Heuristics over a kernel
        return [obj.fn]
    if type(obj).__module__.startswith("triton"):
        return []
    return gc.get_referents(obj)


def _filled(cell: types.CellType) -> bool:
    try:
        cell.cell_contents  # noqa: B018 (an empty cell raises)
    except ValueError:
        return False
    return True
