"""Reproducer for add_inplace-raw_jit-dynamic, written by the compatibility-matrix harness.

Recorded: error at compile: InductorError: AssertionError: 
The same failure (5 more cell(s)): add_inplace-autotune-dynamic, add_inplace-heuristics_autotune-dynamic, add_inplace-triton_op-dynamic, add_inplace-triton_op_autotune-dynamic, add_inplace-triton_op_autotune_heuristics-dynamic.
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0,
harness commit 37287a5.

Run it with python: it raises the failure (exit 1) while the failure is there, and prints
"no failure" once it is fixed. Needs only torch and triton: the kernel's module (cases.add_inplace) and the
harness code the cell ran (style 'raw_jit', path 'dynamic') are inlined below.
"""

from __future__ import annotations


import functools
import time
import torch
import triton
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# ---- harness.case: the case's container ----

Tensor = torch.Tensor

OPTIONAL_TENSOR = Tensor | None

ARG_TYPES = (float, int, bool, OPTIONAL_TENSOR)

@dataclass(frozen=True)
class Case:
    """A kernel and everything the harness needs to wrap it in every style and check it on every path.

    - ``kernel``: the ``@triton.jit`` function, declared once: every decorator stack (``harness.decorators``)
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
    - ``backward(inputs, output, grad)``: gradients of the op's arguments (``None`` for a scalar, a ``None``
      optional tensor or an integer tensor), in PyTorch ops; an input named in ``mutates`` arrives as
      ``None`` (it was overwritten). With several ``outputs``, ``output`` and ``grad`` are tuples (a grad of
      zeros for an output that got none).
    - ``backward_kernel`` and ``launch_backward(kernel, inputs, output, grad)``: optionally, the backward as a
      ``@triton.jit`` kernel and its launch (same contract as ``backward``), which the styles then run in
      their backward: the launcher's ``autograd.Function`` calls it, ``triton_op`` wraps it in a second
      ``triton_op`` and ``custom_op`` in a second ``custom_op`` (``<op>_backward``), whose CPU kernel is
      ``backward``. The decorator stacks apply to ``kernel`` only: the backward kernel stays plain. (Not for an
      op with an optional tensor argument, whose gradient may be ``None``, nor one that writes into its inputs.)
    - ``flops(*args)``: the op's flop count, given each tensor argument's shape (other arguments as they are),
      as ``FlopCounterMode`` should report.
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
    kernel: Any
    launch: Callable[..., Any]
    reference: Callable[..., Any]
    make_inputs: Callable[[int, str, int], Inputs]
    backward: Callable[[Inputs, Any, Any], tuple[Tensor | None, ...]]
    flops: Callable[..., int]
    arg_names: tuple[str, ...]
    sizes: tuple[int, ...]
    meta: Mapping[str, Any]
    configs: Sequence[Any]
    key: Sequence[str]
    heuristics: Mapping[str, Callable[[dict[str, Any]], Any]]
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

    def __post_init__(self) -> None:
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
        if self.backward_kernel is not None and (self.mutates or OPTIONAL_TENSOR in self.arg_types.values()):
            raise ValueError(f"case {self.id!r}: a backward_kernel needs every tensor argument given, none mutated")

    def build_module(self, op: Callable[..., Any]) -> torch.nn.Module:
        """The module the paths run, around ``op``; parameters are seeded so every style gets the same."""
        torch.manual_seed(0)
        if self.module is not None:
            return self.module(op)
        return OpModule(op, self.mutates_index)

    @property
    def mutates_index(self) -> tuple[int, ...]:
        return tuple(self.arg_names.index(name) for name in self.mutates)

    def arg_type(self, name: str) -> Any:
        """The declared type of argument ``name`` (``Tensor`` unless ``arg_types`` says otherwise)."""
        return self.arg_types.get(name, Tensor)

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

# ---- cases.add_inplace: the case, inlined ----

"""In-place add: the kernel writes x + y into x (declared through ``mutates``)."""

import math

import torch
import triton
import triton.language as tl


MAX_BLOCK = 1024


@triton.jit
def add_inplace_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr, EVEN: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    if EVEN:
        tl.store(x_ptr + offsets, tl.load(x_ptr + offsets) + tl.load(y_ptr + offsets))
    else:
        mask = offsets < n_elements
        x = tl.load(x_ptr + offsets, mask=mask)
        tl.store(x_ptr + offsets, x + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def launch(kernel, x, y, **meta):
    n_elements = x.numel()
    kernel[lambda m: (triton.cdiv(n_elements, m["BLOCK_SIZE"]),)](x, y, n_elements, **meta)


def reference(x, y):
    x.add_(y)


def make_inputs(size, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(size, generator=gen).to(device) for _ in range(2))


CASE = Case(
    id="add_inplace",
    kernel=add_inplace_kernel,
    launch=launch,
    reference=reference,
    make_inputs=make_inputs,
    backward=lambda inputs, out, grad: (grad, grad),
    flops=lambda x, y: math.prod(x),
    arg_names=("x", "y"),
    sizes=(3001, 1000, 5003),
    meta={"BLOCK_SIZE": 256, "EVEN": False},
    configs=[triton.Config({"BLOCK_SIZE": 256}, num_warps=4), triton.Config({"BLOCK_SIZE": 1024}, num_warps=8)],
    key=["n_elements"],
    heuristics={"EVEN": lambda args: args["n_elements"] % MAX_BLOCK == 0},  # no tail, whatever the config
    config_heuristics={"EVEN": lambda args: args["n_elements"] % args["BLOCK_SIZE"] == 0},  # the picked config
    mutates=("x",),
    autotune_options={"restore_value": ["x_ptr"]},  # autotuning runs the kernel repeatedly
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
    if not isinstance(actual, torch.Tensor):
        raise Mismatch(f"{what}: expected a tensor, got {type(actual).__name__}")
    try:
        torch.testing.assert_close(
            actual.detach().cpu(), expected.detach().cpu(), atol=tolerance.atol, rtol=tolerance.rtol
        )
    except AssertionError as error:
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        raise Mismatch(f"{what}: " + "; ".join(lines)) from None

Backward = Callable[[Inputs, Any, Any], tuple[torch.Tensor | None, ...]]

def launched_backward(case: Case) -> Backward:
    """The case's backward as the launcher styles run it: its backward kernel when it has one, else its torch ops."""
    if case.launch_backward is None:
        return case.backward
    launch_backward = case.launch_backward
    return lambda inputs, output, grad: launch_backward(case.backward_kernel, inputs, output, grad)

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

