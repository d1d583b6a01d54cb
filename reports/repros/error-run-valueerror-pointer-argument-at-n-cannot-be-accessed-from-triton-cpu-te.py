"""add-autotune_heuristics-cpu_fallback: a reproducer written by triton-torch-matrix.

The harness recorded: error at run: ValueError: Pointer argument (at 0) cannot be accessed from Triton (cpu tensor?)
Measured on NVIDIA H100 80GB HBM3, torch 2.11.0+cu130, triton 3.6.0.
The same failure in 35 more cell(s): add-raw_jit-cpu_fallback, add-autotune-cpu_fallback, add-heuristics_autotune-cpu_fallback, sin-raw_jit-cpu_fallback, sin-autotune-cpu_fallback, sin-heuristics_autotune-cpu_fallback, sin-autotune_heuristics-cpu_fallback, silu-raw_jit-cpu_fallback, silu-autotune-cpu_fallback, silu-heuristics_autotune-cpu_fallback, silu-autotune_heuristics-cpu_fallback, softmax-raw_jit-cpu_fallback, softmax-autotune-cpu_fallback, softmax-heuristics_autotune-cpu_fallback, softmax-autotune_heuristics-cpu_fallback, matmul-raw_jit-cpu_fallback, matmul-autotune-cpu_fallback, matmul-heuristics_autotune-cpu_fallback, matmul-autotune_heuristics-cpu_fallback, add_inplace-raw_jit-cpu_fallback, add_inplace-autotune-cpu_fallback, add_inplace-heuristics_autotune-cpu_fallback, add_inplace-autotune_heuristics-cpu_fallback, rmsnorm-raw_jit-cpu_fallback, rmsnorm-autotune-cpu_fallback, rmsnorm-heuristics_autotune-cpu_fallback, rmsnorm-autotune_heuristics-cpu_fallback, layernorm-raw_jit-cpu_fallback, layernorm-autotune-cpu_fallback, layernorm-heuristics_autotune-cpu_fallback, layernorm-autotune_heuristics-cpu_fallback, sin_triton_backward-raw_jit-cpu_fallback, sin_triton_backward-autotune-cpu_fallback, sin_triton_backward-heuristics_autotune-cpu_fallback, sin_triton_backward-autotune_heuristics-cpu_fallback.

Run it with python: it raises while the failure is there (exit 1) and prints "no failure" once it is fixed.
It needs torch, triton and the case's own imports. It is the cell's program: the harness's functions the cell
ran are copied in as they are (first), then the case, the style, the path, and the main the cell ran them by.
Program digest (sha256 of the harness code copied in, as the cell's record holds it): 704d9d47364b1c61ce7fbf568ded0f8c53901c4f58673c6547eb9b5b22dae2c1
"""

from __future__ import annotations

import os

import copy
import dataclasses
import enum
import functools
import inspect
import itertools
import keyword
import linecache
import re
import sys
import tempfile
import time
import torch
import torch.compiler.config
import triton
import types
from contextlib import contextmanager
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path


# ---- what the program uses: the harness's own code, as the cell ran it ----

Tensor = torch.Tensor


OPTIONAL_TENSOR = Tensor | None


ARG_TYPES = (float, int, bool, OPTIONAL_TENSOR)  # the types arg_types may give an argument (default: Tensor)


