"""Wrapping styles: each builds, from one case, the callable a user would call in their model."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import triton
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
    op_name: str | None = None

    def trainable(self) -> Callable[..., Any]:
        if self.train_error is not None:
            raise self.train_error
        assert self.train_op is not None
        return self.train_op


StyleBuilder = Callable[[Case], Wrapped]
STYLES: dict[str, StyleBuilder] = {}


def style(builder: StyleBuilder) -> StyleBuilder:
    """Register a style under its function's name (the id used in matrix.toml and cell ids)."""
    STYLES[builder.__name__] = builder
    return builder


def _config_keys(case: Case) -> set[str]:
    return {key for config in case.configs for key in config.kwargs}


def _meta_without(case: Case, *dropped: set[str]) -> dict[str, Any]:
    drop = set().union(*dropped)
    return {key: value for key, value in case.meta.items() if key not in drop}


def _autotune(case: Case, kernel: Any) -> Any:
    return triton.autotune(configs=list(case.configs), key=list(case.key), **case.autotune_options)(kernel)


def _python_launcher(case: Case, kernel: Any, meta: dict[str, Any]) -> Wrapped:
    """A plain Python function that launches ``kernel``; training goes through an autograd.Function."""

    def op(*inputs: torch.Tensor) -> torch.Tensor | None:
        return case.launch(kernel, *inputs, **meta)

    return Wrapped(op=op, train_op=_autograd_function(case, op))


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
    register_flop_formula(getattr(getattr(torch.ops, OP_NAMESPACE), name.split("::")[1]))(
        lambda *shapes, out_shape=None, **kwargs: case.flops(*shapes)
    )
    try:
        backward, setup_context = _autograd_formula(case)
        op.register_autograd(backward, setup_context=setup_context)
    except RuntimeError as error:  # no autograd for a mutating op: only training paths are affected
        return Wrapped(op=op, train_op=None, train_error=error, op_name=name)
    return Wrapped(op=op, train_op=op, op_name=name)


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


@style
def raw_jit(case: Case) -> Wrapped:
    """Plain ``@triton.jit``, launched from a Python function."""
    return _python_launcher(case, case.kernel, dict(case.meta))


@style
def autotune(case: Case) -> Wrapped:
    """``@triton.autotune(configs, key)`` over the kernel."""
    return _python_launcher(case, _autotune(case, case.kernel), _meta_without(case, _config_keys(case)))


@style
def heuristics_autotune(case: Case) -> Wrapped:
    """``@triton.heuristics`` outermost over ``@triton.autotune`` (the order the recipe calls supported)."""
    kernel = triton.heuristics(dict(case.heuristics))(_autotune(case, case.kernel))
    return _python_launcher(case, kernel, _meta_without(case, _config_keys(case), set(case.heuristics)))


@style
def autotune_heuristics(case: Case) -> Wrapped:
    """``@triton.autotune`` outermost over ``@triton.heuristics`` (the order the recipe calls unsupported)."""
    kernel = _autotune(case, triton.heuristics(dict(case.heuristics))(case.kernel))
    return _python_launcher(case, kernel, _meta_without(case, _config_keys(case), set(case.heuristics)))


@style
def triton_op(case: Case) -> Wrapped:
    """``torch.library.triton_op`` + ``wrap_triton``, with CPU fallback, autograd and flop formula."""
    name = f"{OP_NAMESPACE}::{case.id}_triton_op"
    meta = dict(case.meta)

    def launch(*inputs: torch.Tensor) -> torch.Tensor | None:
        return case.launch(torch.library.wrap_triton(case.kernel), *inputs, **meta)

    op = torch.library.triton_op(name, _with_signature(case, launch), mutates_args=case.mutates)
    return _register_library_op(case, op, name)


@style
def custom_op(case: Case) -> Wrapped:
    """``torch.library.custom_op`` (opaque to the compiler) launching the kernel, with fake, CPU kernel,
    autograd and flop formula."""
    name = f"{OP_NAMESPACE}::{case.id}_custom_op"
    meta = dict(case.meta)

    def launch(*inputs: torch.Tensor) -> torch.Tensor | None:
        return case.launch(case.kernel, *inputs, **meta)

    op = torch.library.custom_op(name, _with_signature(case, launch), mutates_args=case.mutates)
    op.register_fake(_fake(case))
    return _register_library_op(case, op, name)


def _fake(case: Case) -> Callable[..., Any]:
    def fake(*inputs: torch.Tensor) -> torch.Tensor | None:
        return None if case.mutates else case.reference(*inputs)

    return fake


@style
def control(case: Case) -> Wrapped:
    """The case's pure-PyTorch reference: when it fails on a path, the path is broken on this machine."""
    return Wrapped(op=case.reference, train_op=case.reference)
