"""The export and deploy group: ``torch.export`` and AOTInductor packages, in this process or a fresh one."""

from __future__ import annotations

import fcntl
import hashlib
import inspect
import json
import re
import shutil
import signal
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from harness.case import Inputs, copy_inputs
from harness.cell.context import CellCrash
from harness.cell.paths.common import _infer, path
from harness.cell.standalone import run_standalone
from harness.kernel.launches import kernel_name
from harness.script.stylecode import NAMESPACE

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


def _compile(cell: Cell, program: torch.export.ExportedProgram, kind: str) -> str:
    cell.stage = "compile"
    target = cell.workdir / f"{cell.case_style}-{kind}.pt2"
    with cell.timed("compile_seconds"):
        package = torch._inductor.aoti_compile_and_package(program, package_path=str(target))
    cell.stage = "run"
    return package


def program_digest(program: torch.export.ExportedProgram, inputs: Inputs, namespace: str | None = None) -> str:
    """What AOTInductor compiles, as a digest: the program as printed (graph, shapes, signature, ranges; not the
    comments naming the source line each node came from; ``namespace``, a cell program's own op namespace, written
    as its script writes it), its weights and constants byte for byte, the Triton kernels and constant arguments its
    graph names by index in the side table, and the inputs' shapes, strides and dtypes. The side table is the
    process's: a cell process that traced other cells' kernels before numbers the same program's kernels higher, so
    each index is counted in the order the graph first names it (``_renumbered``)."""
    from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table

    printed = "\n".join(
        line for line in str(program).splitlines() if line.strip() and not line.lstrip().startswith("#")
    )
    if namespace:
        printed = printed.replace(namespace, NAMESPACE)
    printed, kernel_order = _renumbered(printed, "kernel_idx")
    printed, constant_order = _renumbered(printed, "constant_args_idx")
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
    for counted, index in enumerate(kernel_order):
        found.update(f"kernel {counted}: {kernel_name(kernels.get(index))}".encode())
    for counted, index in enumerate(constant_order):
        found.update(f"constants {counted}: {sorted(constants.get(index, {}).items(), key=str)!r}".encode())
    for value in inputs:
        shown = (
            (value.dtype, tuple(value.shape), value.stride(), value.device.type)
            if isinstance(value, torch.Tensor)
            else value
        )
        found.update(repr(shown).encode())
    return found.hexdigest()


def _renumbered(printed: str, field: str) -> tuple[str, list[int]]:
    """``printed`` with each ``field = N`` numbered by where the text first names N (0, 1, ...), and the side
    table's indices in that order."""
    order: dict[int, int] = {}

    def counted(match: re.Match[str]) -> str:
        return f"{field} = {order.setdefault(int(match.group(1)), len(order))}"

    return re.sub(rf"\b{field} = (\d+)", counted, printed), list(order)


