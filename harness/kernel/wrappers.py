"""Wrappers: how a decorated kernel is handed to PyTorch, i.e. the callable a user calls in their model.

Each is ``(case, kernel, meta, name) -> Wrapped``: ``kernel`` is what a decorator stack
(``harness.kernel.decorators``) made of the case's kernel, ``meta`` the constexprs its launch must pass, ``name``
the ``namespace::op`` a library op registers under (unique per case and style: an op registers once per
process). Registered under the function's name, the id ``wrappers`` in matrix.toml lists.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils.flop_counter import register_flop_formula

from harness.case import Case
from harness.kernel.gradients import (
    argument_parameters,
    autograd_formula,
    autograd_function,
    backward_op,
    launched_backward,
    tensors_annotation,
    torch_backward,
)
from harness.kernel.interpreter import triton_interpreted

OP_NAMESPACE = "harness"


@dataclass(frozen=True)
class Wrapped:
    """What a style gives the paths: the op for inference, and for training either an op or the error
    that registering its backward raised (training paths report it; inference paths are unaffected)."""

    op: Callable[..., Any]
    train_op: Callable[..., Any] | None
    train_error: BaseException | None = None
    wrapped_as: str | None = None  # how an op as shipped is wrapped (``as_shipped``), for the records
    args: tuple[Any, ...] = ()  # passed after the inputs on every call: the library's own choices (``shipped_args``)

    def trainable(self) -> Callable[..., Any]:
        if self.train_error is not None:
            raise self.train_error
        assert self.train_op is not None
        return self.train_op


Wrap = Callable[[Case, Any, dict[str, Any], str], Wrapped]
WRAPPERS: dict[str, Wrap] = {}


def wrapper(wrap: Wrap) -> Wrap:
    """Register a wrapper under its function's name."""
    WRAPPERS[wrap.__name__] = wrap
    return wrap


@wrapper
def launcher(case: Case, kernel: Any, meta: dict[str, Any], name: str) -> Wrapped:
    """A plain Python function that launches ``kernel``; training goes through a ``torch.autograd.Function``
    whose backward is the case's backward kernel (launched as it is) or its torch ops. No op is registered
    (``name``, less its namespace, names the function)."""

    def op(*inputs: Any) -> Any:
        return case.launch(kernel, *inputs, **_kernels(case, lambda k: k), **meta)

    op.__name__ = op.__qualname__ = name.partition("::")[2]  # a user's launcher has a name of its own
    return Wrapped(op=op, train_op=autograd_function(case, op, launched_backward(case)))


@wrapper
def triton_op(case: Case, kernel: Any, meta: dict[str, Any], name: str) -> Wrapped:
    """``torch.library.triton_op`` launching ``wrap_triton(kernel)`` (the recipe's way, for a ``@triton.jit``
    or ``@triton.autotune`` kernel alike), with CPU fallback, autograd and flop formula; a backward kernel
    becomes a second ``triton_op`` (``<name>_backward``) launching ``wrap_triton`` of it."""

    def launch(*inputs: Any) -> Any:
        wrap = torch.library.wrap_triton
        return case.launch(wrap(kernel), *inputs, **_kernels(case, wrap), **meta)

    op = torch.library.triton_op(name, _with_signature(case, launch), mutates_args=case.mutates)
    return _register_library_op(case, op, name, torch.library.triton_op, torch.library.wrap_triton)


@wrapper
def custom_op(case: Case, kernel: Any, meta: dict[str, Any], name: str) -> Wrapped:
    """``torch.library.custom_op`` (opaque to the compiler) launching ``kernel`` directly, with fake, CPU
    kernel, autograd and flop formula; a backward kernel becomes a second ``custom_op`` (``<name>_backward``)."""

    def launch(*inputs: Any) -> Any:
        return case.launch(kernel, *inputs, **_kernels(case, lambda k: k), **meta)

    op = torch.library.custom_op(name, _with_signature(case, launch), mutates_args=case.mutates)
    op.register_fake(_fake(case))
    return _register_library_op(case, op, name, torch.library.custom_op, lambda backward_kernel: backward_kernel)


def _kernels(case: Case, wrap: Callable[[Any], Any]) -> dict[str, Any]:
    """The launch's ``kernels=`` argument: the case's other kernels, each wrapped as the style wraps its kernel."""
    return {"kernels": {name: wrap(kernel) for name, kernel in case.kernels.items()}} if case.kernels else {}


def _with_signature(case: Case, fn: Callable[..., Any]) -> Callable[..., Any]:
    """Give a ``*inputs`` function the typed signature torch.library infers the op's schema from: each argument's
    type (``Case.arg_types``: ``float eps``, ``Tensor? bias``), and ``Tensor``, or a tuple of ``Case.outputs``
    tensors, returned (nothing for an op that writes into its inputs)."""
    returns = None if case.mutates else tensors_annotation(case.outputs)
    fn.__signature__ = inspect.Signature(argument_parameters(case), return_annotation=returns)
    return fn


def _register_library_op(
    case: Case, op: Any, name: str, library_op: Callable[..., Any], wrap: Callable[[Any], Any]
) -> Wrapped:
    """CPU kernel (none under Triton's interpreter: CPU tensors then reach the kernel), flop formula and autograd
    (through the backward op ``library_op`` makes of the case's backward kernel, if it has one) for a torch.library
    op (triton_op or custom_op)."""
    if not triton_interpreted():
        op.register_kernel("cpu")(case.cpu_kernel or case.reference)
    namespace, _, short_name = name.partition("::")
    flops = case.flops
    if flops is not None:
        register_flop_formula(getattr(getattr(torch.ops, namespace), short_name))(
            lambda *shapes, out_shape=None, **kwargs: flops(*shapes)
        )
    backward = torch_backward(case) if case.backward_kernel is None else backward_op(case, name, library_op, wrap)
    formula, setup_context = autograd_formula(case, backward)
    try:
        op.register_autograd(formula, setup_context=setup_context)
    except RuntimeError as error:  # no autograd for a mutating op: only training paths are affected
        message = (
            f"{name} writes into {', '.join(case.mutates)}: {library_op.__name__} cannot train it, a limit of "
            "torch.library, not of the case (no autograd for an op that writes into its inputs; the launcher trains "
            f"it): {error}"
        )
        return Wrapped(op=op, train_op=None, train_error=RuntimeError(message))
    return Wrapped(op=op, train_op=op)


def _fake(case: Case) -> Callable[..., Any]:
    implementation = case.fake or case.reference

    def fake(*inputs: Any) -> Any:
        return None if case.mutates else implementation(*inputs)

    return fake
