"""How the wrappers train: what a style's autograd saves and hands to the case's backward, and the case's backward
kernel (``Case.backward_kernel``) as a library op of its own, ``<op>_backward``, as the PyTorch recipe does it
(a ``mysin`` whose backward calls a ``mycos`` op)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch

from harness.case import Case, Inputs, as_tuple
from harness.kernel.interpreter import triton_interpreted

# backward(inputs, output, grad) -> one gradient per argument: the case's ``backward``, or its backward kernel
Backward = Callable[[Inputs, Any, Any], tuple[torch.Tensor | None, ...]]


def launched_backward(case: Case) -> Backward:
    """The case's backward as the launcher styles run it: its backward kernel when it has one, else its torch ops."""
    if case.launch_backward is None:
        return torch_backward(case)
    launch_backward = case.launch_backward
    extra = {"kernels": dict(case.kernels)} if case.kernels else {}
    return lambda inputs, output, grad: launch_backward(case.backward_kernel, inputs, output, grad, **extra)


def torch_backward(case: Case) -> Backward:
    """The case's ``backward``, or by default autograd of its reference: the reference run again on the inputs
    (those that take a gradient made leaves), differentiated against each floating output's grad."""
    if case.backward is not None:
        return case.backward

    def autograd_of_reference(inputs: Inputs, output: Any, grad: Any) -> tuple[torch.Tensor | None, ...]:
        with torch.enable_grad():
            leaves = tuple(
                value.detach().requires_grad_() if case.takes_grad(index, value) else value
                for index, value in enumerate(inputs)
            )
            wanted = [value for index, value in enumerate(leaves) if case.takes_grad(index, value)]
            outputs = as_tuple(case.reference(*leaves))
            pairs = [(out, g) for out, g in zip(outputs, as_tuple(grad), strict=True) if out.requires_grad]
            if not pairs or not wanted:
                return (None,) * len(inputs)
            found = iter(torch.autograd.grad([o for o, _ in pairs], wanted, [g for _, g in pairs], allow_unused=True))
        return tuple(next(found) if case.takes_grad(index, value) else None for index, value in enumerate(leaves))

    return autograd_of_reference


def save(ctx: Any, inputs: Inputs, output: Any, mutated: tuple[int, ...], before: dict[int, Any] | None = None) -> None:
    """Save the tensor inputs (an overwritten one as ``before`` holds it, as it was before the call, else ``None``)
    and every output (for an op that writes into its inputs and returns nothing: the first input it wrote, as the
    call left it); keep the scalars on ``ctx``."""
    before = before or {}
    kept = tuple(
        before.get(index) if index in mutated else value if isinstance(value, torch.Tensor) else None
        for index, value in enumerate(inputs)
    )
    outputs = as_tuple(output) if output is not None else (inputs[mutated[0]],) if mutated else ()
    ctx.save_for_backward(*kept, *outputs)
    ctx.scalars = tuple(None if isinstance(value, torch.Tensor) else value for value in inputs)


def saved(case: Case, ctx: Any, grads: tuple[torch.Tensor | None, ...]) -> tuple[Inputs, Any, Any]:
    """What ``save`` kept, as the case's backward takes it: the inputs (an overwritten one as it was before the call
    with ``Case.save_mutated``, else ``None``), the output and the grad (tuples when the op has several outputs; a
    grad an output did not get is zeros)."""
    tensors = ctx.saved_tensors
    count = len(ctx.scalars)
    pairs = zip(tensors[:count], ctx.scalars, strict=True)
    inputs = tuple(tensor if scalar is None else scalar for tensor, scalar in pairs)
    outputs = tensors[count:]
    grads = tuple(torch.zeros_like(out) if grad is None else grad for out, grad in zip(outputs, grads, strict=True))
    return inputs, case_value(case, outputs), case_value(case, grads)


def before_call(case: Case, inputs: Inputs) -> dict[int, Any]:
    """The inputs the op overwrites, copied before the call, for a backward that reads them (``Case.save_mutated``,
    as an ``autograd.Function`` author saves them); none otherwise."""
    if not case.save_mutated:
        return {}
    return {index: inputs[index].detach().clone() for index in case.mutates_index}


def case_value(case: Case, values: tuple[Any, ...]) -> Any:
    """Outputs (or their grads) as the case's functions take them: the tensor, or the tuple of several."""
    return values[0] if case.outputs == 1 else tuple(values)


