"""Which Triton kernels a cell launched: Triton's launch-enter hook, which every launch of a compiled kernel calls
(``JITFunction.run``'s and Inductor's launchers alike), from the launcher, never in code Dynamo traces; and under
Triton's interpreter, which calls no hook, its launch wrapped. ``JITFunction.run`` is not wrapped: where a launch
falls back to Python (autotune over heuristics on ``dynamic``) Dynamo traces into ``run``, and a wrapper's code
would be among the cell's graph breaks. Where each lives in this Triton: harness/kernel/compat.py."""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from harness.kernel.compat import interpreter_launches, launch_hooks

# the kernels Inductor generates itself (fused pointwise, reduction, persistent reduction, template...)
INDUCTOR_KERNEL = re.compile(r"^triton_(poi|red|per|tem|for|tma|mm|bmm|unk|helper)_")


def user_kernels(names: list[str]) -> list[str]:
    """The names of kernels a user (the case, the library) wrote, without the ones Inductor generated."""
    return [name for name in names if not INDUCTOR_KERNEL.match(name)]


def kernel_name(kernel: Any) -> str:
    """The ``@triton.jit`` function's name under any decorators (autotune, heuristics) and ``wrap_triton``."""
    for _ in range(8):  # decorators nest a few deep
        if inspect.isfunction(kernel):
            break
        inner = getattr(kernel, "fn", None) or getattr(kernel, "kernel", None)
        if inner is None:
            break
        kernel = inner
    return getattr(kernel, "__name__", type(kernel).__name__)


@contextmanager
def observed_launches() -> Iterator[set[str]]:
    """The set of kernel names launched while the block runs (filled as they launch)."""
    launched: set[str] = set()
    interpreted, method, function = interpreter_launches()
    wrapped = {(interpreted, method): function}
    originals = {where: getattr(where[0], where[1]) for where in wrapped}

    def observing(where: tuple[type, str]) -> Any:
        original, launched_function = originals[where], wrapped[where]

        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            if not kwargs.get("warmup"):
                launched.add(kernel_name(launched_function(self)))
            return original(self, *args, **kwargs)

        return run

    def hook(metadata: Any) -> None:
        """Reads the name only: evaluating the lazy metadata (``metadata.get()``) runs the kernel's
        ``launch_metadata`` function, which Triton leaves None for a kernel launched from Dynamo's graph-broken
        frame (every autotune-over-heuristics launcher on ``dynamic`` then raised inside Triton's launch). An
        observer never breaks the launch it observes."""
        data = getattr(metadata, "data", None)
        name = data.get("name") if isinstance(data, dict) else None
        if name:
            launched.add(name)

    holder, attribute = launch_hooks()
    chain = getattr(holder, attribute)  # a HookChain (triton 3.7); a single hook or None before
    for cls, name in originals:
        setattr(cls, name, observing((cls, name)))
    if hasattr(chain, "add"):
        chain.add(hook)
    elif chain is None:
        setattr(holder, attribute, hook)
    try:
        yield launched
    finally:
        for (cls, name), original in originals.items():
            setattr(cls, name, original)
        if hasattr(chain, "add"):
            chain.remove(hook)
        elif chain is None:
            setattr(holder, attribute, None)
