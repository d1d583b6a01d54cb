"""Paths: the ways a model reaches the GPU (or CPU), each a function that runs a cell and compares it."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from harness.cell import CellCrash
from harness.compare import Mismatch
from harness.standalone import run_standalone

if TYPE_CHECKING:
    from harness.cell import Cell

PathRunner = Callable[["Cell"], None]
PATHS: dict[str, PathRunner] = {}
CUDAGRAPH_CALLS = 3


def path(runner: PathRunner) -> PathRunner:
    """Register a path under its function's name (the id used in matrix.toml and cell ids)."""
    PATHS[runner.__name__] = runner
    return runner


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


@path
def eager(cell: Cell) -> None:
    """The style called directly, as in a plain PyTorch program."""
    model = cell.model()
    cell.stage = "run"
    with cell.timed("run_seconds"):
        _infer(cell, model, cell.inputs())


@path
def compile(cell: Cell) -> None:
    """Default ``torch.compile`` (graph breaks allowed)."""
    _first_call(cell, _compiled(cell), cell.inputs())


@path
def fullgraph(cell: Cell) -> None:
    """``torch.compile(fullgraph=True)``: any graph break fails."""
    _first_call(cell, _compiled(cell, fullgraph=True), cell.inputs())


@path
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


@path
def cudagraphs(cell: Cell) -> None:
    """``mode="reduce-overhead"``: several calls with fresh inputs, each compared."""
    model = _compiled(cell, mode="reduce-overhead")
    cell.stage = "trace"
    for seed in range(CUDAGRAPH_CALLS):
        inputs = cell.inputs(seed=seed)
        with torch.no_grad():
            out = model(*(t.clone() for t in inputs))
            out = out.clone() if isinstance(out, torch.Tensor) else out  # the next replay overwrites it
        cell.compare(f"output of call {seed + 1}", out, cell.expected(inputs))
    skips = torch._dynamo.utils.counters["inductor"].get("cudagraph_skips", 0)
    cell.diagnostics["cudagraph_skips"] = skips


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


@path
def export_strict(cell: Cell) -> None:
    """``torch.export.export(strict=True)`` (Dynamo tracing), then ``ep.module()``."""
    _run_export(cell, strict=True)


@path
def export_nonstrict(cell: Cell) -> None:
    """``torch.export.export(strict=False)`` (Python tracing), then ``ep.module()``."""
    _run_export(cell, strict=False)


def _package(cell: Cell, strict: bool, inputs: tuple[torch.Tensor, ...]) -> str:
    program = _export(cell, strict, inputs)
    cell.stage = "compile"
    target = cell.workdir / f"{cell.id}-{'strict' if strict else 'nonstrict'}.pt2"
    with cell.timed("compile_seconds"):
        return torch._inductor.aoti_compile_and_package(program, package_path=str(target))


def _run_aoti(cell: Cell, strict: bool) -> None:
    inputs = cell.inputs()
    package = _package(cell, strict, inputs)
    cell.stage = "run"
    runner = torch._inductor.aoti_load_package(package)
    with cell.timed("run_seconds"):
        _infer(cell, runner, inputs)


@path
def aoti_strict(cell: Cell) -> None:
    """Strict export, AOTInductor package, loaded and run in this process."""
    _run_aoti(cell, strict=True)


@path
def aoti_nonstrict(cell: Cell) -> None:
    """Non-strict export, AOTInductor package, loaded and run in this process."""
    _run_aoti(cell, strict=False)


@path
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


def _train(cell: Cell, compiled: bool) -> None:
    inputs = cell.inputs(requires_grad=True)
    model = _compiled(cell, train=True) if compiled else cell.model(train=True)
    cell.stage = "trace" if compiled else "run"
    out, grads, names = _forward_backward(model, inputs)
    reference = cell.reference_model()
    expected, expected_grads, _ = _forward_backward(reference, cell.inputs(requires_grad=True))
    cell.compare("output", out, expected)
    for name, grad, expected_grad in zip(names, grads, expected_grads, strict=True):
        if grad is None or expected_grad is None:
            if grad is not expected_grad:
                cell.stage = "compare"
                raise Mismatch(f"gradient of {name}: {'missing' if grad is None else 'unexpected'}")
            continue
        cell.compare(f"gradient of {name}", grad, expected_grad)


def _forward_backward(model: Any, inputs: tuple[torch.Tensor, ...]) -> Any:
    out = model(*inputs)
    gen = torch.Generator().manual_seed(1)
    grad_out = torch.randn(out.shape, generator=gen).to(device=out.device, dtype=out.dtype)
    out.backward(grad_out)
    if out.is_cuda:
        torch.cuda.synchronize()
    named = [(f"input {i}", t) for i, t in enumerate(inputs) if t.requires_grad]
    named += [(name, p) for name, p in model.named_parameters()]
    return out.detach(), [t.grad for _, t in named], [name.removeprefix("_orig_mod.") for name, _ in named]


@path
def train_eager(cell: Cell) -> None:
    """Forward and backward in eager mode; output and every gradient checked against the reference."""
    _train(cell, compiled=False)


@path
def train_compile(cell: Cell) -> None:
    """Forward and backward through ``torch.compile``; output and gradients checked."""
    _train(cell, compiled=True)


@path
def cpu_fallback(cell: Cell) -> None:
    """CPU tensors, eager: works where the style has a CPU kernel."""
    eager(cell)


@path
def cpu_compile(cell: Cell) -> None:
    """CPU tensors under ``torch.compile``."""
    compile(cell)


@path
def flop_counter(cell: Cell) -> None:
    """``FlopCounterMode`` must report the op's declared flops (the control row checks the output only)."""
    from torch.utils.flop_counter import FlopCounterMode

    inputs = cell.inputs()
    model = cell.model()
    cell.stage = "run"
    counter = FlopCounterMode(display=False)
    with counter:
        _infer(cell, model, inputs)
    counted = sum(n for op, n in counter.get_flop_counts().get("Global", {}).items() if str(op).startswith("harness."))
    cell.diagnostics["flops"] = counted
    if cell.style != "control":
        declared = _declared_flops(cell, inputs)
        if counted != declared:
            cell.stage = "compare"
            raise Mismatch(f"flops: FlopCounterMode counted {counted} for the op, the case declares {declared}")


def _declared_flops(cell: Cell, inputs: tuple[torch.Tensor, ...]) -> int:
    """The case's flop formula over the shapes the op is really called with inside the module."""
    declared = 0

    def spy(*args: torch.Tensor) -> Any:
        nonlocal declared
        declared += cell.case.flops(*(tuple(t.shape) for t in args))
        return cell.case.reference(*args)

    with torch.no_grad():
        cell.case.build_module(spy).to(cell.device)(*(t.clone() for t in inputs))
    return declared