CALLABLE_FIELDS = ("reference", "make_inputs", "launch", "backward", "flops", "bytes_moved", "cpu_kernel", "module",
                   "launch_backward", "shipped", "shipped_module")  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class Case:
    """A kernel and everything the harness needs to wrap it in every style and check it on every path.

    - ``id``: the case's id, the first part of its cell ids (``id-style-path``): letters, digits and ``_``.
    - ``arg_names``: the op's arguments, one name per value ``make_inputs`` gives (the library ops' schemas use them).
    - ``sizes``: the sizes ``make_inputs`` is called with: every cell runs the first, ``dynamic`` all of them.
    - ``meta``: the constexprs a plain ``@triton.jit`` launch passes in ``**meta``; an autotuned stack drops the
      ones its ``configs`` set (a launch then computes its grid from the ``meta`` the autotuner gives it).
    - ``configs`` and ``key``: the ``triton.Config`` list and the key (argument names) of ``@triton.autotune``.
    - ``dtype``: the dtype of the op's floating inputs, which picks its tolerance (matrix.toml ``[tolerances]``).
    - ``mutates``: the arguments the op writes into (an in-place op, whose ``launch`` returns ``None``).
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
      in the records (default: inferred). A ``shipped_module`` with parameters: ``reference`` takes them after the
      op's arguments (in ``parameters()`` order, the module built seeded); their gradients are compared too.
      Such a module is a case of its own, with no ``kernel`` (refused at load: the kernel's op gets no parameters).
    - ``no_grad``: the float tensor arguments that take no gradient (RoPE's cos/sin caches): never given
      ``requires_grad``, their gradient never asked of ``backward``.
    - ``backward(inputs, output, grad)`` (optional: by default autograd of ``reference``): gradients of the op's
      arguments (``None`` for a scalar, a ``None`` optional tensor or an integer tensor), in PyTorch ops. With
      several ``outputs``, ``output`` and ``grad`` are tuples (a grad of zeros for an output that got none). For
      an op that writes into its inputs (``mutates``): ``output`` is the first input it writes, as the call left
      it, and ``grad`` that input's gradient; an input named in ``mutates`` arrives as ``None`` (it was
      overwritten), or with ``save_mutated`` as it was before the call.
    - ``save_mutated``: the backward of an op that writes into its inputs gets them as they were before the call
      (what an ``autograd.Function`` author saves for a non-linear in-place op, ``x <- clamp(x * scale, lo,
      hi)``): the training wrapper copies them before each launch. Only the launcher styles train such an op.
    - ``backward_kernel`` and ``launch_backward(kernel, inputs, output, grad)``: optionally, the backward as a
      ``@triton.jit`` kernel and its launch (same contract as ``backward``), which the styles then run in
      their backward: the launcher's ``autograd.Function`` calls it, ``triton_op`` wraps it in a second
      ``triton_op`` and ``custom_op`` in a second ``custom_op`` (``<op>_backward``), whose CPU kernel is
      ``backward``. The decorator stacks apply to ``kernel`` only: the backward kernel stays plain. (Not for an
      op with an optional tensor argument, whose gradient may be ``None``; for one that writes into its inputs,
      only the launcher trains: ``torch.library`` registers no autograd for a mutating op, a build error.)
    - ``flops(*args)`` (optional): the op's flop count, given each tensor argument's shape (other arguments as they
      are), as ``FlopCounterMode`` should report; without it the ``flop_counter`` cells are skips.
    - ``bytes_moved(*inputs)`` (optional): the bytes one forward call reads and writes, given its inputs; the
      speed section then shows the achieved GB/s and its share of the GPU's copy bandwidth.
    - ``bandwidth_size`` (optional): a size ``make_inputs`` is given at which one call is bound by memory
      bandwidth, not by its launch (``sizes[0]`` is small: a call there is launch-bound), e.g. ``1 << 24``
      elements for an elementwise op, or 16384 rows for a row-wise one. A passing timed cell whose artifact takes
      another size (eager, the ``torch.compile`` paths, training; not an export or AOTInductor artifact compiled
      for one shape) is checked against ``reference`` at it and then timed at it too: the speed section, ``which
      --fastest`` and ``gate --speed`` report that bandwidth-bound regime apart from the launch-bound one.
    - Outputs that are not floating point (a dropout's keep mask, argmax indices) are compared exactly and
      never differentiated.
    - ``heuristics``: constexpr name -> ``fn(args)``, computed from the call's arguments only: it also runs
      where ``@triton.heuristics`` is outermost, over ``@triton.autotune``, and sees no config value.
    - ``config_heuristics``: the heuristics that read a value of the autotune config (e.g. ``BLOCK_SIZE``);
      they replace ``heuristics`` of the same name where ``@triton.heuristics`` sits under
      ``@triton.autotune`` and sees the config the autotuner picked (the reason that order exists).
    - ``cpu_kernel``: the CPU implementation registered for the library styles (default: ``reference``).
    - ``autotune_options``: extra ``triton.autotune`` arguments the kernel needs (e.g. ``restore_value``).
    - ``module(op)``: the ``nn.Module`` the paths run, built around ``op`` (a plain function calling the style's op
      the way user code does: ``harness.kernel.model``); by default a module whose ``forward`` calls the op.
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
    bytes_moved: Callable[..., int] | None = None
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
    bandwidth_size: int | None = None
    save_mutated: bool = False

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
        if self.save_mutated and not self.mutates:
            raise ValueError(f"case {self.id!r}: save_mutated keeps the inputs an op writes into: name them in mutates")
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
        size = self.bandwidth_size
        if size is not None and (type(size) is not int or size < 1):  # a bool, 1.5, NaN, "16M" are no size
            raise ValueError(f"case {self.id!r}: bandwidth_size must be a whole number of 1 or more, got {size!r}")
        for name in CALLABLE_FIELDS:
            value = getattr(self, name)
            if value is not None and not callable(value):
                raise ValueError(f"case {self.id!r}: {name} must be a function (or None), got {value!r:.80}")
        if self.outputs < 1:
            raise ValueError(f"case {self.id!r}: outputs must be 1 or more, got {self.outputs}")
        if (self.backward_kernel is None) != (self.launch_backward is None):
            raise ValueError(f"case {self.id!r}: give both backward_kernel and launch_backward, or neither")
        if self.backward_kernel is not None and OPTIONAL_TENSOR in self.arg_types.values():
            raise ValueError(f"case {self.id!r}: a backward_kernel needs every tensor argument given")

    @property
    def bounds(self) -> tuple[int, int]:
        """``size_bounds``, or its default: 1 to twice the largest of ``sizes``."""
        return self.size_bounds or (1, 2 * max(self.sizes))

    def sizes_around(self, traced: int) -> list[int]:
        """At least two sizes other than ``traced`` to run a dynamic-shape artifact at: the case's other sizes, topped
        up with sizes next to the traced one, all within ``size_bounds``."""
        low, high = self.bounds
        others = [size for size in dict.fromkeys(self.sizes) if size != traced and low <= size <= high]
        for size in (traced + 1, traced - 1, high, low):
            if len(others) < 2 and size != traced and size not in others and low <= size <= high:
                others.append(size)
        return others

    def shipped_parameters(self) -> tuple[Tensor, ...]:
        """The parameters of ``shipped_module`` built seeded, as the paths build it (none without one): what
        ``reference`` takes after the op's arguments."""
        if self.shipped_module is None:
            return ()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            return tuple(parameter.detach() for parameter in self.shipped_module().parameters())

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


CUDA_FAULT_MARKERS = ("illegal memory access", "device-side assert", "unspecified launch failure", "CUDA error")


OMIT = {"omit": True}  # field metadata: a record's JSON leaves the field out while it holds its default


@dataclass(frozen=True)
class Capture:
    """What a cell's path saw of the kernel: what the compiled graphs held, what was launched, what a subsystem
    counted. The facts a verdict reads (harness/cell/verdict.py), filled by the cell as its path runs."""

    compiled: bool = field(default=False, metadata=OMIT)  # the path compiled the model through Inductor
    trained: bool = field(default=False, metadata=OMIT)  # ... and ran its backward
    graphs: int = field(default=0, metadata=OMIT)  # graphs Dynamo handed Inductor
    backward_graphs: int = field(default=0, metadata=OMIT)  # AOTAutograd's backward graphs
    # the user-kernel wrappers and harness library ops the forward (backward) graphs held
    captured: tuple[str, ...] = field(default=(), metadata=OMIT)
    captured_backward: tuple[str, ...] = field(default=(), metadata=OMIT)
    kernels_captured: tuple[str, ...] = field(default=(), metadata=OMIT)  # Triton kernels in a graph, by name
    kernels_launched: tuple[str, ...] = field(default=(), metadata=OMIT)  # Triton kernels the cell launched
    graph_breaks: int = field(default=0, metadata=OMIT)
    graph_break_reasons: tuple[str, ...] = field(default=(), metadata=OMIT)  # the most frequent first
    recompiles: int | None = field(default=None, metadata=OMIT)
    cudagraph_skips: int | None = field(default=None, metadata=OMIT)
    flops: int | None = field(default=None, metadata=OMIT)  # FlopCounterMode's count for the op
    declared_flops: int | None = field(default=None, metadata=OMIT)  # the case's formula, on the same call


