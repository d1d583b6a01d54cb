"""The export and deploy group: ``torch.export`` and AOTInductor packages, in this process or a fresh one."""

from __future__ import annotations

import fcntl
import hashlib
import inspect
import json
import re
import shutil
import signal
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from harness.case import Inputs, copy_inputs
from harness.cell.context import CellCrash
from harness.cell.paths.common import _infer, path
from harness.cell.standalone import run_standalone
from harness.kernel.launches import kernel_name

if TYPE_CHECKING:
    from harness.cell.context import Cell

GROUP = "export and deploy"


def _export(
    cell: Cell, strict: bool, inputs: Inputs, dynamic: tuple[Any, ...] | None = None
) -> torch.export.ExportedProgram:
    """Export the cell's model; ``dynamic``: one dynamic-shape spec per input (``_dynamic_shapes``), or static."""
    model = cell.model().eval()
    # export wants the specs shaped like forward's parameters (a ``*inputs`` parameter takes them as one tuple)
    shapes = None if dynamic is None else inspect.signature(model.forward).bind(*dynamic).arguments
    cell.stage = "trace"
    with cell.timed("export_seconds"):
        args = copy_inputs(inputs)
        program = torch.export.export(model, args, dynamic_shapes=shapes, strict=strict)
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


def _package(cell: Cell, strict: bool, inputs: Inputs) -> str:
    return _compile(cell, _export(cell, strict, inputs), strict)


def _compile(cell: Cell, program: torch.export.ExportedProgram, strict: bool) -> str:
    cell.stage = "compile"
    target = cell.workdir / f"{cell.case_style}-{'strict' if strict else 'nonstrict'}.pt2"
    with cell.timed("compile_seconds"):
        return torch._inductor.aoti_compile_and_package(program, package_path=str(target))


def program_digest(program: torch.export.ExportedProgram, inputs: Inputs) -> str:
    """What AOTInductor compiles, as a digest: the program as printed (graph, shapes, signature, ranges; not the
    comments naming the source line each node came from), its weights and constants byte for byte, the Triton
    kernels and constant arguments its graph names by index (in the side table, emptied at each cell's start), and
    the inputs' shapes, strides and dtypes."""
    from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table

    printed = "\n".join(
        line for line in str(program).splitlines() if line.strip() and not line.lstrip().startswith("#")
    )
    found = hashlib.sha256(printed.encode())  # without the source comments and the blank lines between sources
    tensors = {**program.state_dict, **getattr(program, "constants", {})}
    for name, value in sorted(tensors.items()):
        found.update(name.encode())
        if isinstance(value, torch.Tensor):
            value = value.detach().cpu().contiguous()
            found.update(f"{value.dtype}{tuple(value.shape)}".encode())
            found.update(value.reshape(-1).view(torch.uint8).numpy().tobytes())
        else:
            found.update(repr(value).encode())
    kernels, constants = (getattr(kernel_side_table, name, {}) for name in ("id_to_kernel", "constant_args"))
    for index in sorted(set(re.findall(r"\bkernel_idx = (\d+)", printed)), key=int):
        found.update(f"kernel {index}: {kernel_name(kernels.get(int(index)))}".encode())
    for index in sorted(set(re.findall(r"\bconstant_args_idx = (\d+)", printed)), key=int):
        found.update(f"constants {index}: {sorted(constants.get(int(index), {}).items(), key=str)!r}".encode())
    for value in inputs:
        shown = (
            (value.dtype, tuple(value.shape), value.stride(), value.device.type)
            if isinstance(value, torch.Tensor)
            else value
        )
        found.update(repr(shown).encode())
    return found.hexdigest()


def _digest(program: torch.export.ExportedProgram, inputs: Inputs) -> str | None:
    """``program_digest``, or None where it cannot be taken (a constant it cannot read): then nothing is shared."""
    try:
        return program_digest(program, inputs)
    except Exception:
        return None