def shared_package(
    cell: Cell,
    program: torch.export.ExportedProgram,
    inputs: Inputs,
    path_id: str,
    build: Callable[[], str],
    registered: Callable[[str, str], bool] | None = None,
) -> str:
    """The AOTInductor package of ``program``: ``build()``'s, or the one a cell of the same case and style built
    earlier in the run from a program with the same digest (``program_digest``: the very input AOTInductor
    compiles, in a fresh fork of the run's zygote), as a deployment loads what a build produced. The first such
    cell builds it holding a lock, the others wait and load its file. A package that calls the op of its builder's
    program by its namespace is loaded only where this process ``registered`` that namespace from the same text
    (else the cell builds its own); a failed build leaves nothing shared, so the next cell builds (and fails) on
    its own."""
    stem = _shared_stem(cell, program, inputs)
    if stem is None:
        return build()
    with open(f"{stem}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or when the process dies
        built = Path(f"{stem}.json")
        if not built.exists():
            package = build()
            shutil.copyfile(package, f"{stem}.pt2")
            own = cell.program.namespace if cell.program and _names(package, cell.program.namespace) else None
            builder = {"package_built_by": f"{cell.case_style}-{path_id}", "namespace": own}
            built.write_text(json.dumps(builder))
            return package
        builder = json.loads(built.read_text())
    calls = builder["namespace"]
    if calls is None or (cell.program is not None and registered and registered(calls, cell.program.op_key)):
        cell.measurements.package_built_by = builder["package_built_by"]
        return f"{stem}.pt2"
    return build()


def _shared_stem(cell: Cell, program: torch.export.ExportedProgram, inputs: Inputs) -> Path | None:
    """Where the package of the case and style built from ``program`` lies in the run's package folder (named for
    its op's text too, where the cell runs a script's program); None where this cell shares none (no folder: a
    repro's run; a re-run, so a flaky build is sampled again; a drawn example; a program whose digest cannot be
    taken)."""
    folder = cell.locations.packages
    if not folder or not cell.share or cell.example is not None:
        return None
    own = cell.program.namespace if cell.program else None
    try:
        digest = program_digest(program, inputs, own)
    except Exception:  # a constant it cannot read
        return None
    return Path(folder) / f"{cell.case_style}-{cell.program.op_key if cell.program else 'harness'}-{digest[:24]}"


def _names(package: str, namespace: str) -> bool:
    """Whether any file of the package names ``namespace`` (not merely a longer one that begins with it)."""
    named = re.compile(rf"{re.escape(namespace)}(?![0-9A-Za-z_])".encode())
    with zipfile.ZipFile(package) as archive:
        return any(named.search(archive.read(name)) for name in archive.namelist())


def standalone_outputs(cell: Cell, package: str, inputs: Inputs) -> Any:
    """What the package returns on ``inputs``, loaded and run by a fresh child of the run's torch-only server
    (harness/cell/standalone.py), which imports no case and no op of this process: what deployment users get."""
    files = {name: str(cell.workdir / f"{cell.case_style}-{name}") for name in ("in.pt", "out.pt", "log.txt")}
    # as they are: a strided view keeps its strides (.cpu() would make a non-dense view contiguous, and the
    # package, compiled for the view's strides, would read the wrong elements)
    torch.save(list(inputs), files["in.pt"])
    request = {"package": package, "inputs_file": files["in.pt"], "output_file": files["out.pt"]}
    request.update(device=cell.device, log=files["log.txt"], cwd=str(cell.workdir))
    with cell.timed("run_seconds"):
        code = run_standalone(request, cell.locations.standalone)
    said = (Path(files["log.txt"]).read_text(errors="replace").strip().splitlines() or ["(nothing on stderr)"])[-1]
    if code < 0:
        raise CellCrash(f"standalone process died of {signal.Signals(-code).name}: {said}")
    if code != 0:
        raise RuntimeError(f"standalone process exited {code}: {said}")
    return torch.load(files["out.pt"])


def _load_and_run(cell: Cell, package: str, inputs: Inputs, run: Callable[..., None] = _infer) -> None:
    """Load the AOTInductor package in this process and ``run`` it on ``inputs`` (stage ``run``)."""
    cell.stage = "run"
    runner = torch._inductor.aoti_load_package(package)
    with cell.timed("run_seconds"):
        run(cell, runner, inputs)


def _aoti(cell: Cell, strict: bool, path_id: str) -> tuple[str, Inputs]:
    inputs = cell.inputs()
    program = _export(cell, strict, inputs)
    kind = "strict" if strict else "nonstrict"
    return shared_package(cell, program, inputs, path_id, lambda: _compile(cell, program, kind)), inputs


@path
def aoti_strict(cell: Cell) -> None:
    """Strict export, AOTInductor package, loaded and run in this process."""
    _load_and_run(cell, *_aoti(cell, True, "aoti_strict"))


@path
def aoti_nonstrict(cell: Cell) -> None:
    """Non-strict export, AOTInductor package, loaded and run in this process."""
    _load_and_run(cell, *_aoti(cell, False, "aoti_nonstrict"))


@path
def aoti_standalone(cell: Cell) -> None:
    """Strict export to an AOTInductor package (the export every style can pass, raw kernels included),
    loaded and run by a fresh process that imports torch only, never the case (``standalone_outputs``)."""
    package, inputs = _aoti(cell, True, "aoti_standalone")
    cell.stage = "run"
    cell.compare("output", standalone_outputs(cell, package, inputs), cell.expected(inputs))


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
    _load_and_run(cell, _compile(cell, program, "dynamic"), inputs, _run_sizes)


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