class CaseBug(Exception):
    """The case's own code (``make_inputs``, or the reference) failed at inputs the cell drew, which the case's load
    check did not run: a bug of the case, not of the style (its error type is ``CASE_BUG``)."""


class CaseProblem(Exception):
    """A field of a case that is wrong: ``field: problem``."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")


@dataclass
class Measurements:
    """What a cell's record says beside its verdict facts and no verdict reads: how the op is wrapped, the example
    drawn, timings, memory, and which process and worker ran it (a run's timeline, its memory series)."""

    wrapped_as: str | None = field(default=None, metadata=OMIT)  # the op as shipped: how its library wraps it
    example: dict[str, int] | None = field(default=None, metadata=OMIT)  # {"size", "seed"} of a drawn failure
    flaky_example: bool = field(default=False, metadata=OMIT)
    as_close_as_reference: dict[str, str] | None = field(default=None, metadata=OMIT)  # gradient -> why it is
    package_built_by: str | None = field(default=None, metadata=OMIT)  # the cell whose AOTInductor package it ran
    calls: int | None = field(default=None, metadata=OMIT)  # model calls compared
    export_seconds: float | None = field(default=None, metadata=OMIT)
    compile_seconds: float | None = field(default=None, metadata=OMIT)
    run_seconds: float | None = field(default=None, metadata=OMIT)
    cpu_seconds: float | None = field(default=None, metadata=OMIT)
    rss_mb: float | None = field(default=None, metadata=OMIT)
    peak_rss_mb: float | None = field(default=None, metadata=OMIT)
    gpu_peak_mb: float | None = field(default=None, metadata=OMIT)
    pid: int | None = field(default=None, metadata=OMIT)
    nth: int | None = field(default=None, metadata=OMIT)  # the how-many-th cell of its process
    gpu: str | None = field(default=None, metadata=OMIT)  # CUDA_VISIBLE_DEVICES of its process
    started: float | None = field(default=None, metadata=OMIT)  # seconds since the epoch
    ended: float | None = field(default=None, metadata=OMIT)  # the last attempt's end
    worker: str | None = field(default=None, metadata=OMIT)  # the pytest process: its lane on the timeline
    process_start: float | None = field(default=None, metadata=OMIT)  # seconds a fresh cell process took
    replaced_above_rss_mb: float | None = field(default=None, metadata=OMIT)
    program: str | None = field(default=None, metadata=OMIT)  # sha256 of the program text run (its repro holds it)
    # seconds the cell spent in each of its stages (setup, build, trace, compile, run, compare, end): the cost model
    stage_seconds: dict[str, float] | None = field(default=None, metadata=OMIT)


@dataclass(frozen=True)
class RunLocations:
    """What the cells of one run share, handed to each cell process in its request (never through environment
    variables, which the code under test would see): the run's standalone server (harness/cell/standalone.py;
    None: the cell starts its own) and the folder of AOTInductor packages aoti_strict and aoti_standalone share
    (None: nothing shared)."""

    standalone: str | None = None
    packages: str | None = None


class Mismatch(AssertionError):
    """The cell ran, but a number it produced differs from the reference: status ``wrong``."""


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


def nth(what: str, index: int) -> str:
    """``what`` naming output ``index`` of several: ``output of call 2`` -> ``output 1 of call 2``."""
    head, found, tail = what.partition("output")
    return f"{head}output {index}{tail}" if found else f"{what} {index}"


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


MODEL_CLASS = "Model"


@dataclass(frozen=True)
class OpCall:
    """How user code names an op: ``expression`` (``Fn.apply``, ``torch.ops.ns.name``, ``fn``), given the global
    ``names`` it reads."""

    expression: str
    names: dict[str, Any] = field(default_factory=dict)


_MODULES = itertools.count()


def _execute(source: str, names: dict[str, Any], label: str) -> dict[str, Any]:
    """Run generated ``source`` as a module of its own (export resolves a model class's module by name) with ``names``
    among its globals; its lines are registered with linecache, so tracebacks and Dynamo's messages show them."""
    name = f"user_model_{next(_MODULES)}"
    filename = f"<{name}: {label}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    module = types.ModuleType(name)
    module.__dict__.update(torch=torch, **names)
    sys.modules[name] = module
    exec(compile(source, filename, "exec"), module.__dict__)
    return module.__dict__


def literal(value: Any) -> str | None:
    """``value`` as Python source where its ``repr`` reads back as an equal value, else None."""
    text = repr(value)
    try:
        same = eval(text, {"__builtins__": {}}) == value  # repr of a literal: no name to resolve
    except Exception:
        return None
    return text if same else None


def model_source(
    expression: str, params: Sequence[str], mutated: Sequence[int], extra: Sequence[str] = (), name: str = MODEL_CLASS
) -> str:
    """The source of class ``name``: ``forward`` calls ``expression`` on its arguments (then ``extra``, the library's
    own argument choices, as source); an op that writes into its inputs gets copies of those and returns the first."""
    args = ", ".join([*params, *extra])
    lines = [f"class {name}(torch.nn.Module):", f"    def forward(self, {', '.join(params)}):"]
    if not mutated:
        return "\n".join([*lines, f"        return {expression}({args})", ""])
    lines += [f"        {params[index]} = {params[index]}.clone()" for index in mutated]
    return "\n".join([*lines, f"        {expression}({args})", f"        return {params[mutated[0]]}", ""])


RESERVED = {"torch", "self", MODEL_CLASS}


def identifier(name: str, fallback: str) -> str:
    """``name`` where it can be a global of user code, else ``fallback``."""
    ok = name.isidentifier() and not keyword.iskeyword(name) and name not in RESERVED
    return name if ok else fallback


def is_function_apply(op: Any) -> bool:
    """Whether ``op`` is the ``apply`` of a ``torch.autograd.Function`` subclass."""
    owner = getattr(op, "__self__", None)
    return inspect.isclass(owner) and issubclass(owner, torch.autograd.Function) and op.__name__ == "apply"


def library_name(op: Any) -> str | None:
    """``ns::name`` (``ns::name.overload``) of a ``torch.library`` op, None for anything else."""
    if isinstance(op, torch._library.custom_ops.CustomOpDef):
        return op._qualname
    if isinstance(op, torch._ops.OpOverloadPacket):
        return op._qualified_op_name
    if isinstance(op, torch._ops.OpOverload):
        return f"{op._schema.name}.{op._overloadname}"
    return None


def op_call(op: Callable[..., Any]) -> OpCall:
    """How a user's ``forward`` calls ``op``: the Function's ``apply`` through its class, a library op through
    ``torch.ops``, any other callable by its own name."""
    if is_function_apply(op):
        owner = op.__self__  # type: ignore[attr-defined]
        name = identifier(owner.__name__, "KernelFunction")
        return OpCall(f"{name}.apply", {name: owner})
    qualified = library_name(op)
    if qualified is not None:
        namespace, _, rest = qualified.partition("::")
        return OpCall(f"torch.ops.{namespace}.{rest}")
    name = identifier(getattr(op, "__name__", ""), "op")
    return OpCall(name, {name: op})


def op_function_source(name: str, expression: str, params: Sequence[str], extra: Sequence[str] = ()) -> str:
    """A plain function calling ``expression`` (a case's own ``module`` gets it: what it holds is a function)."""
    args = ", ".join([*params, *extra])
    return f"def {name}({', '.join(params)}):\n    return {expression}({args})\n"


def parameters(case: Case) -> list[str]:
    """``forward``'s parameter names: the case's argument names where they can be Python names."""
    names = [identifier(name, f"arg{index}") for index, name in enumerate(case.arg_names)]
    return names if len(set(names)) == len(names) else [f"arg{index}" for index in range(len(names))]


def reference_source(case: Case, expression: str, name: str = "Reference") -> str:
    """The source of class ``name`` calling the reference ``expression``. For a ``shipped_module`` case it holds the
    module's parameters (built seeded, as the module is: the same values) and passes them after the op's arguments,
    so their gradients are compared too; it reads ``CASE``."""
    params = parameters(case)
    if case.shipped_module is None:
        return model_source(expression, params, case.mutates_index, name=name)
    source = model_source(expression, params, case.mutates_index, ["*self.shipped.parameters()"], name)
    head, forward = source.split("\n", 1)
    init = ["    def __init__(self):", "        super().__init__()", "        self.shipped = CASE.shipped_module()"]
    return "\n".join([head, *init, forward])


def build_model(case: Case, op: Callable[..., Any], extra: Sequence[Any] = ()) -> torch.nn.Module:
    """The module the paths run around ``op`` (seeded: every style gets the same parameters): the case's own
    ``module`` given a plain function calling ``op``, a shipped ``nn.Module`` as it is (a copy: no state crosses
    cells), or the template's model calling ``op`` directly. ``extra``: arguments passed after the inputs."""
    torch.manual_seed(0)
    if isinstance(op, torch.nn.Module) and not extra:
        if not case.mutates:
            return copy.deepcopy(op)
        call = OpCall("shipped", {"shipped": copy.deepcopy(op)})
    else:
        call = op_call(op)
    params = parameters(case)
    names = dict(call.names)
    extra_source = []
    for index, value in enumerate(extra):
        text = literal(value)
        if text is None:
            text = f"SHIPPED_ARG_{index}"
            names[text] = value
        extra_source.append(text)
    if case.module is not None:
        name = "op" if call.expression != "op" else "call_op"
        source = op_function_source(name, call.expression, params, extra_source)
        return case.module(_execute(source, names, f"{case.id} op")[name])
    if op is case.reference and not extra:  # the reference (and the control): with a shipped module's parameters
        source = reference_source(case, call.expression, MODEL_CLASS)
        return _execute(source, {**names, "CASE": case}, f"{case.id} reference")[MODEL_CLASS]()
    source = model_source(call.expression, params, case.mutates_index, extra_source)
    return _execute(source, names, f"{case.id} model")[MODEL_CLASS]()


def bytes_moved(case: Case, inputs: Inputs) -> int | None:
    """The bytes the case declares one call on ``inputs`` moves (None without a declaration, or where it cannot
    say: a case's helper failing here must not fail its cell)."""
    if case.bytes_moved is None:
        return None
    try:
        return int(case.bytes_moved(*inputs))
    except Exception:
        return None


def _is(value: Any, kind: Any) -> bool:
    if kind == OPTIONAL_TENSOR:
        return value is None or isinstance(value, torch.Tensor)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def check_inputs(case: Case, inputs: Any) -> None:
    """``CaseProblem`` where ``make_inputs`` gave what ``arg_names`` and ``arg_types`` do not declare."""
    if not isinstance(inputs, tuple):
        raise CaseProblem("make_inputs", f"expected a tuple, got {type(inputs).__name__}")
    if len(inputs) != len(case.arg_names):
        raise CaseProblem("make_inputs", f"gives {len(inputs)} inputs, arg_names names {len(case.arg_names)}")
    for index, (name, value) in enumerate(zip(case.arg_names, inputs, strict=True)):
        kind = case.arg_type(name)
        if not _is(value, kind):
            expected = "Tensor or None" if kind == OPTIONAL_TENSOR else kind.__name__
            got = type(value).__name__
            raise CaseProblem("make_inputs", f"input {index} ({name}): expected {expected}, got {got}")
    if case.dynamic_dims is not None:
        if len(case.dynamic_dims) != len(inputs):
            raise CaseProblem("dynamic_dims", f"names {len(case.dynamic_dims)} inputs, make_inputs gives {len(inputs)}")
        for index, (dims, value) in enumerate(zip(case.dynamic_dims, inputs, strict=True)):
            tensor = isinstance(value, torch.Tensor)
            if any(not 0 <= dim < (value.dim() if tensor else 0) for dim in dims):
                what = f"a tensor of {value.dim()} dims" if tensor else f"a {type(value).__name__}"
                raise CaseProblem(f"dynamic_dims[{index}]", f"dims {dims} of {case.arg_names[index]}, {what}")


def copy_tensor(tensor: Tensor) -> Tensor:
    """A detached copy with the same shape and strides (``clone`` makes a sliced view contiguous)."""
    tensor = tensor.detach()
    if 0 in tensor.stride() or tensor.is_contiguous():  # an expanded tensor cannot be written stride for stride
        return tensor.clone()
    return torch.empty_strided(tensor.shape, tensor.stride(), dtype=tensor.dtype, device=tensor.device).copy_(tensor)


def copy_inputs(inputs: Inputs) -> Inputs:
    """The inputs with every tensor copied (detached, its strides kept: a strided view stays strided), the rest
    (scalars, ``None``) as they are."""
    return tuple(copy_tensor(value) if isinstance(value, Tensor) else value for value in inputs)


def inference_call(model: Callable[..., Any], inputs: Inputs) -> Callable[[], object]:
    """One call of ``model`` without grad on a copy of ``inputs`` (which the path copies before each call of its
    own: they stay as made), the copy made at the first call, not while the cell runs, and then reused (no copy
    inside a timed call)."""
    own: list[Inputs] = []

    def call() -> object:
        own[:] = own or [copy_inputs(inputs)]
        with torch.no_grad():
            return model(*own[0])

    return call


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
    capture: Capture = field(default_factory=Capture)  # what the path saw of the kernel: the verdict's facts
    measurements: Measurements = field(default_factory=Measurements)
    example: tuple[int, int] | None = None  # (size, seed) of the inputs now run; None: the case's first size
    share: bool = False  # may use what another cell of the run built from the same inputs (paths/export.py)
    locations: RunLocations = field(default_factory=RunLocations)  # the run's standalone server and packages
    # the artifact its check called, as one call (and the bytes the case says that call moves): what a pass on a
    # timed path keeps for the run's timing phase (harness/cell/timing.py)
    timed_call: Callable[[], object] | None = None
    bytes_moved: int | None = None
    # the artifact itself (called on other inputs at the case's bandwidth size), and whether the call is a training
    # step (harness/cell/bandwidth.py)
    timed_model: Callable[..., Any] | None = None
    timed_train: bool = False
    clock: dict[str, float] = field(default_factory=dict)  # seconds spent in each stage so far
    since: float = field(default_factory=time.perf_counter)  # when the current stage began

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "stage" and "since" in vars(self):  # the stage so far is charged its seconds
            self.lap()
        object.__setattr__(self, name, value)

    def lap(self, stage: str | None = None) -> None:
        """Charge the seconds since the last lap to ``stage`` (the current stage by default)."""
        now = time.perf_counter()
        key = stage or self.stage
        self.clock[key] = self.clock.get(key, 0.0) + now - self.since
        object.__setattr__(self, "since", now)

    @property
    def case_style(self) -> str:
        """``case-style``: the cell id without its path (what cells of one case and style share)."""
        return f"{self.case.id}-{self.style}"

    @property
    def op_prefixes(self) -> tuple[str, ...]:
        """How a graph names the style's op: a harness op, or the ``torch.library`` op the case ships."""
        shipped = library_op_name(self.case.shipped) if self.style == AS_SHIPPED else None
        return ("harness.", *((shipped.replace("::", ".") + ".",) if shipped else ()))

    def saw(self, **facts: Any) -> None:
        """Add ``facts`` (``Capture`` fields) to what the path saw."""
        self.capture = dataclasses.replace(self.capture, **facts)

    def at(self, size: int | None, seed: int | None) -> tuple[int, int]:
        """``size`` and ``seed``, by default the example's (outside a drawn example: the case's first size, seed 0)."""
        example_size, example_seed = self.example or (self.case.sizes[0], 0)
        return example_size if size is None else size, example_seed if seed is None else seed

    def inputs(self, size: int | None = None, seed: int | None = None, requires_grad: bool = False) -> Inputs:
        size, seed = self.at(size, seed)
        with self.own("make_inputs", size, seed):
            inputs = self.case.make_inputs(size, self.device, seed)
            check_inputs(self.case, inputs)
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
        return build_model(self.case, op, self.wrapped.args).to(self.device)

    def reference_model(self) -> torch.nn.Module:
        return build_model(self.case, self.case.reference).to(self.device)

    def expected(self, inputs: Inputs) -> Any:
        """The reference's output (a tensor, or a tuple of several) on a copy of ``inputs``."""
        with torch.no_grad(), self.own("reference"):
            return self.reference_model()(*copy_inputs(inputs))

    @contextmanager
    def own(self, field: str, size: int | None = None, seed: int | None = None) -> Iterator[None]:
        """The case's own ``field`` runs in the block (at ``size`` and ``seed``, by default the example's): an
        exception it raises is a ``CaseBug`` naming it and the inputs; a GPU fault or out of memory stays as it is
        (an earlier kernel's, or the machine's)."""
        try:
            yield
        except Exception as error:
            message = str(error).strip() or repr(error)
            if isinstance(error, torch.cuda.OutOfMemoryError) or any(m in message for m in CUDA_FAULT_MARKERS):
                raise
            size, seed = self.at(size, seed)
            problem = (
                message.partition(": ")[2] if isinstance(error, CaseProblem) else f"{type(error).__name__}: {message}"
            )
            raise CaseBug(
                f"the case's {field} failed at size {size}, seed {seed} on {self.device} (its load check runs its "
                f"first size on CPU only): {problem}"
            ) from error

    def keep_call(self, model: Callable[..., Any], inputs: Inputs) -> None:
        """The first artifact the path checks, on the inputs it checked it with, is the one timed."""
        if self.timed_call is None:
            self.timed_call = inference_call(model, inputs)
            self.bytes_moved = bytes_moved(self.case, inputs)
            self.timed_model = model

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
            spent = (getattr(self.measurements, key) or 0.0) + time.perf_counter() - start
            setattr(self.measurements, key, round(spent, 3))

    def backend(self, **config_patches: Any) -> Callable[..., Any]:
        """Inductor, as ``torch.compile`` calls it, recording what the captured graph holds and when
        tracing ends, compiling starts and compiled code runs (so errors get the right stage)."""
        from torch._inductor.compile_fx import compile_fx, compile_fx_inner

        def inner(gm: torch.fx.GraphModule, example_inputs: Any, *args: Any, **kwargs: Any) -> Any:
            if kwargs.get("is_backward"):  # AOTAutograd's backward graph: does it hold the backward kernel?
                self.saw(backward_graphs=self.capture.backward_graphs + 1)
                self.record_graph(gm, backward=True)
            return compile_fx_inner(gm, example_inputs, *args, **kwargs)

        def inductor(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
            self.stage = "compile"
            self.saw(graphs=self.capture.graphs + 1)
            self.record_graph(gm)
            # AOTAutograd's cache would hand back a compiled backward without compiling it, so unseen: the graphs
            # are compiled (Inductor's FX cache still serves their code), and the backward graph is seen
            with torch._functorch.config.patch(enable_autograd_cache=False):
                compiled = compile_fx(gm, example_inputs, inner_compile=inner, config_patches=config_patches or None)

            @functools.wraps(compiled)
            def run(*args: Any, **kwargs: Any) -> Any:
                self.stage = "run"
                return compiled(*args, **kwargs)

            self.stage = "trace"
            return run

        return inductor

    def record_graph(self, gm: torch.fx.GraphModule, backward: bool = False) -> None:
        """Keep the graph's user-kernel wrappers and harness ops (``captured``, or ``captured_backward`` for a
        ``backward`` graph; nothing: the kernel was not captured), and the names of the Triton kernels the graph
        holds (``kernels_captured``)."""
        from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table

        key = "captured_backward" if backward else "captured"
        captured = set(getattr(self.capture, key))
        kernels = set(self.capture.kernels_captured)
        # the graph's own nodes and those of the subgraphs its higher-order ops hold (an autograd.Function traced
        # whole is one ``autograd_function_apply`` node whose forward and backward bodies hold the kernels)
        graphs = [module.graph for module in gm.modules() if isinstance(module, torch.fx.GraphModule)]
        nodes = [node for graph in graphs for node in graph.nodes]
        prefixes = self.op_prefixes
        for node in nodes:
            if node.op != "call_function":
                continue
            name = getattr(node.target, "__name__", str(node.target))
            qualified = str(node.target)
            own = f"{qualified}.".startswith(prefixes)  # an op, or its overload (``ns.name.default``)
            if "triton_kernel_wrapper" in name or own or "auto_functionalized" in name:
                captured.add(qualified if own else name)
            if "triton_kernel_wrapper" in name and "kernel_idx" in node.kwargs:
                kernels.add(kernel_name(kernel_side_table.get_kernel(node.kwargs["kernel_idx"])))
        self.saw(**{key: tuple(sorted(captured)), "kernels_captured": tuple(sorted(kernels))})


@dataclass(frozen=True)
class Tolerance:
    """How far an output may be from the reference (``torch.testing.assert_close``'s atol and rtol)."""

    atol: float
    rtol: float


class Rerun(enum.StrEnum):
    """When a cell is run again within its run (matrix.toml [run] reruns) for the status it ended with."""

    ALWAYS = "always"  # its attempts may differ whatever the baseline says
    UNEXPECTED = "unexpected"  # only when the baseline expected another status
    NEVER = "never"


@dataclass(frozen=True)
class StatusRule:
    """One status's row: its chart mark, how severe it is, and how the run, --reuse and the chart's goals treat
    it."""

    symbol: str  # its mark in the chart
    severity: int  # a flaky cell's attempts are listed most severe first; 0: none to list (a pass)
    failure: bool  # the cell failed (a graph break and a skip are neither a pass nor a failure)
    rerun: Rerun
    reusable: bool  # a deterministic verdict: --reuse keeps it while the cell's key is unchanged
    against_style: bool  # a goal's style is not even a near miss for it (a graph break is a near miss at worst)
    letter: str | None  # pytest's short letter for it; None: pytest's own (pass, skip)


class Status(enum.StrEnum):
    """A cell's verdict (a plain string in JSON); a new one is one line here and one row of ``STATUS_TABLE``."""

    PASS = "pass"  # ran, and every output (and gradient) matched the reference
    # right numbers, but on a compile-type path the style's kernel ran outside the compiled graph (Dynamo broke
    # the graph around it): neither a pass nor a failure
    GRAPH_BREAK = "graph_break"
    WRONG = "wrong"  # ran without an error, but an output or a gradient differs: silent wrong numbers
    # right numbers, but a PyTorch subsystem did not see the kernel (FlopCounterMode counted 0): deterministic, so
    # never re-run
    BLIND = "blind"
    ERROR = "error"  # raised an exception
    CRASH = "crash"  # a process died
    TIMEOUT = "timeout"  # no result within the path's timeout
    SKIP = "skip"  # cannot run on this machine

    @property
    def rule(self) -> StatusRule:
        """What the harness does with a cell that got this status (its row of ``STATUS_TABLE``)."""
        return STATUS_TABLE[self]


STATUS_TABLE: dict[Status, StatusRule] = {
    # status: StatusRule(symbol, severity, failure, rerun, reusable, against_style, letter)
    Status.PASS: StatusRule("✅", 0, False, Rerun.UNEXPECTED, True, False, None),
    Status.GRAPH_BREAK: StatusRule("✂️", 2, False, Rerun.UNEXPECTED, True, False, "G"),
    Status.WRONG: StatusRule("❗WRONG", 7, True, Rerun.ALWAYS, False, True, "W"),
    Status.BLIND: StatusRule("🔇", 6, True, Rerun.UNEXPECTED, True, True, "B"),
    Status.ERROR: StatusRule("❌", 3, True, Rerun.UNEXPECTED, True, True, "E"),
    Status.CRASH: StatusRule("💥", 5, True, Rerun.UNEXPECTED, False, True, "C"),
    Status.TIMEOUT: StatusRule("⏱️", 4, True, Rerun.UNEXPECTED, False, True, "T"),
    Status.SKIP: StatusRule("➖", 1, False, Rerun.NEVER, True, True, None),
}


VERDICT_WORDS = {Status.WRONG: "wrong numbers: ", Status.GRAPH_BREAK: "graph break: ", Status.BLIND: ""}


class VerdictFailure(AssertionError):
    """A cell that ran to its end and failed its verdict (wrong numbers, a graph break, a blind count)."""


@dataclass(frozen=True)
class Facts:
    """What a verdict reads: the capture, what kernel the style has, whether the case has a backward kernel, and
    the first output or gradient unlike the reference (None: every number matched)."""

    capture: Capture
    kernel: Kernel
    backward_kernel: bool = False
    mismatch: str | None = None


class Kernel(enum.Enum):
    """What of the style a compiled graph must hold for the kernel to count as compiled."""

    NONE = "none"  # the control: no kernel of its own
    OP = "op"  # the style's op (a library op is captured whole)
    KERNELS = "kernels"  # the op as shipped, no library op: every user kernel it launched


INDUCTOR_KERNEL = re.compile(r"^triton_(poi|red|per|tem|for|tma|mm|bmm|unk|helper)_")


def user_kernels(names: list[str]) -> list[str]:
    """The names of kernels a user (the case, the library) wrote, without the ones Inductor generated."""
    return [name for name in names if not INDUCTOR_KERNEL.match(name)]


def outside(facts: Facts) -> list[str]:
    """On a compile-type path, what of the style's kernel ran outside the compiled graphs (nothing for the
    control, which has no kernel of its own, or off a compile-type path)."""
    capture = facts.capture
    if not capture.compiled or facts.kernel is Kernel.NONE:
        return []
    missed = [] if capture.captured else ["the kernel ran outside the compiled graph"]
    if capture.trained and facts.backward_kernel and not capture.captured_backward:  # it ran eagerly
        missed.append("the backward kernel ran outside the compiled graph")
    if facts.kernel is Kernel.KERNELS:
        uncaptured = sorted(set(user_kernels(list(capture.kernels_launched))) - set(capture.kernels_captured))
        missed += [f"kernel(s) {', '.join(uncaptured)} ran outside the compiled graph"] if uncaptured else []
    return missed


def verdict(facts: Facts) -> tuple[Status, str | None]:
    """The status and what it says: wrong (the mismatch), blind (the counts), graph_break (what ran outside the
    compiled graph, with Dynamo's break reasons), else pass (None)."""
    capture = facts.capture
    if facts.mismatch is not None:
        return Status.WRONG, facts.mismatch
    if facts.kernel is not Kernel.NONE and capture.declared_flops is not None:
        if capture.flops != capture.declared_flops:
            counted, declared = capture.flops, capture.declared_flops
            return Status.BLIND, f"flops: FlopCounterMode counted {counted} for the op, the case declares {declared}"
    missed = outside(facts)
    if not missed:
        return Status.PASS, None
    reasons = "; ".join(capture.graph_break_reasons or ["no graph held it"])
    return Status.GRAPH_BREAK, f"{' and '.join(missed)} ({capture.graph_breaks} graph break(s): {reasons})"


def judge(cell: Cell, mismatch: str | None) -> tuple[Status, str | None]:
    """The verdict of a cell that ran to its end (or to its first number unlike the reference's, ``mismatch``)."""
    if cell.style == CONTROL:
        kernel = Kernel.NONE
    elif cell.style == AS_SHIPPED and not is_library_op(cell.case.shipped):
        kernel = Kernel.KERNELS  # a library op is captured whole
    else:
        kernel = Kernel.OP
    return verdict(Facts(cell.capture, kernel, cell.case.backward_kernel is not None, mismatch))


MAX_BREAK_REASONS = 3  # Dynamo's graph-break reasons a record keeps, most frequent first


def interpreter_launches() -> tuple[type, str, Callable[[Any], Any]]:
    """Where the interpreter launches a kernel: (class, method name, the launched function from ``self``)."""
    from triton.runtime import interpreter

    if "run" in vars(interpreter.InterpretedFunction):
        return interpreter.InterpretedFunction, "run", lambda self: self
    return interpreter.GridExecutor, "__call__", lambda self: self.fn


def launch_hooks() -> tuple[Any, str]:
    """The object holding this Triton's launch-enter hook and the attribute's name."""
    import triton

    knobs = getattr(triton, "knobs", None)
    if knobs is not None and hasattr(knobs.runtime, "launch_enter_hook"):
        return knobs.runtime, "launch_enter_hook"
    from triton.compiler.compiler import CompiledKernel

    return CompiledKernel, "launch_enter_hook"


@contextmanager
def observed_launches() -> Iterator[set[str]]:
    """The set of kernel names launched while the block runs (filled as they launch)."""
    from triton.runtime.jit import JITFunction

    launched: set[str] = set()
    interpreted, method, function = interpreter_launches()
    wrapped = {(JITFunction, "run"): lambda self: self, (interpreted, method): function}
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


def run_program(cell: Cell, run_path: Callable[[Cell], None]) -> None:
    """Run the path on the cell's built style (seeded as every cell is), the kernels it launches observed, and
    Dynamo's graph breaks on the way counted, their most frequent reasons kept."""
    torch.manual_seed(0)
    torch._dynamo.utils.counters.clear()
    with observed_launches() as launched:
        try:
            run_path(cell)
        finally:
            cell.saw(kernels_launched=tuple(sorted(launched)))
            breaks = torch._dynamo.utils.counters["graph_break"]
            if breaks:
                common = breaks.most_common(MAX_BREAK_REASONS)
                reasons = tuple(" ".join(str(reason).split())[:300] for reason, _ in common)
                cell.saw(graph_breaks=sum(breaks.values()), graph_break_reasons=reasons)


def check(cell: Cell, run_path: Callable[[Cell], None]) -> None:
    """A repro's run of the program: raises what the cell recorded (its own exception, or ``VerdictFailure``)."""
    mismatch = None
    try:
        run_program(cell, run_path)
    except Mismatch as error:
        mismatch = str(error).strip() or repr(error)
    status, said = judge(cell, mismatch)
    if status != Status.PASS:
        raise VerdictFailure(f"{VERDICT_WORDS[status]}{said}")


def as_tuple(output: Any) -> tuple[Any, ...]:
    """An op's output as a tuple of outputs: a tuple or list as it is, anything else as the one output."""
    return tuple(output) if isinstance(output, tuple | list) else (output,)


# ---- the case: cases.add (its kernel, launch and PyTorch reference) ----

"""The PyTorch recipe's vector add: two inputs, one output."""

import math

import torch
import triton
import triton.language as tl


MAX_BLOCK = 1024  # every block size below divides it, so n % MAX_BLOCK == 0 means no tail


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr, EVEN: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    if EVEN:
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets) + tl.load(y_ptr + offsets))
    else:
        mask = offsets < n_elements
        x = tl.load(x_ptr + offsets, mask=mask)
        y = tl.load(y_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, x + y, mask=mask)


