"""Styles: every decorator stack (``decorators.py``) inside every wrapper (``wrappers.py``), plus the
pure-PyTorch ``control``. A style id names one (decorator, wrapper) pair; the ids predate the two axes and
keep their meaning: the launcher's styles are named after their decorator (``raw_jit`` for plain
``@triton.jit``), a library wrapper's after the wrapper, with the decorator appended unless it is ``jit``
(``triton_op``, ``triton_op_autotune``, ...).
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.case import Case
from harness.kernel.decorators import DECORATORS
from harness.kernel.wrappers import OP_NAMESPACE, WRAPPERS, Wrapped

__all__ = ["CONTROL", "KNOWN_STYLES", "Wrapped", "build_style", "control", "cross", "op_name", "style_id"]

CONTROL = "control"  # the style id of the control, and its wrapper in a style's axes (its decorator is None)
Axes = tuple[str | None, str]  # (decorator, wrapper)


def style_id(decorator: str, wrapper: str) -> str:
    """The id of the style that puts ``decorator``'s stack inside ``wrapper``."""
    if wrapper == "launcher":
        return "raw_jit" if decorator == "jit" else decorator
    return wrapper if decorator == "jit" else f"{wrapper}_{decorator}"


def cross(decorators: Iterable[str], wrappers: Iterable[str], with_control: bool) -> dict[str, Axes]:
    """Style id -> (decorator, wrapper) for every decorator inside every wrapper, in chart order: grouped by
    wrapper, decorators in the order given; the control last."""
    decorators = list(decorators)
    styles: dict[str, Axes] = {}
    for wrapper in wrappers:
        for decorator in decorators:
            style = style_id(decorator, wrapper)
            if style in styles:
                raise ValueError(f"style id {style!r} names both {styles[style]} and {(decorator, wrapper)}")
            styles[style] = (decorator, wrapper)
    if with_control:
        styles[CONTROL] = (None, CONTROL)
    return styles


KNOWN_STYLES: dict[str, Axes] = cross(DECORATORS, WRAPPERS, True)  # every style the harness can build


def op_name(case: Case, style: str) -> str:
    """The ``namespace::name`` a style's library op registers under: unique per case and style."""
    return f"{OP_NAMESPACE}::{case.id}_{style}"


def build_style(style: str, case: Case) -> Wrapped:
    """Build style ``style`` (an id of ``KNOWN_STYLES``) around the case's kernel. A library op registers once
    per process: build each (case, style) once (``harness.cell.context.build`` caches them)."""
    decorator, wrapper = KNOWN_STYLES[style]
    if decorator is None:
        return control(case)
    kernel, meta = DECORATORS[decorator](case)
    return WRAPPERS[wrapper](case, kernel, meta, op_name(case, style))


def control(case: Case) -> Wrapped:
    """The case's pure-PyTorch reference: when it fails on a path, the path is broken on this machine."""
    return Wrapped(op=case.reference, train_op=case.reference)
