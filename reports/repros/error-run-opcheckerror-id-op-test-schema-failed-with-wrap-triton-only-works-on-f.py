"""rmsnorm-triton_op_heuristics_autotune-opcheck: a reproducer written by triton-torch-matrix.

The harness recorded: error at run: OpCheckError: opcheck(op, ...): test_schema failed with wrap_triton only works on functions annotated with triton.jit or triton.autotune (scroll up for stack trace)
Measured on NVIDIA H100 80GB HBM3, torch 2.11.0+cu130, triton 3.6.0.
The same failure in 8 more cell(s): add-triton_op_heuristics_autotune-opcheck, sin-triton_op_heuristics_autotune-opcheck, silu-triton_op_heuristics_autotune-opcheck, softmax-triton_op_heuristics_autotune-opcheck, matmul-triton_op_heuristics_autotune-opcheck, add_inplace-triton_op_heuristics_autotune-opcheck, layernorm-triton_op_heuristics_autotune-opcheck, sin_triton_backward-triton_op_heuristics_autotune-opcheck.

Run it with python: it raises while the failure is there (exit 1) and prints "no failure" once it is fixed.
It needs torch, triton and the case's own imports. It is the cell's program: the harness's functions the cell
ran are copied in as they are (first), then the case, the style, the path, and the main the cell ran them by.
Program digest (sha256 of the harness code copied in, as the cell's record holds it): 1044b3bfcd15663c8e1318d0b16fab51aa217c2e7639883a2543c7d8f5ef0617
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
import os
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
from torch.utils.flop_counter import register_flop_formula


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


INTERPRET_ENV = "TRITON_INTERPRET"  # "1": Triton runs kernels in its CPU interpreter (``run --interpret`` sets it)


def triton_interpreted() -> bool:
    """Whether Triton runs kernels in its interpreter here (read when a kernel is decorated: set it first); a
    cell process inherits it, and a run's environment records it (``triton_interpret``)."""
    return os.environ.get(INTERPRET_ENV) == "1"


class CellSkip(Exception):
    """The cell cannot run on this machine (status ``skip``); the message is the reason."""


# ---- the case: cases.rmsnorm (its kernel, launch and PyTorch reference) ----

"""RMSNorm as Liger-Kernel writes it: a float ``eps`` argument, two outputs (the normalized rows, and ``rstd``, the
reciprocal RMS of each row, which the backward reuses), and a backward that is a Triton kernel too. The forward
runs one program per row; the backward one program per block of rows, each writing its partial ``dweight`` row,
summed after it. Rows x 1000 columns (not a power of two: the row's block is masked); the size is the rows.

Both outputs are differentiable: the backward kernel takes the grad of ``rstd`` as well as the grad of ``y``."""

import math

import torch
import triton
import triton.language as tl


N_COLS = 1000
MAX_PROGRAMS = 32  # backward programs: Liger uses the SM count; each one sums the dweight of its rows


@triton.jit
def rmsnorm_kernel(
    x_ptr, x_row_stride, w_ptr, y_ptr, y_row_stride, rstd_ptr, n_cols, eps, BLOCK_SIZE: tl.constexpr, EVEN: tl.constexpr
):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    if EVEN:
        x = tl.load(x_ptr + row * x_row_stride + cols).to(tl.float32)
        w = tl.load(w_ptr + cols).to(tl.float32)
    else:
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(rstd_ptr + row, rstd)
    y = (x * rstd * w).to(y_ptr.dtype.element_ty)
    if EVEN:
        tl.store(y_ptr + row * y_row_stride + cols, y)
    else:
        tl.store(y_ptr + row * y_row_stride + cols, y, mask=cols < n_cols)


