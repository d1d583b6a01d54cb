"""Wrappers: how a decorated kernel is handed to PyTorch, i.e. the callable a user calls in their model.

Each is ``(case, kernel, meta, name) -> Wrapped``: ``kernel`` is what a decorator stack
(``harness.decorators``) made of the case's kernel, ``meta`` the constexprs its launch must pass, ``name``
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

OP_NAMESPACE = "harness"


@dataclass(frozen=True)
class Wrapped:
    """What a style gives the paths: the op for inference, and for training either an op or the error
    that registering its backward raised (training paths report it; inference paths are unaffected)."""

    op: Callable[..., Any]
    train_op: Callable[..., Any] | None
    train_error: BaseException | None = None

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
    whose backward is the case's torch ops. No op is registered (``name`` is unused)."""

    def op(*inputs: torch.Tensor) -> torch.Tensor | None:
        return case.launch(kernel, *inputs, **meta)

    return Wrapped(op=op, train_op=_autograd_function(case, op))


@wrapper
def triton_op(case: Case, kernel: Any, meta: dict[str, Any], name: str) -> Wrapped:
    """``torch.library.triton_op`` launching ``wrap_triton(kernel)`` (the recipe's way, for a ``@triton.jit``
    or ``@triton.autotune`` kernel alike), with CPU fallback, autograd and flop formula."""

    def launch(*inputs: torch.Tensor) -> torch.Tensor | None:
        return case.launch(torch.library.wrap_triton(kernel), *inputs, **meta)

    op = torch.library.triton_op(name, _with_signature(case, launch), mutates_args=case.mutates)
    return _register_library_op(case, op, name)


@wrapper
def custom_op(case: Case, kernel: Any, meta: dict[str, Any], name: str) -> Wrapped:
    """``torch.library.custom_op`` (opaque to the compiler) launching ``kernel`` directly, with fake, CPU
    kernel, autograd and flop formula."""

    def launch(*inputs: torch.Tensor) -> torch.Tensor | None:
        return case.launch(kernel, *inputs, **meta)

    op = torch.library.custom_op(name, _with_signature(case, launch), mutates_args=case.mutates)
    op.register_fake(_fake(case))
    return _register_library_op(case, op, name)


def _autograd_function(case: Case, fn: Callable[..., Any]) -> Callable[..., Any]:
    mutated = case.mutates_index
    kept = tuple(i for i in range(len(case.arg_names)) if i not in mutated)

    class KernelFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, *inputs: torch.Tensor) -> torch.Tensor:
            out = fn(*inputs)
            ctx.save_for_backward(*(inputs[i] for i in kept), *(() if out is None else (out,)))
            if mutated:
                ctx.mark_dirty(*(inputs[i] for i in mutated))
                return inputs[mutated[0]]
            return out

        @staticmethod
        def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
            saved = ctx.saved_tensors
            inputs: list[torch.Tensor | None] = [None] * len(case.arg_names)
            for position, index in enumerate(kept):
                inputs[index] = saved[position]
            out = saved[len(kept)] if len(saved) > len(kept) else None
            return tuple(case.backward(tuple(inputs), out, grad))

    KernelFunction.__name__ = f"{case.id}_kernel_function"
    return KernelFunction.apply


def _with_signature(case: Case, fn: Callable[..., Any]) -> Callable[..., Any]:
    """Give a ``*inputs`` function the typed signature torch.library infers the op's schema from."""
    parameters = [
        inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=torch.Tensor)
        for name in case.arg_names
    ]
    fn.__signature__ = inspect.Signature(parameters, return_annotation=None if case.mutates else torch.Tensor)
    return fn


def _register_library_op(case: Case, op: Any, name: str) -> Wrapped:
    """CPU kernel, fake, flop formula and autograd for a torch.library op (triton_op or custom_op)."""
    op.register_kernel("cpu")(case.cpu_kernel or case.reference)
    namespace, _, short_name = name.partition("::")
    register_flop_formula(getattr(getattr(torch.ops, namespace), short_name))(
        lambda *shapes, out_shape=None, **kwargs: case.flops(*shapes)
    )
    try:
        backward, setup_context = _autograd_formula(case)
        op.register_autograd(backward, setup_context=setup_context)
    except RuntimeError as error:  # no autograd for a mutating op: only training paths are affected
        return Wrapped(op=op, train_op=None, train_error=error)
    return Wrapped(op=op, train_op=op)


def _autograd_formula(case: Case) -> tuple[Callable[..., Any], Callable[..., Any]]:
    mutated = case.mutates_index

    def setup_context(ctx: Any, inputs: tuple[torch.Tensor, ...], output: torch.Tensor | None) -> None:
        ctx.save_for_backward(*inputs, *(() if output is None else (output,)))
        ctx.n_inputs = len(inputs)

    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        saved = ctx.saved_tensors
        inputs = tuple(None if i in mutated else saved[i] for i in range(ctx.n_inputs))
        out = saved[ctx.n_inputs] if len(saved) > ctx.n_inputs else None
        return tuple(case.backward(inputs, out, grad))

    return backward, setup_context


def _fake(case: Case) -> Callable[..., Any]:
    def fake(*inputs: torch.Tensor) -> torch.Tensor | None:
        return None if case.mutates else case.reference(*inputs)

    return fake
