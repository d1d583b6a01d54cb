"""The export and deploy group: ``torch.export`` and AOTInductor packages, in this process or a fresh one."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from harness.cell import CellCrash
from harness.paths import path
from harness.paths.common import _infer
from harness.standalone import run_standalone

if TYPE_CHECKING:
    from harness.cell import Cell

GROUP = "export and deploy"


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
