"""Reproducer for layernorm-triton_op_autotune_heuristics-dynamic, written by the compatibility-matrix harness.

Recorded: error at compile: InductorError: NameError: name 'Eq' is not defined
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0,
harness commit 2a5e265.

Run it with python: it raises the failure (exit 1) while the failure is there, and prints
"no failure" once it is fixed. Needs only torch and triton: the kernel's module (cases.layernorm) and the
harness code the cell ran (style 'triton_op_autotune_heuristics', path 'dynamic') are inlined below.
"""

from __future__ import annotations


import functools
import inspect
import os
import time
import torch
import triton
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from torch.utils.flop_counter import register_flop_formula
from typing import Any

# ---- harness.case: the case's container ----

Tensor = torch.Tensor

OPTIONAL_TENSOR = Tensor | None

ARG_TYPES = (float, int, bool, OPTIONAL_TENSOR)

@dataclass(frozen=True, kw_only=True)
class Case:
    """A kernel and everything the harness needs to wrap it in every style and check it on every path.

    - ``kernel``: the ``@triton.jit`` function, declared once: every decorator stack (``harness.kernel.decorators``)
      is built over it. Constexprs that autotune picks come from ``configs``, the ones ``heuristics``
      computes from those; a stack without them passes them explicitly, from ``meta``.
    - ``launch(kernel, *inputs, **meta)``: allocates the output(s), launches ``kernel[grid](...)`` and
      returns them (or ``None`` for a kernel that writes into the inputs named in ``mutates``).
    - ``reference``: the same op written with PyTorch ops (same signature and semantics as ``launch``).
    - ``make_inputs(size, device, seed)``: the op's arguments, one per ``arg_names``: tensors, and where
      ``arg_types`` says so a float, int or bool, or ``None`` for an optional tensor; sizes are not block
      multiples. A tensor may be a strided view (the harness copies inputs keeping their strides).
    - ``arg_types``: the type of each argument that is not a tensor, by name: ``float``, ``int``, ``bool``, or
      ``Tensor | None`` (an optional tensor). The library wrappers' schemas are inferred from these types.
    - ``outputs``: how many tensors the op returns: 1 (a tensor), or more (a tuple, every one compared).
    - ``kernels``: other ``@triton.jit`` kernels the launch calls (a second kernel, e.g. an ``element_mul``), by
      name: ``launch`` (and ``launch_backward``) then get ``kernels=`` a dict of them, each wrapped as the style
      wraps its kernel (``wrap_triton`` in ``triton_op``); the decorator stacks apply to ``kernel`` only.
    - ``shipped``: the op as a library ships it (an ``autograd.Function``'s ``apply``, a function, a
      ``torch.library`` op), or ``shipped_module``: a factory of the ``nn.Module`` it ships (called with no
      arguments, its ``forward`` taking the op's arguments). Either runs as the ``as_shipped`` style, unchanged;
      a case with no ``kernel`` runs only there (and in the control). ``shipped_args``: the library's own
      argument choices (casting mode, in-place), passed after the inputs. ``shipped_as`` names how it is wrapped
      in the records (default: inferred).
    - ``no_grad``: the float tensor arguments that take no gradient (RoPE's cos/sin caches): never given
      ``requires_grad``, their gradient never asked of ``backward``.
    - ``backward(inputs, output, grad)`` (optional: by default autograd of ``reference``): gradients of the op's
      arguments (``None`` for a scalar, a ``None``
      optional tensor or an integer tensor), in PyTorch ops; an input named in ``mutates`` arrives as
      ``None`` (it was overwritten). With several ``outputs``, ``output`` and ``grad`` are tuples (a grad of
      zeros for an output that got none).
    - ``backward_kernel`` and ``launch_backward(kernel, inputs, output, grad)``: optionally, the backward as a
      ``@triton.jit`` kernel and its launch (same contract as ``backward``), which the styles then run in
      their backward: the launcher's ``autograd.Function`` calls it, ``triton_op`` wraps it in a second
      ``triton_op`` and ``custom_op`` in a second ``custom_op`` (``<op>_backward``), whose CPU kernel is
      ``backward``. The decorator stacks apply to ``kernel`` only: the backward kernel stays plain. (Not for an
      op with an optional tensor argument, whose gradient may be ``None``; for one that writes into its inputs,
      only the launcher trains: ``torch.library`` registers no autograd for a mutating op, a build error.)
    - ``flops(*args)`` (optional): the op's flop count, given each tensor argument's shape (other arguments as they
      are), as ``FlopCounterMode`` should report; without it the ``flop_counter`` cells are skips.
    - Outputs that are not floating point (a dropout's keep mask, argmax indices) are compared exactly and
      never differentiated.
    - ``heuristics``: constexpr name -> ``fn(args)``, computed from the call's arguments only: it also runs
      where ``@triton.heuristics`` is outermost, over ``@triton.autotune``, and sees no config value.
    - ``config_heuristics``: the heuristics that read a value of the autotune config (e.g. ``BLOCK_SIZE``);
      they replace ``heuristics`` of the same name where ``@triton.heuristics`` sits under
      ``@triton.autotune`` and sees the config the autotuner picked (the reason that order exists).
    - ``cpu_kernel``: the CPU implementation registered for the library styles (default: ``reference``).
    - ``autotune_options``: extra ``triton.autotune`` arguments the kernel needs (e.g. ``restore_value``).
    - ``module(op)``: the ``nn.Module`` the paths run, built around ``op``; the default calls ``op``.
    - ``size_bounds``: (low, high) of the sizes hypothesis may draw for paths with ``examples`` > 1
      (default: 1 to twice the largest of ``sizes``).
    - ``dynamic_dims``: per input of ``make_inputs``, the dims whose length is the ``size`` it is given (the
      batch-like dims), ``()`` for an input whose shape does not depend on it (and for a scalar or ``None``).
      The dynamic export paths mark these dims dynamic with one ``torch.export.Dim`` bounded by
      ``size_bounds`` (default: dim 0 of every tensor input).
    """

    id: str
    reference: Callable[..., Any]
    make_inputs: Callable[[int, str, int], Inputs]
    arg_names: tuple[str, ...]
    sizes: tuple[int, ...]
    kernel: Any = None
    launch: Callable[..., Any] | None = None
    backward: Callable[[Inputs, Any, Any], tuple[Tensor | None, ...]] | None = None
    flops: Callable[..., int] | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    configs: Sequence[Any] = ()
    key: Sequence[str] = ()
    heuristics: Mapping[str, Callable[[dict[str, Any]], Any]] = field(default_factory=dict)
    dtype: torch.dtype = torch.float32
    mutates: tuple[str, ...] = ()
    autotune_options: Mapping[str, Any] = field(default_factory=dict)
    cpu_kernel: Callable[..., Any] | None = None
    module: Callable[[Callable[..., Any]], torch.nn.Module] | None = None
    size_bounds: tuple[int, int] | None = None
    dynamic_dims: tuple[tuple[int, ...], ...] | None = None
    config_heuristics: Mapping[str, Callable[[dict[str, Any]], Any]] = field(default_factory=dict)
    arg_types: Mapping[str, Any] = field(default_factory=dict)
    outputs: int = 1
    backward_kernel: Any = None
    launch_backward: Callable[..., tuple[Tensor | None, ...]] | None = None
    kernels: Mapping[str, Any] = field(default_factory=dict)
    no_grad: tuple[str, ...] = ()
    shipped: Callable[..., Any] | None = None
    shipped_module: Callable[[], torch.nn.Module] | None = None
    shipped_args: tuple[Any, ...] = ()
    shipped_as: str | None = None

    def __post_init__(self) -> None:
        if self.kernel is not None and self.launch is None:
            raise ValueError(f"case {self.id!r}: a kernel needs its launch")
        if self.launch is None and self.shipped is None and self.shipped_module is None:
            raise ValueError(f"case {self.id!r}: give a kernel and its launch, or the op as shipped (shipped)")
        if self.shipped is not None and self.shipped_module is not None:
            raise ValueError(f"case {self.id!r}: give shipped or shipped_module, not both")
        if self.mutates and self.backward is None:
            raise ValueError(
                f"case {self.id!r}: an op that writes into its inputs needs a backward (autograd of "
                "the in-place reference cannot give the gradient of what it overwrote)"
            )
        unknown = set(self.no_grad) - set(self.arg_names)
        if unknown:
            raise ValueError(f"case {self.id!r}: no_grad {sorted(unknown)} are not in arg_names")
        extra = set(self.config_heuristics) - set(self.heuristics)
        if extra:
            raise ValueError(f"case {self.id!r}: config_heuristics {sorted(extra)} have no heuristics of that name")
        unknown = set(self.arg_types) - set(self.arg_names)
        if unknown:
            raise ValueError(f"case {self.id!r}: arg_types {sorted(unknown)} are not in arg_names")
        for name, kind in self.arg_types.items():
            if kind not in ARG_TYPES:
                raise ValueError(
                    f"case {self.id!r}: arg_types[{name!r}] is {kind!r}: use float, int, bool or Tensor | None"
                )
        if self.outputs < 1:
            raise ValueError(f"case {self.id!r}: outputs must be 1 or more, got {self.outputs}")
        if (self.backward_kernel is None) != (self.launch_backward is None):
            raise ValueError(f"case {self.id!r}: give both backward_kernel and launch_backward, or neither")
        if self.backward_kernel is not None and OPTIONAL_TENSOR in self.arg_types.values():
            raise ValueError(f"case {self.id!r}: a backward_kernel needs every tensor argument given")

    def build_module(self, op: Callable[..., Any]) -> torch.nn.Module:
        """The module the paths run, around ``op``; parameters are seeded so every style gets the same."""
        torch.manual_seed(0)
        if self.module is not None:
            return self.module(op)
        return OpModule(op, self.mutates_index)

    @property
    def bounds(self) -> tuple[int, int]:
        """``size_bounds``, or its default: 1 to twice the largest of ``sizes``."""
        return self.size_bounds or (1, 2 * max(self.sizes))

    @property
    def mutates_index(self) -> tuple[int, ...]:
        return tuple(self.arg_names.index(name) for name in self.mutates)

    def arg_type(self, name: str) -> Any:
        """The declared type of argument ``name`` (``Tensor`` unless ``arg_types`` says otherwise)."""
        return self.arg_types.get(name, Tensor)

    def takes_grad(self, index: int, value: Any) -> bool:
        """Whether argument ``index`` (``value``) is differentiated: a float tensor not named in ``no_grad``."""
        floating = isinstance(value, Tensor) and value.is_floating_point()
        return floating and self.arg_names[index] not in self.no_grad

    @property
    def tensor_args(self) -> tuple[int, ...]:
        """The positions of the arguments that are always tensors (the ones a backward kernel has a gradient for)."""
        return tuple(index for index, name in enumerate(self.arg_names) if self.arg_type(name) is Tensor)