def _strict_package(cell: Cell, inputs: Inputs, path_id: str) -> str:
    """The strict export's package of the case and style at the case's first inputs: aoti_strict and
    aoti_standalone build the very same one (same model, same inputs, same export and compile calls, same
    process state: a fresh fork of the run's zygote), so within a run the first of the two builds it, holding a
    lock, into the run's package folder and the other loads that file, as a deployment loads what a build
    produced. A failed build leaves no file: the other cell builds (and fails) on its own. Only first
    attempts share: a cell run again (``attempt`` > 1) exports and compiles anew, so a flaky build is
    sampled again."""
    stem = _shared_stem(cell)
    if stem is None:
        return _package(cell, True, inputs)
    with open(f"{stem}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or when the process dies
        builder = _builder(stem)
        if builder:  # what the builder's export saw, and which cell built the package
            cell.saw(captured=tuple(builder["captured"]))
            cell.measurements.package_built_by = builder["package_built_by"]
            return f"{stem}.pt2"
        program = _export(cell, True, inputs)
        package = _compile(cell, program, True)
        shutil.copyfile(package, f"{stem}.pt2")
        builder = {
            "captured": cell.capture.captured,
            "package_built_by": f"{cell.case_style}-{path_id}",
            "program": _digest(program, inputs),
        }
        Path(f"{stem}.json").write_text(json.dumps(builder))
        return package


def _shared_stem(cell: Cell) -> Path | None:
    """Where the case and style's shared strict package lies in the run's package folder; None where this cell
    shares none (no folder: a repro's run; a re-run, so a flaky build is sampled again; a drawn example)."""
    folder = cell.locations.packages
    if not folder or not cell.share or cell.example is not None:
        return None
    return Path(folder) / f"{cell.case_style}-shared-strict"


def _builder(stem: Path) -> dict[str, Any]:
    """What the cell that built the strict package at ``stem`` wrote beside it ({} before it is built); read with
    ``stem``'s lock held."""
    built = Path(f"{stem}.json")
    return json.loads(built.read_text()) if built.exists() else {}


def _nonstrict_package(cell: Cell, inputs: Inputs) -> str:
    """The non-strict export compiled to a package; where its program is the strict one's byte for byte
    (``program_digest``) and the case and style's strict package is built already, that package: AOTInductor
    would compile the same input to the same code (about 5 s of CPU a cell, in 72 of the matrix's 117 cells)."""
    program = _export(cell, False, inputs)
    stem = _shared_stem(cell)
    if stem is not None:
        with open(f"{stem}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            builder = _builder(stem)
        if builder.get("program") is not None and builder["program"] == _digest(program, inputs):
            cell.measurements.package_built_by = builder["package_built_by"]
            return f"{stem}.pt2"
    return _compile(cell, program, False)


def _load_and_run(cell: Cell, package: str, inputs: Inputs, run: Callable[..., None] = _infer) -> None:
    """Load the AOTInductor package in this process and ``run`` it on ``inputs`` (stage ``run``)."""
    cell.stage = "run"
    runner = torch._inductor.aoti_load_package(package)
    with cell.timed("run_seconds"):
        run(cell, runner, inputs)


@path
def aoti_strict(cell: Cell) -> None:
    """Strict export, AOTInductor package, loaded and run in this process."""
    inputs = cell.inputs()
    _load_and_run(cell, _strict_package(cell, inputs, "aoti_strict"), inputs)


@path
def aoti_nonstrict(cell: Cell) -> None:
    """Non-strict export, AOTInductor package (the strict export's, where the two programs are the same),
    loaded and run in this process."""
    inputs = cell.inputs()
    _load_and_run(cell, _nonstrict_package(cell, inputs), inputs)


@path
def aoti_standalone(cell: Cell) -> None:
    """Strict export to an AOTInductor package (the export every style can pass, raw kernels included),
    loaded and run by a fresh process that imports torch only, never the case: what deployment users get.
    The fresh process is a fork of a torch-only server (harness/cell/standalone.py)."""
    inputs = cell.inputs()
    package = _strict_package(cell, inputs, "aoti_standalone")
    cell.stage = "run"
    files = {name: str(cell.workdir / f"{cell.case_style}-{name}") for name in ("in.pt", "out.pt", "log.txt")}
    # as they are: a strided view keeps its strides (.cpu() would make a non-dense view contiguous, and the
    # package, compiled for the view's strides, would read the wrong elements)
    torch.save(list(inputs), files["in.pt"])
    request = {"package": package, "inputs_file": files["in.pt"], "output_file": files["out.pt"]}
    request.update(device=cell.device, log=files["log.txt"], cwd=str(cell.workdir))
    with cell.timed("run_seconds"):
        code = run_standalone(request, cell.locations.standalone)
    stderr = Path(files["log.txt"]).read_text(errors="replace")
    if code < 0:
        raise CellCrash(f"standalone process died of {signal.Signals(-code).name}: {_tail(stderr)}")
    if code != 0:
        raise RuntimeError(f"standalone process exited {code}: {_tail(stderr)}")
    cell.compare("output", torch.load(files["out.pt"]), cell.expected(inputs))


def _tail(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "(no stderr)"


def _dynamic_shapes(cell: Cell, inputs: Inputs) -> tuple[dict[int, Any] | None, ...]:
    """One ``torch.export.Dim`` within the case's ``size_bounds`` for every dim its ``dynamic_dims`` names (by
    default the dims the size moves, ``Case.size_dims``): the dims the case's size drives, which must stay equal."""
    case = cell.case
    low, high = case.bounds
    size = torch.export.Dim("size", min=low, max=high)
    dims = case.size_dims()
    if len(dims) != len(inputs):
        raise ValueError(f"{case.id}: dynamic_dims names {len(dims)} inputs, make_inputs gives {len(inputs)}")
    return tuple({dim: size for dim in input_dims} or None for input_dims in dims)


def _other_sizes(cell: Cell) -> tuple[int, list[int]]:
    """The size traced (the cell's example, else the case's first size) and ``Case.sizes_around`` it."""
    traced = cell.example[0] if cell.example else cell.case.sizes[0]
    return traced, cell.case.sizes_around(traced)


def _run_sizes(cell: Cell, runner: Any, inputs: Inputs) -> None:
    """Run ``runner`` at the traced inputs, then at every other size, each compared with the reference."""
    traced, others = _other_sizes(cell)
    cell.stage = "run"
    _infer(cell, runner, inputs, what=f"output at traced size {traced}")
    for size in others:
        cell.stage = "run"
        _infer(cell, runner, cell.inputs(size), what=f"output at size {size}")


def _run_export_dynamic(cell: Cell, strict: bool) -> None:
    inputs = cell.inputs()
    program = _export(cell, strict, inputs, _dynamic_shapes(cell, inputs))
    _run_sizes(cell, program.module(), inputs)


@path
def export_dynamic_strict(cell: Cell) -> None:
    """Strict export with the case's size-driven dims dynamic (``_dynamic_shapes``), then ``ep.module()`` at the
    traced size and at two or more others (``_other_sizes``), each compared."""
    _run_export_dynamic(cell, strict=True)


@path
def export_dynamic_nonstrict(cell: Cell) -> None:
    """Non-strict export with the case's size-driven dims dynamic, then ``ep.module()`` at the traced size and at
    two or more others, each compared."""
    _run_export_dynamic(cell, strict=False)


@path
def aoti_dynamic(cell: Cell) -> None:
    """The dynamic strict export compiled by AOTInductor, loaded in this process, run at the traced size and at
    two or more others, each compared."""
    inputs = cell.inputs()
    program = _export(cell, True, inputs, _dynamic_shapes(cell, inputs))
    cell.stage = "compile"
    target = cell.workdir / f"{cell.case_style}-dynamic.pt2"
    with cell.timed("compile_seconds"):
        package = torch._inductor.aoti_compile_and_package(program, package_path=str(target))
    _load_and_run(cell, package, inputs, _run_sizes)


@path
def export_saveload(cell: Cell) -> None:
    """Strict export, ``torch.export.save`` to a file (stage ``compile``: making the artifact), then
    ``torch.export.load`` of that file and its ``.module()`` run and compared (stage ``run``).

    The load happens in this process, but from the file only: the exported program is dropped before loading,
    so nothing in memory from the export is reused. What the process still has is what a deployment would have
    imported, its kernel library: the case's module and the style's ``torch.library`` registrations, without
    which a loader cannot resolve the ``harness::`` ops (aoti_standalone measures the torch-only process).
    The loader does not read the in-memory table of traced Triton kernels: torch's deserializer refuses a raw
    kernel node ("deserialize nyi"), while saving one reads the kernel's compile cache in this process."""
    inputs = cell.inputs()
    program = _export(cell, True, inputs)
    cell.stage = "compile"
    target = cell.workdir / f"{cell.case_style}-saveload.pt2"
    with cell.timed("compile_seconds"):
        torch.export.save(program, target)
    del program
    cell.stage = "run"
    loaded = torch.export.load(target)
    with cell.timed("run_seconds"):
        _infer(cell, loaded.module(), inputs)
