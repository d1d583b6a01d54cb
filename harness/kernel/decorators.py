"""Decorator stacks: how the case's one ``@triton.jit`` kernel is decorated before a wrapper launches it.

Each is ``(case) -> (kernel, meta)``: the decorated kernel, and the constexprs the launch must still pass
(the ones no decorator of the stack computes). Registered under the function's name, the id ``decorators``
in matrix.toml lists.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import triton

from harness.case import Case

Decorate = Callable[[Case], tuple[Any, dict[str, Any]]]
DECORATORS: dict[str, Decorate] = {}


def decorator(decorate: Decorate) -> Decorate:
    """Register a decorator stack under its function's name."""
    DECORATORS[decorate.__name__] = decorate
    return decorate


def _config_keys(case: Case) -> set[str]:
    return {key for config in case.configs for key in config.kwargs}


def _meta_without(case: Case, *dropped: set[str]) -> dict[str, Any]:
    drop = set().union(*dropped)
    return {key: value for key, value in case.meta.items() if key not in drop}


def _autotune(case: Case, kernel: Any) -> Any:
    """``@triton.autotune(configs=..., key=...)`` as a user writes it, with the case's ``autotune_options`` (e.g.
    ``restore_value``)."""
    return triton.autotune(configs=list(case.configs), key=list(case.key), **case.autotune_options)(kernel)


@decorator
def jit(case: Case) -> tuple[Any, dict[str, Any]]:
    """Plain ``@triton.jit``: every constexpr passed by the launch, from ``meta``."""
    return case.kernel, dict(case.meta)


@decorator
def autotune(case: Case) -> tuple[Any, dict[str, Any]]:
    """``@triton.autotune(configs=..., key=...)`` over the kernel as a user writes it (plus the case's
    ``autotune_options``); how the run benchmarks its configs is set from outside it (harness/cell/autotuners.py)."""
    return _autotune(case, case.kernel), _meta_without(case, _config_keys(case))


@decorator
def heuristics_autotune(case: Case) -> tuple[Any, dict[str, Any]]:
    """``@triton.heuristics`` outermost over ``@triton.autotune`` (the order the recipe calls supported): the
    heuristics run before a config is picked, so they read the call's arguments only."""
    kernel = triton.heuristics(dict(case.heuristics))(_autotune(case, case.kernel))
    return kernel, _meta_without(case, _config_keys(case), set(case.heuristics))


@decorator
def autotune_heuristics(case: Case) -> tuple[Any, dict[str, Any]]:
    """``@triton.autotune`` outermost over ``@triton.heuristics`` (the order the recipe calls unsupported): the
    heuristics run on the config the autotuner picked, so the case's ``config_heuristics`` read its values."""
    kernel = _autotune(case, triton.heuristics({**case.heuristics, **case.config_heuristics})(case.kernel))
    return kernel, _meta_without(case, _config_keys(case), set(case.heuristics))