class OpModule(torch.nn.Module):
    """Calls the op; an in-place op runs on a copy of its mutated input, which it returns."""

    def __init__(self, op: Callable[..., Any], mutated: tuple[int, ...] = ()) -> None:
        super().__init__()
        self.op = op
        self.mutated = mutated

    def forward(self, *inputs: Any) -> Any:
        if not self.mutated:
            return self.op(*inputs)
        args = list(inputs)
        for index in self.mutated:
            args[index] = args[index].clone()
        self.op(*args)
        return args[self.mutated[0]]

# ---- cases.layernorm: the case, inlined ----

"""The Triton tutorial's fused LayerNorm forward: an optional ``bias`` (``None`` here, so the ``Tensor? bias`` path
is the one measured), a float ``eps``, and three outputs (``y``, and each row's ``mean`` and ``rstd``), each
differentiable; the backward is PyTorch ops. One program per row, looping over it in ``BLOCK_SIZE`` chunks
(an autotune config value). ``x`` is a strided view (rows of 768 columns, 1024 apart): the kernel takes row
strides, and the harness keeps the view's strides. 768 is a multiple of the 256-column config, not of the
1024-column one, so the config heuristic picks the unmasked loop for one config and the masked one for the
other; the size (the rows) is never a block multiple."""

import math

