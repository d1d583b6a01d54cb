"""Styles: every decorator stack (``decorators.py``) inside every wrapper (``wrappers.py``), plus the
pure-PyTorch ``control``, and ``as_shipped``: the case's op as its library ships it, unchanged. A style id names
one (decorator, wrapper) pair; the ids predate the two axes and keep their meaning: the launcher's styles are
named after their decorator (``raw_jit`` for plain ``@triton.jit``), a library wrapper's after the wrapper, with
the decorator appended unless it is ``jit`` (``triton_op``, ``triton_op_autotune``, ...).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

import torch

from harness.case import Case
from harness.kernel.decorators import DECORATORS
from harness.kernel.wrappers import OP_NAMESPACE, WRAPPERS, Wrapped

__all__ = [
    "AS_SHIPPED",
    "CONTROL",
    "KNOWN_STYLES",
    "NotApplicable",
    "Wrapped",
    "as_shipped",
    "build_style",
    "control",
    "cross",
    "op_name",
    "style_id",
]

CONTROL = "control"  # the style id of the control, and its wrapper in a style's axes (its decorator is None)
AS_SHIPPED = "as_shipped"  # the style id (and wrapper) of the case's op as its library ships it
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


KNOWN_STYLES: dict[str, Axes] = {**cross(DECORATORS, WRAPPERS, True), AS_SHIPPED: (None, AS_SHIPPED)}


class NotApplicable(Exception):
    """The case has nothing this style builds (no kernel to re-wrap, no op as shipped), or this torch has not the
    API the style is made of: the cell is a skip."""


# what each library wrapper is made of, in ``torch.library``: a torch without one of them has not the style
WRAPPER_APIS = {"triton_op": ("triton_op", "wrap_triton"), "custom_op": ("custom_op",)}


def missing_api(wrapper: str) -> str | None:
    """``torch 2.5.1 has no torch.library.triton_op``: the API of the wrapper this torch lacks, else None."""
    for name in WRAPPER_APIS.get(wrapper, ()):
        if not hasattr(torch.library, name):
            return f"torch {torch.__version__} has no torch.library.{name}"
    return None


def op_name(case: Case, style: str) -> str:
    """The ``namespace::name`` a style's library op registers under: unique per case and style."""
    return f"{OP_NAMESPACE}::{case.id}_{style}"


def build_style(style: str, case: Case) -> Wrapped:
    """Build style ``style`` (an id of ``KNOWN_STYLES``) around the case's kernel. A library op registers once
    per process: build each (case, style) once (``harness.cell.runner.build`` caches them)."""
    decorator, wrapper = KNOWN_STYLES[style]
    if wrapper == AS_SHIPPED:
        return as_shipped(case)
    if decorator is None:
        return control(case)
    applies(style, case)
    kernel, meta = DECORATORS[decorator](case)
    return WRAPPERS[wrapper](case, kernel, meta, op_name(case, style))


def applies(style: str, case: Case) -> None:
    """``NotApplicable`` where a decorator stack in a wrapper (``style``) cannot wrap the case's kernel: the case
    gives none to re-wrap, or this torch lacks the wrapper's API."""
    decorator, wrapper = KNOWN_STYLES[style]
    if wrapper == AS_SHIPPED or decorator is None:
        return
    if case.launch is None:
        raise NotApplicable(f"case {case.id} gives no kernel to re-wrap, only its op as shipped (style as_shipped)")
    missing = missing_api(wrapper)
    if missing:
        raise NotApplicable(missing)


def control(case: Case) -> Wrapped:
    """The case's pure-PyTorch reference: when it fails on a path, the path is broken on this machine."""
    return Wrapped(op=case.reference, train_op=case.reference)


def as_shipped(case: Case) -> Wrapped:
    """The case's op as its library ships it, called unchanged for inference and training (with the library's own
    argument choices, ``shipped_args``, after the inputs)."""
    if case.shipped_module is not None:
        torch.manual_seed(0)
        module = case.shipped_module()
        return Wrapped(op=module, train_op=module, wrapped_as=case.shipped_as or f"nn.Module {type(module).__name__}")
    shipped = case.shipped
    if shipped is None:
        raise NotApplicable(f"case {case.id} gives no op as shipped (Case.shipped)")
    label = case.shipped_as or wrapped_as(shipped)
    return Wrapped(op=shipped, train_op=shipped, wrapped_as=label, args=tuple(case.shipped_args))


def is_library_op(op: Any) -> bool:
    """Whether ``op`` is a ``torch.library`` op (an operator, or a ``custom_op`` definition): opaque to Dynamo
    as a whole, and what ``torch.library.opcheck`` checks."""
    return isinstance(op, torch._ops.OpOverload | torch._ops.OpOverloadPacket | torch._library.custom_ops.CustomOpDef)


def library_op_name(op: Any) -> str | None:
    """``ns::name`` of a ``torch.library`` op (None for anything else)."""
    if not is_library_op(op):
        return None
    if isinstance(op, torch._ops.OpOverload):
        return str(op._schema.name)
    return str(getattr(op, "_qualified_op_name", None) or op._qualname)


def wrapped_as(op: Callable[..., Any]) -> str:
    """How a shipped op is wrapped: ``autograd.Function X.apply``, ``torch.library op ns::name``, ``function f``."""
    owner = getattr(op, "__self__", None)
    if inspect.isclass(owner) and issubclass(owner, torch.autograd.Function):
        return f"autograd.Function {owner.__name__}.{op.__name__}"
    if is_library_op(op):
        return f"torch.library op {getattr(op, '_qualname', op)}"
    if isinstance(op, torch.nn.Module):
        return f"nn.Module {type(op).__name__}"
    return f"function {getattr(op, '__module__', '?')}.{getattr(op, '__qualname__', type(op).__name__)}"
