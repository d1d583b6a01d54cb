"""Reproducer for add-triton_op-cpu_compile, written by the compatibility-matrix harness.

Recorded: error at compile: InductorError: RuntimeError: 0 compatible backends for target (cpu) ([]). There should only be one.
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0,
harness commit 29caace.

Run: python add-triton_op-cpu_compile.py -- it raises the failure (exit 1) while the failure is there, and prints
"no failure" once it is fixed. Needs only torch and triton: the kernel's module (cases.add) and the
harness code the cell ran (style 'triton_op', path 'cpu_compile') are inlined below.
"""

from __future__ import annotations

import functools
import inspect
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

@dataclass(frozen=True)
class Case:
    """A kernel and everything the harness needs to wrap it in every style and check it on every path.

    - ``kernel``: the ``@triton.jit`` function. Constexprs that autotune picks come from ``configs``;
      the ones ``heuristics`` computes are passed explicitly (``meta``) by the styles without heuristics.
    - ``launch(kernel, *inputs, **meta)``: allocates the output, launches ``kernel[grid](...)`` and
      returns it (or ``None`` for a kernel that writes into the inputs named in ``mutates``).
    - ``reference``: the same op written with PyTorch ops (same signature and semantics as ``launch``).
    - ``make_inputs(size, device, seed)``: the op's input tensors; sizes are not block multiples.
    - ``backward(inputs, output, grad)``: gradients of the op's inputs, in PyTorch ops; an input named
      in ``mutates`` arrives as ``None`` (it was overwritten).
    - ``flops(*shapes)``: the op's flop count from its inputs' shapes, as ``FlopCounterMode`` should report.
    - ``cpu_kernel``: the CPU implementation registered for the library styles (default: ``reference``).
    - ``autotune_options``: extra ``triton.autotune`` arguments the kernel needs (e.g. ``restore_value``).
    - ``module(op)``: the ``nn.Module`` the paths run, built around ``op``; the default calls ``op``.
    - ``size_bounds``: (low, high) of the sizes hypothesis may draw for paths with ``examples`` > 1
      (default: 1 to twice the largest of ``sizes``).
    """

    id: str
    kernel: Any
    launch: Callable[..., Tensor | None]
    reference: Callable[..., Tensor | None]
    make_inputs: Callable[[int, str, int], Inputs]
    backward: Callable[[Inputs, Tensor | None, Tensor], tuple[Tensor | None, ...]]
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
    cpu_kernel: Callable[..., Tensor | None] | None = None
    module: Callable[[Callable[..., Any]], torch.nn.Module] | None = None
    size_bounds: tuple[int, int] | None = None
    description: str = field(default="", compare=False)

    def build_module(self, op: Callable[..., Any]) -> torch.nn.Module:
        """The module the paths run, around ``op``; parameters are seeded so every style gets the same."""
        torch.manual_seed(0)
        if self.module is not None:
            return self.module(op)
        return OpModule(op, self.mutates_index)

    @property
    def mutates_index(self) -> tuple[int, ...]:
        return tuple(self.arg_names.index(name) for name in self.mutates)

class OpModule(torch.nn.Module):
    """Calls the op; an in-place op runs on a copy of its mutated input, which it returns."""

    def __init__(self, op: Callable[..., Any], mutated: tuple[int, ...] = ()) -> None:
        super().__init__()
        self.op = op
        self.mutated = mutated

    def forward(self, *inputs: Tensor) -> Tensor:
        if not self.mutated:
            return self.op(*inputs)
        args = list(inputs)
        for index in self.mutated:
            args[index] = args[index].clone()
        self.op(*args)
        return args[self.mutated[0]]

# ---- cases.add: the case, inlined ----

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
    arg_names=("x", "y"),
    sizes=(3001, 1000, 5003),
    meta={"BLOCK_SIZE": 256, "EVEN": False},
    configs=[triton.Config({"BLOCK_SIZE": 256}, num_warps=4), triton.Config({"BLOCK_SIZE": 1024}, num_warps=8)],
    key=["n_elements"],
    heuristics={"EVEN": lambda args: args["n_elements"] % MAX_BLOCK == 0},
)

# ---- the harness code the cell ran ----

Tensor = torch.Tensor

