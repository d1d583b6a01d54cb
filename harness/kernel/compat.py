"""What the harness reaches inside Triton and PyTorch that moved between the releases it runs on (pyproject.toml's
range): each reached by a feature check, never by a version number, with what to do where it is absent.

- ``triton_key``, Triton's hash of its own code: ``triton.runtime.cache`` (3.5 on), ``triton.compiler.compiler``
  before; hashed ahead of the forks only as a speed-up.
- the hook Triton calls at every compiled kernel's launch: ``triton.knobs.runtime.launch_enter_hook`` (3.4 on; a
  ``HookChain`` from 3.7), ``CompiledKernel.launch_enter_hook`` before.
- the interpreter's launch: ``InterpretedFunction.run`` (3.6 on); before, an instance's own ``run`` and
  ``kernel[grid]`` both end in ``GridExecutor.__call__``.
- Triton's stored autotuning results (``triton.knobs.autotuning.cache``, 3.4 on; before, none were stored)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

TRITON_KEY_MODULES = ("triton.runtime.cache", "triton.compiler.compiler")


def triton_key() -> Callable[[], str] | None:
    """Triton's ``triton_key`` wherever this Triton keeps it; None where it has none."""
    for module in TRITON_KEY_MODULES:
        try:
            found = getattr(importlib.import_module(module), "triton_key", None)
        except ImportError:
            continue
        if callable(found):
            return found
    return None


def launch_hooks() -> tuple[Any, str]:
    """The object holding this Triton's launch-enter hook and the attribute's name."""
    import triton

    knobs = getattr(triton, "knobs", None)
    if knobs is not None and hasattr(knobs.runtime, "launch_enter_hook"):
        return knobs.runtime, "launch_enter_hook"
    from triton.compiler.compiler import CompiledKernel

    return CompiledKernel, "launch_enter_hook"


def interpreter_launches() -> tuple[type, str, Callable[[Any], Any]]:
    """Where the interpreter launches a kernel: (class, method name, the launched function from ``self``)."""
    from triton.runtime import interpreter

    if "run" in vars(interpreter.InterpretedFunction):
        return interpreter.InterpretedFunction, "run", lambda self: self
    return interpreter.GridExecutor, "__call__", lambda self: self.fn


def forget_interpreted_kernels() -> None:
    """Empty the interpreter's rewritten kernels (``InterpretedFunction.rewritten_fn``, one dict for the process)."""
    from triton.runtime import interpreter

    rewritten = getattr(interpreter.InterpretedFunction, "rewritten_fn", None)
    if isinstance(rewritten, dict):
        rewritten.clear()


def store_autotuning(on: bool) -> None:
    """Whether Triton's autotuners store their results on disk for later processes (where this Triton can)."""
    import triton

    knobs = getattr(triton, "knobs", None)
    if knobs is not None and hasattr(knobs, "autotuning"):
        knobs.autotuning.cache = on
