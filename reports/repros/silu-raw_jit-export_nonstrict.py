"""Reproducer for silu-raw_jit-export_nonstrict, written by the compatibility-matrix harness.

Recorded: error at trace: RuntimeError: Cannot access data pointer of Tensor (e.g. FakeTensor, FunctionalTensor). If you're using torch.compile/export/fx, it is likely that we are erroneously tracing into a custom kernel. To fix this, please wrap the custom kernel into an opaque custom op. Please see the following for details: https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0,
harness commit 29caace.

Run: python silu-raw_jit-export_nonstrict.py -- it raises the failure (exit 1) while the failure is there, and prints
"no failure" once it is fixed. Needs only torch and triton: the kernel's module (cases.silu) and the
harness code the cell ran (style 'raw_jit', path 'export_nonstrict') are inlined below.
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

# ---- cases.silu: the case, inlined ----

"""The blog's bf16 SiLU kernel, inside the blog's small Linear -> SiLU -> Linear module."""

import math

import torch
import triton
import triton.language as tl


IN_FEATURES, HIDDEN = 128, 64
MAX_BLOCK = 1024


@triton.jit
def silu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr, EVEN: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    if EVEN:
        x = tl.load(x_ptr + offsets)
    else:
        x = tl.load(x_ptr + offsets, mask=mask)
    x_f32 = x.to(tl.float32)  # the math in float32, then back to the input's dtype, as in the blog
    out = (x_f32 * (1.0 / (1.0 + tl.exp(-x_f32)))).to(x.dtype)
    if EVEN:
        tl.store(out_ptr + offsets, out)
    else:
        tl.store(out_ptr + offsets, out, mask=mask)


def launch(kernel, x, **meta):
    out = torch.empty_like(x)
    n_elements = out.numel()
    kernel[lambda m: (triton.cdiv(n_elements, m["BLOCK_SIZE"]),)](x, out, n_elements, **meta)
    return out


def backward(inputs, out, grad):
    x = inputs[0].float()
    sig = torch.sigmoid(x)
    return ((grad.float() * sig * (1 + x * (1 - sig))).to(grad.dtype),)


class SiluMLP(torch.nn.Module):
    """Linear -> SiLU (the op under test) -> Linear, in bf16."""

    def __init__(self, op):
        super().__init__()
        self.linear1 = torch.nn.Linear(IN_FEATURES, HIDDEN, dtype=torch.bfloat16)
        self.linear2 = torch.nn.Linear(HIDDEN, IN_FEATURES, dtype=torch.bfloat16)
        self.op = op

    def forward(self, x):
        return self.linear2(self.op(self.linear1(x).contiguous()))


def make_inputs(batch, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(batch, IN_FEATURES, generator=gen).to(device=device, dtype=torch.bfloat16),)


def module(op):
    return SiluMLP(op)


CASE = Case(
    id="silu",
    kernel=silu_kernel,
    launch=launch,
    reference=torch.nn.functional.silu,
    make_inputs=make_inputs,
    backward=backward,
    flops=lambda x: 4 * math.prod(x),
    arg_names=("x",),
    sizes=(37, 8, 61),
    meta={"BLOCK_SIZE": 256, "EVEN": False},
    configs=[triton.Config({"BLOCK_SIZE": 256}, num_warps=4), triton.Config({"BLOCK_SIZE": 1024}, num_warps=4)],
    key=["n_elements"],
    heuristics={"EVEN": lambda args: args["n_elements"] % MAX_BLOCK == 0},
    dtype=torch.bfloat16,
    module=module,
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

def raw_jit(case: Case) -> Wrapped:
    """Plain ``@triton.jit``, launched from a Python function."""
    return _python_launcher(case, case.kernel, dict(case.meta))

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

def _export(cell: Cell, strict: bool, inputs: tuple[torch.Tensor, ...]) -> torch.export.ExportedProgram:
    model = cell.model().eval()
    cell.stage = "trace"
    with cell.timed("export_seconds"):
        program = torch.export.export(model, tuple(t.clone() for t in inputs), strict=strict)
    cell.record_graph(program.graph_module)
    return program

def _run_export(cell: Cell, strict: bool) -> None:
    inputs = cell.inputs()
    program = _export(cell, strict, inputs)
    cell.stage = "run"
    _infer(cell, program.module(), inputs)

def export_nonstrict(cell: Cell) -> None:
    """``torch.export.export(strict=False)`` (Python tracing), then ``ep.module()``."""
    _run_export(cell, strict=False)

STYLE, PATH, DEVICE = 'raw_jit', 'export_nonstrict', 'cuda'
SIZE, SEED = 37, 0  # the input the cell failed on


def main() -> None:
    import tempfile

    cell = Cell(
        case=CASE,
        style=STYLE,
        device=DEVICE,
        tolerance=Tolerance(atol=0.01, rtol=0.016),
        workdir=Path(tempfile.mkdtemp()),
    )
    cell.example = (SIZE, SEED)
    torch.manual_seed(0)
    cell.wrapped = raw_jit(CASE)
    export_nonstrict(cell)
    print(f"no failure: {CASE.id}-{STYLE}-{PATH} passes here")


if __name__ == "__main__":
    main()