@triton.jit
def rmsnorm_backward_kernel(
    grad_y_ptr,
    grad_y_row_stride,
    x_ptr,
    x_row_stride,
    w_ptr,
    rstd_ptr,
    grad_rstd_ptr,
    grad_x_ptr,
    grad_x_row_stride,
    grad_w_partial_ptr,
    n_rows,
    n_cols,
    rows_per_program,
    BLOCK_SIZE: tl.constexpr,
):
    program = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    grad_w = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    first = program * rows_per_program
    for row in range(first, tl.minimum(first + rows_per_program, n_rows)):
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
        grad_y = tl.load(grad_y_ptr + row * grad_y_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
        rstd = tl.load(rstd_ptr + row)
        grad_rstd = tl.load(grad_rstd_ptr + row)
        normed = x * rstd
        grad_normed = grad_y * w
        grad_x = rstd * (grad_normed - normed * (tl.sum(grad_normed * normed, axis=0) / n_cols))
        grad_x -= grad_rstd * rstd * rstd * rstd * x / n_cols  # through rstd: d rstd / dx = -rstd^3 x / n
        tl.store(grad_x_ptr + row * grad_x_row_stride + cols, grad_x.to(grad_x_ptr.dtype.element_ty), mask=mask)
        grad_w += grad_y * normed
    tl.store(grad_w_partial_ptr + program * n_cols + cols, grad_w, mask=mask)


def launch(kernel, x, weight, eps, **meta):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    rstd = torch.empty(n_rows, device=x.device, dtype=torch.float32)
    block = triton.next_power_of_2(n_cols)
    kernel[(n_rows,)](x, x.stride(0), weight, y, y.stride(0), rstd, n_cols, eps, BLOCK_SIZE=block, **meta)
    return y, rstd


def launch_backward(kernel, inputs, outputs, grads):
    x, weight, _ = inputs
    _, rstd = outputs
    grad_y, grad_rstd = (grad.contiguous() for grad in grads)
    n_rows, n_cols = x.shape
    programs = min(n_rows, MAX_PROGRAMS)
    grad_x = torch.empty_like(x)
    grad_w_partial = torch.empty((programs, n_cols), device=x.device, dtype=torch.float32)
    kernel[(programs,)](
        grad_y,
        grad_y.stride(0),
        x,
        x.stride(0),
        weight,
        rstd,
        grad_rstd,
        grad_x,
        grad_x.stride(0),
        grad_w_partial,
        n_rows,
        n_cols,
        triton.cdiv(n_rows, programs),
        BLOCK_SIZE=triton.next_power_of_2(n_cols),
    )
    return grad_x, grad_w_partial.sum(dim=0).to(weight.dtype), None


def reference(x, weight, eps):
    rstd = torch.rsqrt(x.pow(2).mean(dim=-1) + eps)
    return x * rstd[:, None] * weight, rstd


def backward(inputs, outputs, grads):
    x, weight, _ = inputs
    _, rstd = outputs
    grad_y, grad_rstd = grads
    rstd = rstd[:, None]
    normed = x * rstd
    grad_normed = grad_y * weight
    grad_x = rstd * (grad_normed - normed * (grad_normed * normed).mean(dim=-1, keepdim=True))
    grad_x = grad_x - grad_rstd[:, None] * rstd**3 * x / x.shape[-1]
    return grad_x, (grad_y * normed).sum(dim=0), None


def make_inputs(rows, device, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, N_COLS, generator=gen)
    weight = 1 + 0.1 * torch.randn(N_COLS, generator=gen)
    return x.to(device), weight.to(device), 1e-6


CASE = Case(
    id="rmsnorm",
    kernel=rmsnorm_kernel,
    launch=launch,
    reference=reference,
    make_inputs=make_inputs,
    backward=backward,
    backward_kernel=rmsnorm_backward_kernel,
    launch_backward=launch_backward,
    flops=lambda x, weight, eps: 4 * math.prod(x),
    # read x and weight, write y and each row's rstd (float32)
    bytes_moved=lambda x, weight, eps: (2 * x.numel() + weight.numel()) * x.element_size() + 4 * x.shape[0],
    arg_names=("x", "weight", "eps"),
    arg_types={"eps": float},
    outputs=2,
    sizes=(67, 13, 129),
    bandwidth_size=16384,  # rows of 1000 floats: 125 MiB moved per call
    meta={"EVEN": False},
    configs=[triton.Config({}, num_warps=4), triton.Config({}, num_warps=8)],
    key=["n_cols"],
    # BLOCK_SIZE is a launch argument and the configs set num_warps only: no heuristic reads a config value
    heuristics={"EVEN": lambda args: args["n_cols"] == args["BLOCK_SIZE"]},
    dynamic_dims=((0,), (), ()),  # the size is the rows of x; weight is (1000,), eps a float
)


# ---- the style: triton_op_heuristics_autotune (@triton.heuristics over @triton.autotune kernel in a triton_op) ----

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


def heuristics_autotune(case: Case) -> tuple[Any, dict[str, Any]]:
    """``@triton.heuristics`` outermost over ``@triton.autotune`` (the order the recipe calls supported): the
    heuristics run before a config is picked, so they read the call's arguments only."""
    kernel = triton.heuristics(dict(case.heuristics))(_autotune(case, case.kernel))
    return kernel, _meta_without(case, _config_keys(case), set(case.heuristics))


def _kernels(case: Case, wrap: Callable[[Any], Any]) -> dict[str, Any]:
    """The launch's ``kernels=`` argument: the case's other kernels, each wrapped as the style wraps its kernel."""
    return {"kernels": {name: wrap(kernel) for name, kernel in case.kernels.items()}} if case.kernels else {}


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


def autograd_formula(case: Case, backward: Backward) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """``(backward, setup_context)`` for ``register_autograd`` of a library op."""
    mutated = case.mutates_index

    def setup_context(ctx: Any, inputs: Inputs, output: Any) -> None:
        save(ctx, inputs, output, mutated)

    def formula(ctx: Any, *grads: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        return tuple(backward(*saved(case, ctx, grads)))

    return formula, setup_context


def argument_parameters(case: Case) -> list[inspect.Parameter]:
    """The op's arguments as typed parameters (``Case.arg_types``), from which torch.library infers its schema."""
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    return [inspect.Parameter(name, kind, annotation=case.arg_type(name)) for name in case.arg_names]


def tensors_annotation(count: int) -> Any:
    """The return annotation of ``count`` tensors: ``Tensor``, or ``tuple[Tensor, ...]`` of exactly ``count``."""
    return torch.Tensor if count == 1 else tuple[(torch.Tensor,) * count]


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


def _split(case: Case, values: tuple[Any, ...]) -> tuple[Inputs, Any, Any]:
    """The backward op's flat arguments as (inputs, output, grad)."""
    count = len(case.arg_names)
    outputs, grads = values[count : count + case.outputs], values[count + case.outputs :]
    return values[:count], case_value(case, outputs), case_value(case, grads)


def _tensor_grads(case: Case, grads: tuple[torch.Tensor | None, ...]) -> Any:
    """The gradients of the tensor arguments, as the backward op returns them (one tensor, or a tuple)."""
    tensors = tuple(grads[index] for index in case.tensor_args)
    return tensors[0] if len(tensors) == 1 else tensors


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


def _with_signature(case: Case, fn: Callable[..., Any]) -> Callable[..., Any]:
    """Give a ``*inputs`` function the typed signature torch.library infers the op's schema from: each argument's
    type (``Case.arg_types``: ``float eps``, ``Tensor? bias``), and ``Tensor``, or a tuple of ``Case.outputs``
    tensors, returned (nothing for an op that writes into its inputs)."""
    returns = None if case.mutates else tensors_annotation(case.outputs)
    fn.__signature__ = inspect.Signature(argument_parameters(case), return_annotation=returns)
    return fn


def triton_op(case: Case, kernel: Any, meta: dict[str, Any], name: str) -> Wrapped:
    """``torch.library.triton_op`` launching ``wrap_triton(kernel)`` (the recipe's way, for a ``@triton.jit``
    or ``@triton.autotune`` kernel alike), with CPU fallback, autograd and flop formula; a backward kernel
    becomes a second ``triton_op`` (``<name>_backward``) launching ``wrap_triton`` of it."""

    def launch(*inputs: Any) -> Any:
        wrap = torch.library.wrap_triton
        return case.launch(wrap(kernel), *inputs, **_kernels(case, wrap), **meta)

    op = torch.library.triton_op(name, _with_signature(case, launch), mutates_args=case.mutates)
    return _register_library_op(case, op, name, torch.library.triton_op, torch.library.wrap_triton)


WRAPPED = triton_op(CASE, *heuristics_autotune(CASE), 'harness::rmsnorm_triton_op_heuristics_autotune')  # built once: a library op registers once per process


# ---- the path: opcheck ----

def opcheck(cell: Cell) -> None:
    """``torch.library.opcheck`` (schema, autograd registration, fake tensor, AOT dispatch: the check PyTorch's docs
    tell op authors to run) on the op, with the inputs that take a gradient requiring one. Library ops only: a
    launcher, the control or a shipped op that is no ``torch.library`` op is a skip."""
    assert cell.wrapped is not None
    shipped = cell.style == AS_SHIPPED
    op, extra = (cell.case.shipped, cell.case.shipped_args) if shipped else (cell.wrapped.op, ())
    if not is_library_op(op):
        raise CellSkip(f"not a torch.library op ({cell.wrapped.wrapped_as or type(op).__name__}): opcheck checks ops")
    inputs = cell.inputs(requires_grad=cell.wrapped.train_error is None)
    cell.stage = "run"
    with cell.timed("run_seconds"):
        torch.library.opcheck(op, (*inputs, *extra))


STYLE, DEVICE = 'triton_op_heuristics_autotune', 'cuda'
EXAMPLE = None  # (size, seed) the cell failed on; None: the case's first size, seed 0
ATOL, RTOL = 1e-05, 1e-05  # the tolerance for float32
ATTEMPTS = 1
PATH = opcheck


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
    print("no failure: rmsnorm-triton_op_heuristics_autotune-opcheck passes here")