def autograd_function(case: Case, fn: Callable[..., Any], backward: Backward) -> Callable[..., Any]:
    """A ``torch.autograd.Function`` around ``fn`` whose backward is ``backward`` (the launcher's training)."""
    mutated = case.mutates_index

    class KernelFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, *inputs: Any) -> Any:
            out = fn(*inputs)
            save(ctx, inputs, out, mutated)
            if mutated:
                ctx.mark_dirty(*(inputs[i] for i in mutated))
                return inputs[mutated[0]]
            return out

        @staticmethod
        def backward(ctx: Any, *grads: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
            return tuple(backward(*saved(case, ctx, grads)))

    KernelFunction.__name__ = f"{case.id}_kernel_function"
    return KernelFunction.apply

def jit(case: Case) -> tuple[Any, dict[str, Any]]:
    """Plain ``@triton.jit``: every constexpr passed by the launch, from ``meta``."""
    return case.kernel, dict(case.meta)

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

def launcher(case: Case, kernel: Any, meta: dict[str, Any], name: str) -> Wrapped:
    """A plain Python function that launches ``kernel``; training goes through a ``torch.autograd.Function``
    whose backward is the case's backward kernel (launched as it is) or its torch ops. No op is registered
    (``name`` is unused)."""

    def op(*inputs: Any) -> Any:
        return case.launch(kernel, *inputs, **meta)

    return Wrapped(op=op, train_op=autograd_function(case, op, launched_backward(case)))

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
                value.detach().requires_grad_(value.is_floating_point()) if isinstance(value, torch.Tensor) else value
                for value in inputs
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
        from torch._inductor.compile_fx import compile_fx

        def inductor(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
            self.stage = "compile"
            self.diagnostics["graphs"] = self.diagnostics.get("graphs", 0) + 1
            self.record_graph(gm)
            compiled = compile_fx(gm, example_inputs, config_patches=config_patches or None)

            @functools.wraps(compiled)
            def run(*args: Any, **kwargs: Any) -> Any:
                self.stage = "run"
                return compiled(*args, **kwargs)

            self.stage = "trace"
            return run

        return inductor

    def record_graph(self, gm: torch.fx.GraphModule) -> None:
        """Keep the graph's user-kernel wrappers and harness ops (or nothing: the kernel was not captured)."""
        captured = set(self.diagnostics.get("captured", []))
        for node in gm.graph.nodes:
            if node.op != "call_function":
                continue
            name = getattr(node.target, "__name__", str(node.target))
            qualified = str(node.target)
            if "triton_kernel_wrapper" in name or qualified.startswith("harness.") or "auto_functionalized" in name:
                captured.add(qualified if qualified.startswith("harness.") else name)
        self.diagnostics["captured"] = sorted(captured)

def _infer(cell: Cell, model: Callable[..., Any], inputs: Inputs, what: str = "output") -> None:
    """Run ``model`` without grad on a copy of ``inputs`` and compare its output(s) with the reference's."""
    with torch.no_grad():
        out = model(*copy_inputs(inputs))
    cell.synchronize()
    cell.compare(what, out, cell.expected(inputs))

def _compiled(cell: Cell, train: bool = False, **options: Any) -> Callable[..., Any]:
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

STYLE, PATH, DEVICE = 'raw_jit', 'dynamic', 'cuda'
SIZE, SEED = 3001, 0  # the input the cell failed on


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
    cell.wrapped = launcher(CASE, *jit(CASE), 'harness::add_inplace_raw_jit')
    dynamic(cell)
    print(f"no failure: {CASE.id}-{STYLE}-{PATH} passes here")


if __name__ == "__main__":
    main()