def launch(kernel, x, y, **meta):
    out = torch.empty_like(x)
    n_elements = out.numel()
    kernel[lambda m: (triton.cdiv(n_elements, m["BLOCK_SIZE"]),)](x, y, out, n_elements, **meta)
    return out


def make_inputs(size, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(size, generator=gen).to(device) for _ in range(2))


CASE = Case(
    id="add",
    kernel=add_kernel,
    launch=launch,
    reference=torch.add,
    make_inputs=make_inputs,
    backward=lambda inputs, out, grad: (grad, grad),
    flops=lambda x, y: math.prod(x),
    bytes_moved=lambda x, y: 3 * x.numel() * x.element_size(),  # read x and y, write out
    arg_names=("x", "y"),
    sizes=(3001, 1000, 5003),
    bandwidth_size=1 << 24,  # 16M floats: 192 MiB moved per call, bound by memory bandwidth, not by the launch
    meta={"BLOCK_SIZE": 256, "EVEN": False},
    configs=[triton.Config({"BLOCK_SIZE": 256}, num_warps=4), triton.Config({"BLOCK_SIZE": 1024}, num_warps=8)],
    key=["n_elements"],
    heuristics={"EVEN": lambda args: args["n_elements"] % MAX_BLOCK == 0},  # no tail, whatever the config
    config_heuristics={"EVEN": lambda args: args["n_elements"] % args["BLOCK_SIZE"] == 0},  # the picked config
)


