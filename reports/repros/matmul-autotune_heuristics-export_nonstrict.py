"""Reproducer for matmul-autotune_heuristics-export_nonstrict, written by the compatibility-matrix harness.

Recorded: error at trace: RuntimeError: Cannot access data pointer of Tensor (e.g. FakeTensor, FunctionalTensor). If you're using torch.compile/export/fx, it is likely that we are erroneously tracing into a custom kernel. To fix this, please wrap the custom kernel into an opaque custom op. Please see the following for details: https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0,
harness commit 29caace.

Run: python matmul-autotune_heuristics-export_nonstrict.py -- it raises the failure (exit 1) while the failure is there, and prints
"no failure" once it is fixed. Needs only torch and triton: the kernel's module (cases.matmul) and the
harness code the cell ran (style 'autotune_heuristics', path 'export_nonstrict') are inlined below.
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

# ---- cases.matmul: the case, inlined ----

"""fp16 matrix multiply with tl.dot, fp32 accumulation, masked edges in M, N and K."""

import torch
import triton
import triton.language as tl


MAX_BLOCK_K = 64  # every BLOCK_K below divides it


@triton.jit
def matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    EVEN_K: tl.constexpr,
):
    pid_m = tl.program_id(axis=0)
    pid_n = tl.program_id(axis=1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        ks = k * BLOCK_K + rk
        a_ptrs = a_ptr + rm[:, None] * stride_am + ks[None, :] * stride_ak
        b_ptrs = b_ptr + ks[:, None] * stride_bk + rn[None, :] * stride_bn
        if EVEN_K:
            a = tl.load(a_ptrs, mask=rm[:, None] < M, other=0.0)
            b = tl.load(b_ptrs, mask=rn[None, :] < N, other=0.0)
        else:
            a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0)
            b = tl.load(b_ptrs, mask=(ks[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def launch(kernel, a, b, **meta):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    grid = lambda m: (triton.cdiv(M, m["BLOCK_M"]), triton.cdiv(N, m["BLOCK_N"]))  # noqa: E731
    kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1), **meta)
    return c


def make_inputs(m, device, seed):
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(m, 203, generator=gen).to(device=device, dtype=torch.float16)
    b = torch.randn(203, 131, generator=gen).to(device=device, dtype=torch.float16)
    return a, b


CASE = Case(
    id="matmul",
    kernel=matmul_kernel,
    launch=launch,
    reference=torch.mm,
    make_inputs=make_inputs,
    backward=lambda inputs, out, grad: (grad @ inputs[1].t(), inputs[0].t() @ grad),
    flops=lambda a, b: 2 * a[0] * a[1] * b[1],
    arg_names=("a", "b"),
    sizes=(157, 64, 300),
    meta={"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "EVEN_K": False},
    configs=[
        triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}, num_warps=4, num_stages=2),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64}, num_warps=4, num_stages=3),
    ],
    key=["M", "N", "K"],
    heuristics={"EVEN_K": lambda args: args["K"] % MAX_BLOCK_K == 0},
    dtype=torch.float16,
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

def autotune_heuristics(case: Case) -> Wrapped:
    """``@triton.autotune`` outermost over ``@triton.heuristics`` (the order the recipe calls unsupported)."""
    kernel = _autotune(case, triton.heuristics(dict(case.heuristics))(case.kernel))
    return _python_launcher(case, kernel, _meta_without(case, _config_keys(case), set(case.heuristics)))

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

STYLE, PATH, DEVICE = 'autotune_heuristics', 'export_nonstrict', 'cuda'
SIZE, SEED = 157, 0  # the input the cell failed on


def main() -> None:
    import tempfile

    cell = Cell(
        case=CASE,
        style=STYLE,
        device=DEVICE,
        tolerance=Tolerance(atol=0.001, rtol=0.004),
        workdir=Path(tempfile.mkdtemp()),
    )
    cell.example = (SIZE, SEED)
    torch.manual_seed(0)
    cell.wrapped = autotune_heuristics(CASE)
    export_nonstrict(cell)
    print(f"no failure: {CASE.id}-{STYLE}-{PATH} passes here")


if __name__ == "__main__":
    main()
