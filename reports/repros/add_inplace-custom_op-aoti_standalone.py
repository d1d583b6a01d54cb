"""Reproducer for add_inplace-custom_op-aoti_standalone, written by the compatibility-matrix harness.

Recorded: error at run: RuntimeError: standalone process exited 1: RuntimeError: Could not find schema for harness::add_inplace_custom_op.
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0,
harness commit 29caace.

Run: python add_inplace-custom_op-aoti_standalone.py -- it raises the failure (exit 1) while the failure is there, and prints
"no failure" once it is fixed. Needs only torch and triton: the kernel's module (cases.add_inplace) and the
harness code the cell ran (style 'custom_op', path 'aoti_standalone') are inlined below.
"""

from __future__ import annotations

import functools
import inspect
import os
import signal
import subprocess
import sys
import tempfile
import time
import torch
import triton
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing.connection import Client
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
    heuristics={"EVEN": lambda args: args["n_elements"] % MAX_BLOCK == 0},
    mutates=("x",),
    autotune_options={"restore_value": ["x_ptr"]},  # autotuning runs the kernel repeatedly
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

class CellCrash(Exception):
    """A process the cell started died by a signal (status ``crash``)."""

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

STANDALONE_ENV = "HARNESS_STANDALONE"

STANDALONE_TIMEOUT = 600.0

STANDALONE_SERVER = r"""
import ctypes, faulthandler, os, signal, sys, traceback
from multiprocessing.connection import Listener

ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: dies with whoever started it
os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"  # asking torch.cuda.is_available() here must not poison fork
import torch
import torch._inductor.package
from torch._inductor.cpu_vec_isa import pick_vec_isa


def load_and_run(package, inputs_file, output_file, device):
    inputs = [t.to(device) for t in torch.load(inputs_file)]
    runner = torch._inductor.aoti_load_package(package)
    with torch.no_grad():
        out = runner(*inputs)
    torch.save(out.cpu() if isinstance(out, torch.Tensor) else out, output_file)


def supervise(conn):
    request = conn.recv()
    pid = os.fork()
    if pid == 0:
        os.environ.update(request.pop("environment"))
        log = os.open(request.pop("log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.chdir(request.pop("cwd"))
        faulthandler.enable()
        code = 0
        try:
            load_and_run(**request)
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    conn.send(pid)
    conn.send(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))


pick_vec_isa()
del os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"]  # the children ask for CUDA as any process does
listener = Listener(sys.argv[1], family="AF_UNIX")
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # supervisors are reaped by the kernel
print("ready", flush=True)
while True:
    conn = listener.accept()
    if os.fork() == 0:
        listener.close()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        supervise(conn)
        os._exit(0)
    conn.close()
"""

_own_server: list[tuple[subprocess.Popen[str], str]] = []

def standalone_address() -> str:
    """The run's standalone server, or one this process starts (once) when there is none."""
    if os.environ.get(STANDALONE_ENV):
        return os.environ[STANDALONE_ENV]
    if _own_server and _own_server[0][0].poll() is None:
        return _own_server[0][1]
    address = str(Path(tempfile.mkdtemp(prefix="harness-standalone-")) / "socket")
    server = subprocess.Popen([sys.executable, "-c", STANDALONE_SERVER, address], stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    if server.stdout.readline() != "ready\n":
        server.kill()
        raise RuntimeError(f"standalone server exited {server.wait()} while starting (its stderr is in the cell log)")
    _own_server[:] = [(server, address)]
    return address

def run_standalone(request: dict[str, Any]) -> int:
    """Run one package in a fresh child of the standalone server; the child's exit code (negative: signal).
    The child sees this process's CUDA_VISIBLE_DEVICES (the cell's GPU)."""
    gpu = {"CUDA_VISIBLE_DEVICES": os.environ["CUDA_VISIBLE_DEVICES"]} if "CUDA_VISIBLE_DEVICES" in os.environ else {}
    with Client(standalone_address(), family="AF_UNIX") as conn:
        conn.send({**request, "environment": gpu})
        pid = conn.recv()
        if not conn.poll(STANDALONE_TIMEOUT):
            os.kill(pid, signal.SIGKILL)
            raise TimeoutError(f"standalone process gave no answer in {STANDALONE_TIMEOUT:g} s")
        return conn.recv()

def _export(cell: Cell, strict: bool, inputs: tuple[torch.Tensor, ...]) -> torch.export.ExportedProgram:
    model = cell.model().eval()
    cell.stage = "trace"
    with cell.timed("export_seconds"):
        program = torch.export.export(model, tuple(t.clone() for t in inputs), strict=strict)
    cell.record_graph(program.graph_module)
    return program

def _package(cell: Cell, strict: bool, inputs: tuple[torch.Tensor, ...]) -> str:
    program = _export(cell, strict, inputs)
    cell.stage = "compile"
    target = cell.workdir / f"{cell.id}-{'strict' if strict else 'nonstrict'}.pt2"
    with cell.timed("compile_seconds"):
        return torch._inductor.aoti_compile_and_package(program, package_path=str(target))

def aoti_standalone(cell: Cell) -> None:
    """Strict export to an AOTInductor package (the export every style can pass, raw kernels included),
    loaded and run by a fresh process that imports torch only, never the case: what deployment users get.
    The fresh process is a fork of a torch-only server (harness/standalone.py)."""
    inputs = cell.inputs()
    package = _package(cell, True, inputs)
    cell.stage = "run"
    files = {name: str(cell.workdir / f"{cell.id}-{name}") for name in ("in.pt", "out.pt", "log.txt")}
    torch.save([t.cpu() for t in inputs], files["in.pt"])
    request = {"package": package, "inputs_file": files["in.pt"], "output_file": files["out.pt"]}
    request.update(device=cell.device, log=files["log.txt"], cwd=str(cell.workdir))
    with cell.timed("run_seconds"):
        code = run_standalone(request)
    stderr = Path(files["log.txt"]).read_text(errors="replace")
    if code < 0:
        raise CellCrash(f"standalone process died of {signal.Signals(-code).name}: {_tail(stderr)}")
    if code != 0:
        raise RuntimeError(f"standalone process exited {code}: {_tail(stderr)}")
    cell.compare("output", torch.load(files["out.pt"]), cell.expected(inputs))

def _tail(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "(no stderr)"

STYLE, PATH, DEVICE = 'custom_op', 'aoti_standalone', 'cuda'
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
    cell.wrapped = custom_op(CASE)
    aoti_standalone(cell)
    print(f"no failure: {CASE.id}-{STYLE}-{PATH} passes here")


if __name__ == "__main__":
    main()