# ---- the style: autotune_heuristics (@triton.autotune over @triton.heuristics kernel in a launcher) ----

AS_SHIPPED = "as_shipped"  # the style id (and wrapper) of the case's op as its library ships it


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


CONTROL = "control"  # the style id of the control, and its wrapper in a style's axes (its decorator is None)


def _autotune(case: Case, kernel: Any) -> Any:
    """``@triton.autotune(configs=..., key=...)`` as a user writes it, with the case's ``autotune_options`` (e.g.
    ``restore_value``)."""
    return triton.autotune(configs=list(case.configs), key=list(case.key), **case.autotune_options)(kernel)


def _config_keys(case: Case) -> set[str]:
    return {key for config in case.configs for key in config.kwargs}


def _meta_without(case: Case, *dropped: set[str]) -> dict[str, Any]:
    drop = set().union(*dropped)
    return {key: value for key, value in case.meta.items() if key not in drop}


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
    args: tuple[Any, ...] = ()  # passed after the inputs on every call: the library's own choices (``shipped_args``)

    def trainable(self) -> Callable[..., Any]:
        if self.train_error is not None:
            raise self.train_error
        assert self.train_op is not None
        return self.train_op


def _kernels(case: Case, wrap: Callable[[Any], Any]) -> dict[str, Any]:
    """The launch's ``kernels=`` argument: the case's other kernels, each wrapped as the style wraps its kernel."""
    return {"kernels": {name: wrap(kernel) for name, kernel in case.kernels.items()}} if case.kernels else {}


