"""The ``@triton.autotune`` kernels a built style can launch, found by walking what it holds (its functions'
closures and defaults, the globals of its own and its library's functions, autograd.Function classes, custom op
definitions, a decorator's ``fn``), never torch's or Triton's own modules. A Triton autotuner keeps the config it
picked per key in memory (``Autotuner.cache``); the runner empties it before each cell, so that every cell
autotunes as a fresh process does, whichever cells of the same style ran before it in this process (what a cell
measures, its peak GPU memory with autotuning's benchmark buffers among it, and a kernel wrong whenever its configs
are benchmarked, must not depend on cell order). The runner also gives each the run's benchmark
(``benchmark_with``): the decorators stay as their users write them."""

from __future__ import annotations

import gc
import types
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import triton.testing
from triton.runtime.autotuner import Autotuner

from harness.kernel.interpreter import once_each_bench, triton_interpreted
from harness.spec import AUTOTUNE_REP_MS, AUTOTUNE_WARMUP_MS

LIBRARIES = ("torch", "triton", "builtins", "numpy", "sympy", "typing", "collections", "functools", "abc", "enum")
OWN = ("harness",)  # whose functions' globals are not walked (the harness's registries hold every style built)
MAX_OBJECTS = 200_000  # a walk stops after this many objects (a style holding a whole program)


Bench = Callable[[Callable[[], None], Sequence[float]], Any]


def short_bench(kernel_call: Callable[[], None], quantiles: Sequence[float]) -> Any:
    """Triton's ``do_bench`` over ``AUTOTUNE_WARMUP_MS`` then ``AUTOTUNE_REP_MS`` (the L2 cache flushed before each
    call, about a hundred calls of a small kernel): every config still runs many times on the call's own arguments,
    as under Triton's default (25 and 100 ms), at a tenth of its GPU time, for the run's many processes autotuning
    afresh on one GPU."""
    return triton.testing.do_bench(kernel_call, warmup=AUTOTUNE_WARMUP_MS, rep=AUTOTUNE_REP_MS, quantiles=quantiles)


def run_benchmark() -> Bench:
    """The run's benchmark of an autotuner's configs (``harness.spec.autotune_benchmark`` says it in words):
    ``short_bench`` on a device; under Triton's interpreter, whose autotuner asks a device's driver for its
    benchmark and finds none ("0 active drivers"), each config once, the first kept (``once_each_bench``)."""
    return once_each_bench if triton_interpreted() else short_bench


def benchmark_with(tuners: Iterable[Autotuner], bench: Bench) -> None:
    """Give each autotuner that names no benchmark of its own (``do_bench=``, or the deprecated ``warmup``/``rep``,
    which set Triton's ``_do_bench``) ``bench``, where Triton would ask the active driver for its default at the
    autotuner's first benchmark (``Autotuner.do_bench``). Set on the object, from outside its decorator: the user's
    ``@triton.autotune(configs=..., key=...)`` stays as written, and a repro script benchmarks as a user's process
    does."""
    for tuner in tuners:
        if getattr(tuner, "_do_bench", None) is None:
            tuner.do_bench = bench


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
    if type(obj).__module__.startswith("triton"):  # an Autotuner or Heuristics: the kernel under it; else nothing
        return [obj.fn] if hasattr(obj, "fn") else []
    return gc.get_referents(obj)


def _filled(cell: types.CellType) -> bool:
    try:
        cell.cell_contents  # noqa: B018 (an empty cell raises)
    except ValueError:
        return False
    return True