Inputs = tuple[Tensor, ...]

class Mismatch(AssertionError):
    """The cell ran, but a number it produced differs from the reference: status ``wrong``."""

@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float

def assert_match(what: str, actual: object, expected: torch.Tensor, tolerance: Tolerance) -> None:
    """Raise ``Mismatch`` naming ``what`` unless ``actual`` equals ``expected`` within tolerance."""
    if not isinstance(actual, torch.Tensor):
        raise Mismatch(f"{what}: expected a tensor, got {type(actual).__name__}")
    try:
        torch.testing.assert_close(
            actual.detach().cpu(), expected.detach().cpu(), atol=tolerance.atol, rtol=tolerance.rtol
        )
    except AssertionError as error:
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        raise Mismatch(f"{what}: " + "; ".join(lines)) from None

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

def triton_op(case: Case) -> Wrapped:
    """``torch.library.triton_op`` + ``wrap_triton``, with CPU fallback, autograd and flop formula."""
    name = f"{OP_NAMESPACE}::{case.id}_triton_op"
    meta = dict(case.meta)

    def launch(*inputs: torch.Tensor) -> torch.Tensor | None:
        return case.launch(torch.library.wrap_triton(case.kernel), *inputs, **meta)

    op = torch.library.triton_op(name, _with_signature(case, launch), mutates_args=case.mutates)
    return _register_library_op(case, op, name)

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

    @property
    def id(self) -> str:
        return f"{self.case.id}-{self.style}"

    def inputs(self, size: int | None = None, seed: int | None = None, requires_grad: bool = False) -> Inputs:
        example_size, example_seed = self.example or (self.case.sizes[0], 0)
        tensors = self.case.make_inputs(
            example_size if size is None else size, self.device, example_seed if seed is None else seed
        )
        if requires_grad:
            return tuple(t.detach().requires_grad_(t.is_floating_point()) for t in tensors)
        return tensors

    def model(self, train: bool = False) -> torch.nn.Module:
        assert self.wrapped is not None
        op = self.wrapped.trainable() if train else self.wrapped.op
        return self.case.build_module(op).to(self.device)

    def reference_model(self) -> torch.nn.Module:
        return self.case.build_module(self.case.reference).to(self.device)

    def expected(self, inputs: Inputs) -> torch.Tensor:
        with torch.no_grad():
            return self.reference_model()(*(t.detach().clone() for t in inputs))

    def synchronize(self) -> None:
        """Wait for the GPU, so that a fault of this cell's kernels surfaces here, at its stage."""
        if self.device == "cuda":
            torch.cuda.synchronize()

    def compare(self, what: str, actual: object, expected: torch.Tensor) -> None:
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

def _infer(cell: Cell, model: Callable[..., Any], inputs: tuple[torch.Tensor, ...], what: str = "output") -> None:
    """Run ``model`` without grad (first call timed as ``compile_seconds`` when it compiles) and compare."""
    with torch.no_grad():
        out = model(*(t.clone() for t in inputs))
    cell.synchronize()
    cell.compare(what, out, cell.expected(inputs))

def _compiled(cell: Cell, train: bool = False, **options: Any) -> Callable[..., Any]:
    patches = torch._inductor.list_mode_options(options.pop("mode", "default"), options.get("dynamic"))
    return torch.compile(cell.model(train), backend=cell.backend(**patches), **options)

def _first_call(cell: Cell, model: Callable[..., Any], inputs: tuple[torch.Tensor, ...]) -> None:
    cell.stage = "trace"  # the backend moves it on to compile, then run
    with cell.timed("compile_seconds"):
        _infer(cell, model, inputs)

def compile(cell: Cell) -> None:
    """Default ``torch.compile`` (graph breaks allowed)."""
    _first_call(cell, _compiled(cell), cell.inputs())

def cpu_compile(cell: Cell) -> None:
    """CPU tensors under ``torch.compile``."""
    compile(cell)

STYLE, PATH, DEVICE = 'triton_op', 'cpu_compile', 'cpu'
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
    cell.wrapped = triton_op(CASE)
    cpu_compile(cell)
    print(f"no failure: {CASE.id}-{STYLE}-{PATH} passes here")


if __name__ == "__main__":
    main()