def before_call(case: Case, inputs: Inputs) -> dict[int, Any]:
    """The inputs the op overwrites, copied before the call, for a backward that reads them (``Case.save_mutated``,
    as an ``autograd.Function`` author saves them); none otherwise."""
    if not case.save_mutated:
        return {}
    return {index: inputs[index].detach().clone() for index in case.mutates_index}


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


def case_value(case: Case, values: tuple[Any, ...]) -> Any:
    """Outputs (or their grads) as the case's functions take them: the tensor, or the tuple of several."""
    return values[0] if case.outputs == 1 else tuple(values)


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


def launched_backward(case: Case) -> Backward:
    """The case's backward as the launcher styles run it: its backward kernel when it has one, else its torch ops."""
    if case.launch_backward is None:
        return torch_backward(case)
    launch_backward = case.launch_backward
    extra = {"kernels": dict(case.kernels)} if case.kernels else {}
    return lambda inputs, output, grad: launch_backward(case.backward_kernel, inputs, output, grad, **extra)


def launcher(case: Case, kernel: Any, meta: dict[str, Any], name: str) -> Wrapped:
    """A plain Python function that launches ``kernel``; training goes through a ``torch.autograd.Function``
    whose backward is the case's backward kernel (launched as it is) or its torch ops. No op is registered
    (``name``, less its namespace, names the function)."""

    def op(*inputs: Any) -> Any:
        return case.launch(kernel, *inputs, **_kernels(case, lambda k: k), **meta)

    op.__name__ = op.__qualname__ = name.partition("::")[2]  # a user's launcher has a name of its own
    return Wrapped(op=op, train_op=autograd_function(case, op, launched_backward(case)))


