"""Paths: the ways a model reaches the GPU (or CPU), each a function that runs a cell and compares it."""

from __future__ import annotations

import json
import select
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from harness.cell import CellCrash
from harness.compare import Mismatch

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


# The standalone server: a Python that imports torch only (never the harness or a case) and forks one child per
# package. Each child is what a deployment process is - torch imported, the package loaded and run, nothing
# else registered - minus the cost of importing torch and of the CPU-ISA probes a package load runs (one fresh
# Python per ISA), which the server pays once before any fork. It never touches CUDA, so forking is safe.
STANDALONE_SERVER = r"""
import ctypes, faulthandler, json, os, signal, sys, traceback
os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"  # asking torch.cuda.is_available() here must not poison fork
import torch
import torch._inductor.package
from torch._inductor.cpu_vec_isa import pick_vec_isa


def die_with_parent():
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: a killed cell process leaves no orphans


def load_and_run(package, inputs_file, output_file, device):
    inputs = [t.to(device) for t in torch.load(inputs_file)]
    runner = torch._inductor.aoti_load_package(package)
    with torch.no_grad():
        out = runner(*inputs)
    torch.save(out.cpu() if isinstance(out, torch.Tensor) else out, output_file)


die_with_parent()
pick_vec_isa()
del os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"]  # the children ask for CUDA as any process does
print("ready", flush=True)
for line in sys.stdin:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        die_with_parent()
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
    print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
"""
STANDALONE_TIMEOUT = 600.0
_standalone_servers: list[subprocess.Popen[str]] = []  # this process's server, started by the first standalone cell


def _standalone_server() -> subprocess.Popen[str]:
    if _standalone_servers and _standalone_servers[0].poll() is None:
        return _standalone_servers[0]
    _standalone_servers.clear()
    server = subprocess.Popen(
        [sys.executable, "-c", STANDALONE_SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert server.stdout is not None
    if server.stdout.readline() != "ready\n":
        server.kill()
        raise RuntimeError(f"standalone server exited {server.wait()} while starting (its stderr is in the cell log)")
    _standalone_servers.append(server)
    return server


def _run_standalone(request: dict[str, str]) -> int:
    """Run one request in a fresh child of the standalone server; the child's exit code (negative: signal)."""
    server = _standalone_server()
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write(json.dumps(request) + "\n")
    server.stdin.flush()
    ready, _, _ = select.select([server.stdout], [], [], STANDALONE_TIMEOUT)
    answer = server.stdout.readline() if ready else ""
    if not answer:
        server.kill()  # its child dies with it
        server.wait()
        raise TimeoutError(f"standalone process gave no answer in {STANDALONE_TIMEOUT:g} s")
    return int(answer)


@path
def aoti_standalone(cell: Cell) -> None:
    """Strict export to an AOTInductor package (the export every style can pass, raw kernels included),
    loaded and run by a fresh process that imports torch only, never the case: what deployment users get.
    The fresh process is a fork of a torch-only server (see ``STANDALONE_SERVER``)."""
    inputs = cell.inputs()
    package = _package(cell, True, inputs)
    cell.stage = "run"
    files = {name: str(cell.workdir / f"{cell.id}-{name}") for name in ("in.pt", "out.pt", "log.txt")}
    torch.save([t.cpu() for t in inputs], files["in.pt"])
    request = {"package": package, "inputs_file": files["in.pt"], "output_file": files["out.pt"]}
    request.update(device=cell.device, log=files["log.txt"], cwd=str(cell.workdir))
    with cell.timed("run_seconds"):
        code = _run_standalone(request)
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
