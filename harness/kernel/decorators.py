"""Decorator stacks: how the case's one ``@triton.jit`` kernel is decorated before a wrapper launches it.

Each is ``(case) -> (kernel, meta)``: the decorated kernel, and the constexprs the launch must still pass
(the ones no decorator of the stack computes). Registered under the function's name, the id ``decorators``
in matrix.toml lists.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import triton
import triton.testing

from harness.case import Case
from harness.kernel.interpreter import triton_interpreted, wall_clock_bench

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


BENCH_WARMUP_MS, BENCH_REP_MS = 2, 10  # what each config's benchmark runs for (Triton's default: 25 and 100 ms)


def short_bench(kernel_call: Callable[[], None], quantiles: Any) -> Any:
    """Triton's ``do_bench`` over ``BENCH_WARMUP_MS`` then ``BENCH_REP_MS`` (the L2 cache flushed before each call,
    about a hundred calls of a small kernel): every config still runs many times on the call's own arguments, as
    under Triton's default, at a tenth of its GPU time (every cell autotunes afresh, up to 14 at once on one GPU)."""
    return triton.testing.do_bench(kernel_call, warmup=BENCH_WARMUP_MS, rep=BENCH_REP_MS, quantiles=quantiles)


def _autotune(case: Case, kernel: Any) -> Any:
    """``@triton.autotune`` benchmarked by ``short_bench`` (the case's ``autotune_options`` may name its own); in
    Triton's interpreter, by the wall clock (no device to time on)."""
    options = {"do_bench": wall_clock_bench if triton_interpreted() else short_bench}
    options.update(case.autotune_options)
    return triton.autotune(configs=list(case.configs), key=list(case.key), **options)(kernel)


@decorator
def jit(case: Case) -> tuple[Any, dict[str, Any]]:
    """Plain ``@triton.jit``: every constexpr passed by the launch, from ``meta``."""
    return case.kernel, dict(case.meta)


@decorator
def autotune(case: Case) -> tuple[Any, dict[str, Any]]:
    """``@triton.autotune(configs, key)`` over the kernel (plus the case's ``autotune_options``)."""
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