WRAPPED = launcher(CASE, *autotune_heuristics(CASE), 'harness::add_autotune_heuristics')  # built once: a library op registers once per process


# ---- the path: cpu_fallback ----

CALLS = 2  # how often a path calls its model, compiled, exported or loaded artifact on the same inputs


def _infer(cell: Cell, model: Callable[..., Any], inputs: Inputs, what: str = "output", calls: int = CALLS) -> None:
    """Run ``model`` without grad on a copy of ``inputs``, ``CALLS`` times, and compare every call's output(s) with
    the reference's: a pass holds on every call (an artifact right once and wrong the next time is wrong)."""
    expected = cell.expected(inputs)
    cell.keep_call(model, inputs)
    for call in range(1, calls + 1):
        with torch.no_grad():
            out = model(*copy_inputs(inputs))
        cell.synchronize()
        cell.compare(what if call == 1 else f"{what}, call {call}", out, expected)
        cell.measurements.calls = (cell.measurements.calls or 0) + 1


def eager(cell: Cell) -> None:
    """The style called directly, as in a plain PyTorch program."""
    model = cell.model()
    cell.stage = "run"
    with cell.timed("run_seconds"):
        _infer(cell, model, cell.inputs())


def cpu_fallback(cell: Cell) -> None:
    """CPU tensors, eager: works where the style has a CPU kernel."""
    eager(cell)


STYLE, DEVICE = 'autotune_heuristics', 'cpu'
EXAMPLE = (3001, 0)  # (size, seed) the cell failed on; None: the case's first size, seed 0
ATOL, RTOL = 1e-05, 1e-05  # the tolerance for float32
ATTEMPTS = 1
PATH = cpu_fallback


def run_cell():
    """The cell's program: the style built above, the path run on it, the verdict judged (raised unless pass)."""
    cell = Cell(case=CASE, style=STYLE, device=DEVICE, tolerance=Tolerance(atol=ATOL, rtol=RTOL),
                workdir=Path(tempfile.mkdtemp()), example=EXAMPLE, wrapped=WRAPPED)
    check(cell, PATH)
    return cell


if __name__ == "__main__":
    try:
        for attempt in range(ATTEMPTS):  # more than one: the cell's attempts differed; each runs afresh
            torch._dynamo.reset()
            run_cell()
    finally:  # a GPU fault left behind surfaces here, as at the end of a cell
        if torch.cuda.is_initialized():
            torch.cuda.synchronize()
    print("no failure: add-autotune_heuristics-cpu_fallback passes here")