import torch
import triton
import triton.language as tl


N_COLS, ROW_STRIDE = 768, 1024
MAX_BLOCK = 1024  # every block size below divides it


@triton.jit
def layernorm_kernel(
    x_ptr,
    y_ptr,
    w_ptr,
    b_ptr,
    mean_ptr,
    rstd_ptr,
    x_row_stride,
    y_row_stride,
    N,
    eps,
    HAS_BIAS: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    EVEN: tl.constexpr,
):
    row = tl.program_id(axis=0)
    x_ptr += row * x_row_stride
    y_ptr += row * y_row_stride
    total = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for offset in range(0, N, BLOCK_SIZE):
        cols = offset + tl.arange(0, BLOCK_SIZE)
        if EVEN:
            total += tl.load(x_ptr + cols).to(tl.float32)
        else:
            total += tl.load(x_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
    mean = tl.sum(total, axis=0) / N
    squares = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for offset in range(0, N, BLOCK_SIZE):
        cols = offset + tl.arange(0, BLOCK_SIZE)
        if EVEN:
            centered = tl.load(x_ptr + cols).to(tl.float32) - mean
        else:
            x = tl.load(x_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
            centered = tl.where(cols < N, x - mean, 0.0)
        squares += centered * centered
    rstd = 1 / tl.sqrt(tl.sum(squares, axis=0) / N + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    for offset in range(0, N, BLOCK_SIZE):
        cols = offset + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(w_ptr + cols, mask=mask)
        x = tl.load(x_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w
        if HAS_BIAS:
            y += tl.load(b_ptr + cols, mask=mask)
        tl.store(y_ptr + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def launch(kernel, x, weight, bias, eps, **meta):
    n_rows, n_cols = x.shape
    y = torch.empty((n_rows, n_cols), device=x.device, dtype=x.dtype)
    mean = torch.empty(n_rows, device=x.device, dtype=torch.float32)
    rstd = torch.empty(n_rows, device=x.device, dtype=torch.float32)
    has_bias = bias is not None
    kernel[(n_rows,)](
        x,
        y,
        weight,
        bias if has_bias else weight,  # never read without a bias: HAS_BIAS is false
        mean,
        rstd,
        x.stride(0),
        y.stride(0),
        n_cols,
        eps,
        HAS_BIAS=has_bias,
        **meta,
    )
    return y, mean, rstd


def reference(x, weight, bias, eps):
    mean = x.mean(dim=-1)
    centered = x - mean[:, None]
    rstd = torch.rsqrt(centered.pow(2).mean(dim=-1) + eps)
    y = centered * rstd[:, None] * weight
    return (y if bias is None else y + bias), mean, rstd


def backward(inputs, outputs, grads):
    x, weight, bias, _ = inputs
    _, mean, rstd = outputs
    grad_y, grad_mean, grad_rstd = grads
    n = x.shape[-1]
    normed = (x - mean[:, None]) * rstd[:, None]
    grad_normed = grad_y * weight
    grad_x = rstd[:, None] * (
        grad_normed
        - grad_normed.mean(dim=-1, keepdim=True)
        - normed * (grad_normed * normed).mean(dim=-1, keepdim=True)
    )
    # through mean (d mean / dx = 1 / n) and rstd (d rstd / dx = -rstd^2 normed / n)
    grad_x = grad_x + grad_mean[:, None] / n - grad_rstd[:, None] * rstd[:, None] ** 2 * normed / n
    grad_bias = None if bias is None else grad_y.sum(dim=0)
    return grad_x, (grad_y * normed).sum(dim=0), grad_bias, None


def make_inputs(rows, device, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, ROW_STRIDE, generator=gen).to(device)[:, :N_COLS]  # a view: rows ROW_STRIDE apart
    weight = 1 + 0.1 * torch.randn(N_COLS, generator=gen)
    return x, weight.to(device), None, 1e-5


CASE = Case(
    id="layernorm",
    kernel=layernorm_kernel,
    launch=launch,
    reference=reference,
    make_inputs=make_inputs,
    backward=backward,
    flops=lambda x, weight, bias, eps: (6 if bias is None else 7) * math.prod(x),
    arg_names=("x", "weight", "bias", "eps"),
    arg_types={"bias": torch.Tensor | None, "eps": float},
    outputs=3,
    sizes=(67, 13, 129),
    meta={"BLOCK_SIZE": 256, "EVEN": False},
    configs=[triton.Config({"BLOCK_SIZE": 256}, num_warps=4), triton.Config({"BLOCK_SIZE": 1024}, num_warps=8)],
    key=["N"],
    heuristics={"EVEN": lambda args: args["N"] % MAX_BLOCK == 0},  # no tail, whatever the config
    config_heuristics={"EVEN": lambda args: args["N"] % args["BLOCK_SIZE"] == 0},  # the picked config
    dynamic_dims=((0,), (), (), ()),  # the size is the rows of x; weight is (768,), bias None, eps a float
)

# ---- the harness code the cell ran ----

@dataclass(frozen=True)
class Tolerance:
    """How far an output may be from the reference (``torch.testing.assert_close``'s atol and rtol)."""

    atol: float
    rtol: float

Inputs = tuple[Any, ...]

def copy_inputs(inputs: Inputs) -> Inputs:
    """The inputs with every tensor copied (detached, its strides kept: a strided view stays strided), the rest
    (scalars, ``None``) as they are."""
    return tuple(copy_tensor(value) if isinstance(value, Tensor) else value for value in inputs)

def copy_tensor(tensor: Tensor) -> Tensor:
    """A detached copy with the same shape and strides (``clone`` makes a sliced view contiguous)."""
    tensor = tensor.detach()
    if 0 in tensor.stride() or tensor.is_contiguous():  # an expanded tensor cannot be written stride for stride
        return tensor.clone()
    return torch.empty_strided(tensor.shape, tensor.stride(), dtype=tensor.dtype, device=tensor.device).copy_(tensor)

def as_tuple(output: Any) -> tuple[Any, ...]:
    """An op's output as a tuple of outputs: a tuple or list as it is, anything else as the one output."""
    return tuple(output) if isinstance(output, tuple | list) else (output,)

class Mismatch(AssertionError):
    """The cell ran, but a number it produced differs from the reference: status ``wrong``."""

def assert_match(what: str, actual: object, expected: object, tolerance: Tolerance) -> None:
    """Raise ``Mismatch`` naming ``what`` unless ``actual`` equals ``expected`` within tolerance. An op with several
    outputs gives a tuple: each is compared, named by its position (``output 0``, ``output 1 at size 7``)."""
    if not isinstance(expected, tuple | list):
        _assert_tensor(what, actual, expected, tolerance)  # type: ignore[arg-type]
        return
    if not isinstance(actual, tuple | list):
        raise Mismatch(f"{what}: expected a tuple of {len(expected)} tensors, got {type(actual).__name__}")
    if len(actual) != len(expected):
        raise Mismatch(f"{what}: expected {len(expected)} outputs, got {len(actual)}")
    for index, (one, one_expected) in enumerate(zip(actual, expected, strict=True)):
        _assert_tensor(nth(what, index), one, one_expected, tolerance)

def nth(what: str, index: int) -> str:
    """``what`` naming output ``index`` of several: ``output of call 2`` -> ``output 1 of call 2``."""
    head, found, tail = what.partition("output")
    return f"{head}output {index}{tail}" if found else f"{what} {index}"

def _assert_tensor(what: str, actual: object, expected: torch.Tensor, tolerance: Tolerance) -> None:
    """Within tolerance for a floating (or complex) output; exactly, dtype included, for any other (a mask,
    indices), where a tolerance would pass a wrong index."""
    if not isinstance(actual, torch.Tensor):
        raise Mismatch(f"{what}: expected a tensor, got {type(actual).__name__}")
    if not (expected.is_floating_point() or expected.is_complex()):
        _assert_exact(what, actual.detach().cpu(), expected.detach().cpu())
        return
    try:
        torch.testing.assert_close(
            actual.detach().cpu(), expected.detach().cpu(), atol=tolerance.atol, rtol=tolerance.rtol
        )
    except AssertionError as error:
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        raise Mismatch(f"{what}: " + "; ".join(lines)) from None

def _assert_exact(what: str, actual: torch.Tensor, expected: torch.Tensor) -> None:
    if actual.dtype != expected.dtype or actual.shape != expected.shape:
        got, want = (f"{t.dtype} of shape {tuple(t.shape)}" for t in (actual, expected))
        raise Mismatch(f"{what}: expected {want}, got {got}")
    differ = actual != expected
    if differ.any():
        first = tuple(int(i) for i in differ.nonzero()[0])
        raise Mismatch(
            f"{what}: {int(differ.sum())} of {differ.numel()} elements differ (compared exactly); "
            f"first at {first}: {actual[first].item()} != {expected[first].item()}"
        )

INTERPRET_ENV = "TRITON_INTERPRET"

def triton_interpreted() -> bool:
    """Whether Triton runs kernels in its interpreter here (read when a kernel is decorated: set it first)."""
    return os.environ.get(INTERPRET_ENV) == "1"

def wall_clock_bench(kernel_call: Callable[[], None], quantiles: Sequence[float]) -> list[float]:
    """The autotuner's benchmarker in the interpreter, where Triton's own asks the device's driver (and there is
    none: "0 active drivers"): each config runs once, timed by the wall clock (ms), so every config, its
    heuristics and the autotuner's hooks run on CPU tensors; the pick is the config the interpreter ran
    fastest, which says nothing about a GPU."""
    start = time.perf_counter()
    kernel_call()
    return [(time.perf_counter() - start) * 1e3] * len(quantiles)

Backward = Callable[[Inputs, Any, Any], tuple[torch.Tensor | None, ...]]

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

def save(ctx: Any, inputs: Inputs, output: Any, mutated: tuple[int, ...]) -> None:
    """Save the tensor inputs (not the overwritten ones) and every output; keep the scalars on ``ctx``."""
    kept = tuple(
        None if index in mutated or not isinstance(value, torch.Tensor) else value for index, value in enumerate(inputs)
    )
    ctx.save_for_backward(*kept, *(() if output is None else as_tuple(output)))
    ctx.scalars = tuple(None if isinstance(value, torch.Tensor) else value for value in inputs)

def saved(case: Case, ctx: Any, grads: tuple[torch.Tensor | None, ...]) -> tuple[Inputs, Any, Any]:
    """What ``save`` kept, as the case's backward takes it: the inputs (``None`` for the overwritten ones), the
    output and the grad (tuples when the op has several outputs; a grad an output did not get is zeros)."""
    tensors = ctx.saved_tensors
    count = len(ctx.scalars)
    pairs = zip(tensors[:count], ctx.scalars, strict=True)
    inputs = tuple(tensor if scalar is None else scalar for tensor, scalar in pairs)
    outputs = tensors[count:]
    if not outputs:  # an op writing into its input returns nothing: the grad is that input's
        return inputs, None, grads[0]
    grads = tuple(torch.zeros_like(out) if grad is None else grad for out, grad in zip(outputs, grads, strict=True))
    return inputs, case_value(case, outputs), case_value(case, grads)

def case_value(case: Case, values: tuple[Any, ...]) -> Any:
    """Outputs (or their grads) as the case's functions take them: the tensor, or the tuple of several."""
    return values[0] if case.outputs == 1 else tuple(values)

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

def _config_keys(case: Case) -> set[str]:
    return {key for config in case.configs for key in config.kwargs}

def _meta_without(case: Case, *dropped: set[str]) -> dict[str, Any]:
    drop = set().union(*dropped)
    return {key: value for key, value in case.meta.items() if key not in drop}

def _autotune(case: Case, kernel: Any) -> Any:
    """``@triton.autotune``; in Triton's interpreter, benchmarked by the wall clock (no device to time on)."""
    options = {"do_bench": wall_clock_bench} if triton_interpreted() else {}
    options.update(case.autotune_options)
    return triton.autotune(configs=list(case.configs), key=list(case.key), **options)(kernel)

def autotune_heuristics(case: Case) -> tuple[Any, dict[str, Any]]:
    """``@triton.autotune`` outermost over ``@triton.heuristics`` (the order the recipe calls unsupported): the
    heuristics run on the config the autotuner picked, so the case's ``config_heuristics`` read its values."""
    kernel = _autotune(case, triton.heuristics({**case.heuristics, **case.config_heuristics})(case.kernel))
    return kernel, _meta_without(case, _config_keys(case), set(case.heuristics))

@dataclass(frozen=True)
class Wrapped:
    """What a style gives the paths: the op for inference, and for training either an op or the error
    that registering its backward raised (training paths report it; inference paths are unaffected)."""

    op: Callable[..., Any]
    train_op: Callable[..., Any] | None
    train_error: BaseException | None = None
    wrapped_as: str | None = None  # how an op as shipped is wrapped (``as_shipped``), for the records

    def trainable(self) -> Callable[..., Any]:
        if self.train_error is not None:
            raise self.train_error
        assert self.train_op is not None
        return self.train_op

def triton_op(case: Case, kernel: Any, meta: dict[str, Any], name: str) -> Wrapped:
    """``torch.library.triton_op`` launching ``wrap_triton(kernel)`` (the recipe's way, for a ``@triton.jit``
    or ``@triton.autotune`` kernel alike), with CPU fallback, autograd and flop formula; a backward kernel
    becomes a second ``triton_op`` (``<name>_backward``) launching ``wrap_triton`` of it."""

    def launch(*inputs: Any) -> Any:
        wrap = torch.library.wrap_triton
        return case.launch(wrap(kernel), *inputs, **_kernels(case, wrap), **meta)

    op = torch.library.triton_op(name, _with_signature(case, launch), mutates_args=case.mutates)
    return _register_library_op(case, op, name, torch.library.triton_op, torch.library.wrap_triton)

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
        message = f"{name} writes into {', '.join(case.mutates)}: {library_op.__name__} cannot train it ({error})"
        return Wrapped(op=op, train_op=None, train_error=RuntimeError(message))
    return Wrapped(op=op, train_op=op)

def wrapped_as(op: Callable[..., Any]) -> str:
    """How a shipped op is wrapped: ``autograd.Function X.apply``, ``torch.library op ns::name``, ``function f``."""
    owner = getattr(op, "__self__", None)
    if inspect.isclass(owner) and issubclass(owner, torch.autograd.Function):
        return f"autograd.Function {owner.__name__}.{op.__name__}"
    if isinstance(op, torch._ops.OpOverloadPacket | torch._ops.OpOverload):
        return f"torch.library op {op}"
    if isinstance(op, torch._library.custom_ops.CustomOpDef):
        return f"torch.library op {op._qualname}"
    if isinstance(op, torch.nn.Module):
        return f"nn.Module {type(op).__name__}"
    return f"function {getattr(op, '__module__', '?')}.{getattr(op, '__qualname__', type(op).__name__)}"

@dataclass
class Cell:
    """What a path works with: the case, the built style, where to run, and what it has seen so far."""

    case: Case
    style: str
    device: str
    tolerance: Tolerance
    workdir: Path
    wrapped: Wrapped | None = None
    stage: str = "build"
    diagnostics: dict[str, Any] = field(default_factory=dict)
    example: tuple[int, int] | None = None  # (size, seed) of the inputs now run; None: the case's first size
    share: bool = False  # may use what another cell of the run built from the same inputs (paths/export.py)
    compiled: bool = False  # the path compiled the model through ``backend`` (a compile-type path)
    trained: bool = False  # ... and trained it (its backward kernels must be compiled too)

    @property
    def id(self) -> str:
        return f"{self.case.id}-{self.style}"

    def inputs(self, size: int | None = None, seed: int | None = None, requires_grad: bool = False) -> Inputs:
        example_size, example_seed = self.example or (self.case.sizes[0], 0)
        inputs = self.case.make_inputs(
            example_size if size is None else size, self.device, example_seed if seed is None else seed
        )
        if requires_grad:
            return tuple(
                value.detach().requires_grad_(self.case.takes_grad(index, value))
                if isinstance(value, torch.Tensor)
                else value
                for index, value in enumerate(inputs)
            )
        return inputs

    def model(self, train: bool = False) -> torch.nn.Module:
        assert self.wrapped is not None
        op = self.wrapped.trainable() if train else self.wrapped.op
        return self.case.build_module(op).to(self.device)

    def reference_model(self) -> torch.nn.Module:
        return self.case.build_module(self.case.reference).to(self.device)

    def expected(self, inputs: Inputs) -> Any:
        """The reference's output (a tensor, or a tuple of several) on a copy of ``inputs``."""
        with torch.no_grad():
            return self.reference_model()(*copy_inputs(inputs))

    def synchronize(self) -> None:
        """Wait for the GPU, so that a fault of this cell's kernels surfaces here, at its stage."""
        if self.device == "cuda":
            torch.cuda.synchronize()

    def compare(self, what: str, actual: object, expected: object) -> None:
        self.stage = "compare"
        assert_match(what, actual, expected, self.tolerance)

    @contextmanager
    def timed(self, key: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.diagnostics[key] = round(self.diagnostics.get(key, 0.0) + time.perf_counter() - start, 3)

    def backend(self, **config_patches: Any) -> Callable[..., Any]:
        """Inductor, as ``torch.compile`` calls it, recording what the captured graph holds and when
        tracing ends, compiling starts and compiled code runs (so errors get the right stage)."""
        from torch._inductor.compile_fx import compile_fx, compile_fx_inner

        def inner(gm: torch.fx.GraphModule, example_inputs: Any, *args: Any, **kwargs: Any) -> Any:
            if kwargs.get("is_backward"):  # AOTAutograd's backward graph: does it hold the backward kernel?
                self.diagnostics["backward_graphs"] = self.diagnostics.get("backward_graphs", 0) + 1
                self.record_graph(gm, "captured_backward")
            return compile_fx_inner(gm, example_inputs, *args, **kwargs)

        def inductor(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
            self.stage = "compile"
            self.diagnostics["graphs"] = self.diagnostics.get("graphs", 0) + 1
            self.record_graph(gm)
            compiled = compile_fx(gm, example_inputs, inner_compile=inner, config_patches=config_patches or None)

            @functools.wraps(compiled)
            def run(*args: Any, **kwargs: Any) -> Any:
                self.stage = "run"
                return compiled(*args, **kwargs)

            self.stage = "trace"
            return run

        return inductor

    def record_graph(self, gm: torch.fx.GraphModule, key: str = "captured") -> None:
        """Keep the graph's user-kernel wrappers and harness ops under ``key`` (or nothing: the kernel was not
        captured), and the names of the Triton kernels the graph holds (``kernels_captured``)."""
        from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table

        captured = set(self.diagnostics.get(key, []))
        kernels = set(self.diagnostics.get("kernels_captured", []))
        # the graph's own nodes and those of the subgraphs its higher-order ops hold (an autograd.Function traced
        # whole is one ``autograd_function_apply`` node whose forward and backward bodies hold the kernels)
        graphs = [module.graph for module in gm.modules() if isinstance(module, torch.fx.GraphModule)]
        nodes = [node for graph in graphs for node in graph.nodes]
        for node in nodes:
            if node.op != "call_function":
                continue
            name = getattr(node.target, "__name__", str(node.target))
            qualified = str(node.target)
            if "triton_kernel_wrapper" in name or qualified.startswith("harness.") or "auto_functionalized" in name:
                captured.add(qualified if qualified.startswith("harness.") else name)
            if "triton_kernel_wrapper" in name and "kernel_idx" in node.kwargs:
                kernels.add(kernel_name(kernel_side_table.get_kernel(node.kwargs["kernel_idx"])))
        self.diagnostics[key] = sorted(captured)
        self.diagnostics["kernels_captured"] = sorted(kernels)

def _infer(cell: Cell, model: Callable[..., Any], inputs: Inputs, what: str = "output") -> None:
    """Run ``model`` without grad on a copy of ``inputs`` and compare its output(s) with the reference's."""
    with torch.no_grad():
        out = model(*copy_inputs(inputs))
    cell.synchronize()
    cell.compare(what, out, cell.expected(inputs))

def _compiled(cell: Cell, train: bool = False, **options: Any) -> Callable[..., Any]:
    cell.compiled, cell.trained = True, train
    patches = torch._inductor.list_mode_options(options.pop("mode", "default"), options.get("dynamic"))
    return torch.compile(cell.model(train), backend=cell.backend(**patches), **options)

def _first_call(cell: Cell, model: Callable[..., Any], inputs: Inputs) -> None:
    cell.stage = "trace"  # the backend moves it on to compile, then run
    with cell.timed("compile_seconds"):
        _infer(cell, model, inputs)

def dynamic(cell: Cell) -> None:
    """``torch.compile(dynamic=True)`` over every size the case declares; recompiles are counted."""
    model = _compiled(cell, dynamic=True)
    first, *rest = cell.case.sizes
    _first_call(cell, model, cell.inputs(first))
    graphs = cell.diagnostics.get("graphs", 0)
    for size in rest:
        cell.stage = "run"
        _infer(cell, model, cell.inputs(size), what=f"output at size {size}")
    cell.diagnostics["recompiles"] = cell.diagnostics.get("graphs", 0) - graphs

STYLE, PATH, DEVICE = 'triton_op_autotune_heuristics', 'dynamic', 'cuda'
SIZE, SEED = 67, 0  # the input the cell failed on


def main() -> None:
    import tempfile

    cell = Cell(
        case=CASE,
        style=STYLE,
        device=DEVICE,
        tolerance=Tolerance(atol=1e-05, rtol=1e-05),
        workdir=Path(tempfile.mkdtemp()),
    )
    cell.example = (SIZE, SEED)
    torch.manual_seed(0)
    cell.wrapped = triton_op(CASE, *autotune_heuristics(CASE), 'harness::layernorm_triton_op_autotune_heuristics')
    dynamic(cell)
    print(f"no failure: {CASE.id}-{STYLE}-{PATH} passes here")


if __name__ == "__main__":
    main()