def autograd_function(case: Case, fn: Callable[..., Any], backward: Backward) -> Callable[..., Any]:
    """A ``torch.autograd.Function`` around ``fn`` whose backward is ``backward`` (the launcher's training)."""
    mutated = case.mutates_index

    class KernelFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, *inputs: Any) -> Any:
            before = before_call(case, inputs)
            out = fn(*inputs)
            save(ctx, inputs, out, mutated, before)
            if mutated:
                ctx.mark_dirty(*(inputs[i] for i in mutated))
                return inputs[mutated[0]]
            return out

        @staticmethod
        def backward(ctx: Any, *grads: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
            return tuple(backward(*saved(case, ctx, grads)))

    KernelFunction.__name__ = f"{case.id}_kernel_function"
    return KernelFunction.apply


def autograd_formula(case: Case, backward: Backward) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """``(backward, setup_context)`` for ``register_autograd`` of a library op."""
    mutated = case.mutates_index

    def setup_context(ctx: Any, inputs: Inputs, output: Any) -> None:
        save(ctx, inputs, output, mutated)

    def formula(ctx: Any, *grads: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        return tuple(backward(*saved(case, ctx, grads)))

    return formula, setup_context


def backward_op(case: Case, name: str, library_op: Callable[..., Any], wrap: Callable[[Any], Any]) -> Backward:
    """The case's backward kernel as the library op ``<name>_backward`` (made by ``library_op``: ``triton_op`` or
    ``custom_op``; ``wrap`` is what the launch gets: ``wrap_triton`` or nothing), with ``case.backward`` as its CPU
    kernel; the backward that calls it. The op takes the arguments, outputs and grads, and returns the gradient of
    every tensor argument."""
    assert case.launch_backward is not None
    launch_backward = case.launch_backward

    def launch(*values: Any) -> Any:
        kernels = {"kernels": {n: wrap(k) for n, k in case.kernels.items()}} if case.kernels else {}
        return _tensor_grads(case, launch_backward(wrap(case.backward_kernel), *_split(case, values), **kernels))

    def cpu_kernel(*values: Any) -> Any:
        return _tensor_grads(case, torch_backward(case)(*_split(case, values)))

    def fake(*values: Any) -> Any:
        inputs = values[: len(case.arg_names)]
        return _tensor_grads(case, tuple(torch.empty_like(v) if isinstance(v, torch.Tensor) else None for v in inputs))

    op = library_op(f"{name}_backward", _backward_signature(case, launch), mutates_args=())
    if library_op is torch.library.custom_op:
        op.register_fake(fake)
    if not triton_interpreted():  # the interpreter runs the backward kernel itself on CPU tensors
        op.register_kernel("cpu")(cpu_kernel)

    def call(inputs: Inputs, output: Any, grad: Any) -> tuple[torch.Tensor | None, ...]:
        grads = as_tuple(op(*inputs, *as_tuple(output), *as_tuple(grad)))
        by_position = dict(zip(case.tensor_args, grads, strict=True))
        return tuple(by_position.get(index) for index in range(len(case.arg_names)))

    return call


def _split(case: Case, values: tuple[Any, ...]) -> tuple[Inputs, Any, Any]:
    """The backward op's flat arguments as (inputs, output, grad)."""
    count = len(case.arg_names)
    outputs, grads = values[count : count + case.outputs], values[count + case.outputs :]
    return values[:count], case_value(case, outputs), case_value(case, grads)


def _tensor_grads(case: Case, grads: tuple[torch.Tensor | None, ...]) -> Any:
    """The gradients of the tensor arguments, as the backward op returns them (one tensor, or a tuple)."""
    tensors = tuple(grads[index] for index in case.tensor_args)
    return tensors[0] if len(tensors) == 1 else tensors


def _backward_signature(case: Case, fn: Callable[..., Any]) -> Callable[..., Any]:
    """The backward op's typed signature: the forward's arguments, ``output_<i>`` and ``grad_<i>`` per output; it
    returns a tensor per tensor argument."""
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    parameters = argument_parameters(case)
    for role in ("output", "grad"):
        parameters += [inspect.Parameter(f"{role}_{i}", kind, annotation=torch.Tensor) for i in range(case.outputs)]
    count = len(case.tensor_args)
    fn.__signature__ = inspect.Signature(parameters, return_annotation=tensors_annotation(count))
    return fn


def argument_parameters(case: Case) -> list[inspect.Parameter]:
    """The op's arguments as typed parameters (``Case.arg_types``), from which torch.library infers its schema."""
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    return [inspect.Parameter(name, kind, annotation=case.arg_type(name)) for name in case.arg_names]


def tensors_annotation(count: int) -> Any:
    """The return annotation of ``count`` tensors: ``Tensor``, or ``tuple[Tensor, ...]`` of exactly ``count``."""
    return torch.Tensor if count == 1 else tuple[(torch.Tensor,) * count]
