"""A cell that runs its repro script's program (the paths of ``RUN_BY_SCRIPT``): the text harness/script/writer.py
writes, loaded from a file as a module (its stage ``build``) and its ``main`` called on each example (``run``),
with what the cell observes attached from outside: the script's ``check`` bound to the cell's comparison (its
tolerance, its words for a mismatch), its input maker and reference marked as the case's own code (a failure
there is a ``CaseBug``), its autotuners given the run's benchmark, the kernels it launches counted
(``run_program``), and the artifact its ``main`` returns kept for the timing phase, with the first inputs it made.
On a compile path the cell's backend stands in for the script's, and the cell's verdict for the script's graph
check: which kernels ran outside the compiled graphs is read from the graphs the backend captured."""

from __future__ import annotations

import dataclasses
import importlib.util
import itertools
import re
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from types import ModuleType, SimpleNamespace
from typing import Any

import torch

from harness.case import Case, load_case
from harness.cell.autotuners import benchmark_with, reachable_autotuners, run_benchmark
from harness.cell.context import Cell
from harness.cell.paths.export import shared_package, standalone_outputs
from harness.cell.paths.training import compare_gradient, training_step
from harness.kernel.casecheck import check_inputs
from harness.kernel.compare import Mismatch
from harness.kernel.interpreter import triton_interpreted
from harness.kernel.styles import AS_SHIPPED, applies, as_shipped
from harness.script.pathcode import COMPILED
from harness.script.stylecode import NAMESPACE
from harness.script.writer import RUN_BY_SCRIPT, Program, write_program
from harness.spec import CellSpec, Outcome

__all__ = ["RUN_BY_SCRIPT", "cell_program", "readable", "run_script"]

LOADED = itertools.count(1)  # the programs this process has loaded, each a module of its own
TRAINING = ("train_eager", "train_compile")
GRADIENT = "gradient of "  # how a training program's check names a gradient
WRONG = "wrong numbers: "  # how a program's own check of the output's form starts its words
REGISTERED: dict[str, str] = {}  # the torch.library namespaces this process's programs took -> their op's key
# how a program's namespace reads (``namespace``): a record writes it as the script does
OWN_NAMESPACE = re.compile(rf"\b{NAMESPACE}_[0-9a-f]{{8}}(?:_\d+)?\b")


def cell_program(cell: Cell, spec: CellSpec) -> Program | None:
    """The program the cell runs, written for its case, style, path, device and tolerance (its op in a namespace
    of its own in this process), or None where the path is not run by its script, or the case has no short script
    or only the whole module's with a stand-in ``Case`` (the cell then runs harness/cell/paths/).
    ``NotApplicable`` where the style cannot wrap the case."""
    if spec.path.id not in RUN_BY_SCRIPT or not _declared(cell.case, spec.module):
        return None
    if spec.path.id == "flop_counter" and cell.case.flops is None:  # no count to check: a skip
        return None
    if spec.path.id in TRAINING and not any(cell.case.takes_grad(i, v) for i, v in enumerate(cell.inputs())):
        return None  # no argument takes a gradient: a skip, or a module's parameters alone train
    applies(spec.style, cell.case)
    if spec.style == AS_SHIPPED:
        cell.measurements.wrapped_as = as_shipped(cell.case).wrapped_as
    on_cpu_kernel = cell.device == "cpu" and not triton_interpreted()
    try:
        program = write_program(
            spec.module, cell.case, spec.style, spec.path.id, cell.device, cell.tolerance, None, on_cpu_kernel
        )
    except Exception:  # NotShort, or a case module the writer cannot cut down
        return None
    if program.whole_module or defines_library(program.case_code):
        return None
    return program.in_namespace(namespace(program.op_key))


def defines_library(code: str) -> bool:
    """Whether the case's own code defines a torch.library namespace or schema itself (``Library(...)``,
    ``torch.library.define``): run again in the same process, as a second cell's program would, that is an error a
    user's process never meets (``custom_op`` and ``triton_op`` replace an op of the same name)."""
    return any(call in code for call in ("Library(", ".define(", "TORCH_LIBRARY"))


def _declared(case: Case, module: str) -> bool:
    """Whether ``case`` is the case its module declares (a script writes the module's; a case changed in memory,
    as the harness's own tests make, has none)."""
    try:
        return load_case(module, case.id) == case
    except Exception:
        return False


def namespace(op_key: str) -> str:
    """A torch.library namespace for a program's op, named for the text that defines it (``Program.op_key``), so
    that cells of one case and style in other processes name it alike (an AOTInductor package calls it by that
    name); new in this process (a second registration of one name would replace the first, under an earlier cell's
    kept artifact): a later program of the same text here takes ``NAME_1``."""
    name = base = f"{NAMESPACE}_{op_key}"
    for again in itertools.count(1):
        if name not in REGISTERED:
            break
        name = f"{base}_{again}"
    REGISTERED[name] = op_key
    return name


def registered(namespace: str, op_key: str) -> bool:
    """Whether a program of this process registered its op in ``namespace`` from the text ``op_key`` names."""
    if REGISTERED.get(namespace) != op_key:
        return False
    return any(name.startswith(f"{namespace}::") for name in torch._C._dispatch_get_all_op_names())


def run_script(cell: Cell, spec: CellSpec, program: Program, run_examples: Callable[..., None]) -> None:
    """Load the program (stage ``build``), attach the cell's observation, and run its ``main`` on the cell's
    examples (``run_examples`` draws them): stage ``run``, or on a compile path ``trace`` until the cell's backend,
    bound in place of the script's, moves it on (the graphs the cell captures decide what ran outside them)."""
    cell.measurements.program = program.digest()
    module = _load(program, cell, spec.id)
    names, made = program.names, []
    main = module.__dict__[names["main"]]
    checked = _ObservedCheck(cell)
    module.__dict__[names["check"]] = checked
    module.__dict__[names["make_inputs"]] = _case_inputs(cell, module.__dict__[names["make_inputs"]], made)
    reference = module.__dict__.get(names["reference"])
    if isinstance(reference, type):
        module.__dict__[names["reference"]] = _case_reference(cell, reference)
    compiled = spec.path.id in COMPILED
    if names["inductor"] in module.__dict__:
        module.__dict__[names["inductor"]] = cell.backend
    if names["held"] in module.__dict__:
        module.__dict__[names["held"]] = lambda graphs: True  # the cell's verdict reads what its backend captured
    if names["flops"] in module.__dict__:  # the cell's verdict compares the two counts
        module.__dict__[names["flops"]] = lambda counted, declared: cell.saw(flops=counted, declared_flops=declared)
    exported = names["export"] in module.__dict__  # its export (and save) timed instead of the whole main
    for role, stage, seconds in (("export", "trace", "export_seconds"), ("save", "compile", "compile_seconds")):
        if names[role] in module.__dict__:
            module.__dict__[names[role]] = _staged(cell, module.__dict__[names[role]], stage, seconds)
    if names["package"] in module.__dict__:  # AOTInductor's compile, shared where the very same program was built
        module.__dict__[names["package"]] = _packaged(cell, spec.path.id, module.__dict__[names["package"]], made)
    if names["standalone"] in module.__dict__:  # the run's torch-only server forks the fresh process
        module.__dict__[names["standalone"]] = lambda package, inputs: standalone_outputs(cell, package, inputs)
    if names["tempfile"] in module.__dict__:  # its files in the cell's work folder, which the run removes
        module.__dict__[names["tempfile"]] = SimpleNamespace(mkdtemp=lambda: tempfile.mkdtemp(dir=cell.workdir))
    cell.autotuners = reachable_autotuners(main)
    benchmark_with(cell.autotuners, run_benchmark())
    if compiled:
        cell.saw(compiled=True, trained=spec.path.id in TRAINING)

    def run(cell: Cell) -> None:
        size, seed = cell.at(None, None)
        setattr(module, names["size"], size)
        setattr(module, names["seed"], seed)
        made.clear()
        checked.graphs_at_first = None
        cell.stage = "trace" if compiled else "run"
        timed = nullcontext() if exported else cell.timed("compile_seconds" if compiled else "run_seconds")
        with timed, _mismatch_of(cell, main):
            returned = main()
        if spec.path.id in TRAINING:  # a training step of the model it trained, timed (as the harness's path)
            cell.timed_call = training_step(returned, cell.inputs(requires_grad=True))
            cell.timed_model, cell.timed_train = returned, True
        elif returned is not None:
            cell.keep_call(returned, made[0])  # the first inputs its main made: those it checked it with first
        if spec.path.id == "dynamic":
            cell.saw(recompiles=cell.capture.graphs - (checked.graphs_at_first or 0))
        if spec.path.id == "cudagraphs":
            cell.saw(cudagraph_skips=torch._dynamo.utils.counters["inductor"].get("cudagraph_skips", 0))

    run_examples(cell, run, spec.path.examples)


def readable(outcome: Outcome, cell: Cell) -> Outcome:
    """The outcome of a cell that ran a program, as its script writes it: the op in the script's namespace
    (``mylib``) and the program's file by its name alone (the folder is the run's), in its error and in what the
    compiled graphs held."""
    program, file = cell.program, cell.program_file
    if program is None or file is None:
        return outcome

    def written(text: str) -> str:
        return OWN_NAMESPACE.sub(NAMESPACE, text).replace(str(file), file.name)

    for field in ("error", "traceback", "reason"):
        text = getattr(outcome, field, None)
        if text:
            setattr(outcome, field, written(text))
    held = ("captured", "captured_backward", "graph_break_reasons")
    outcome.capture = dataclasses.replace(
        outcome.capture, **{field: tuple(map(written, getattr(outcome.capture, field))) for field in held}
    )
    return outcome


def _load(program: Program, cell: Cell, cell_id: str) -> ModuleType:
    """The program as a module of its own, from a file named for the cell (Triton reads a kernel's source from
    it)."""
    name = f"cell_program_{next(LOADED)}"
    cell.workdir.mkdir(parents=True, exist_ok=True)
    file = cell.program_file = cell.workdir / f"{cell_id}.py"
    file.write_text(program.text)
    found = importlib.util.spec_from_file_location(name, file)
    assert found is not None and found.loader is not None
    module = importlib.util.module_from_spec(found)
    sys.modules[name] = module  # what the program defines (a dataclass, an autograd.Function) finds its module
    cell.stage = "build"
    found.loader.exec_module(module)
    return module


def _staged(cell: Cell, call: Callable[..., Any], stage: str, seconds: str) -> Callable[..., Any]:
    """The program's ``torch.export.export`` (or ``save``, or AOTInductor's compile), called at its stage (``trace``,
    ``compile``) and timed, the graph an export gives recorded; the stage is ``run`` after it."""

    def staged(*args: Any, **kwargs: Any) -> Any:
        cell.stage = stage
        with cell.timed(seconds):
            found = call(*args, **kwargs)
        if isinstance(found, torch.export.ExportedProgram):
            cell.record_graph(found.graph_module)
        cell.stage = "run"
        return found

    return staged


def _packaged(cell: Cell, path_id: str, compile_package: Callable[..., str], made: list[Any]) -> Callable[..., str]:
    """The program's ``aoti_compile_and_package``, called at stage ``compile`` and timed; the package shared with
    the cells of the case and style that compile the very same program (``shared_package``), a dynamic one aside."""

    staged = _staged(cell, compile_package, "compile", "compile_seconds")

    def packaged(program: torch.export.ExportedProgram, *args: Any, **kwargs: Any) -> str:
        def build() -> str:
            return staged(program, *args, **kwargs)

        if path_id == "aoti_dynamic":
            return build()
        return shared_package(cell, program, made[0] if made else (), path_id, build, registered)

    return packaged


@contextmanager
def _mismatch_of(cell: Cell, main: Callable[[], Any]) -> Iterator[None]:
    """A check the program's ``main`` makes itself (an output that is no ``TwoTensor``, a batch of the wrong size)
    raises ``AssertionError("wrong numbers: ...")``: the cell's ``Mismatch``, at stage ``compare``."""
    try:
        yield
    except AssertionError as error:
        frames = traceback.extract_tb(error.__traceback__)
        said = str(error)
        if not (said.startswith(WRONG) and frames and frames[-1].name == main.__name__):
            raise
        cell.stage = "compare"
        raise Mismatch(said.removeprefix(WRONG)) from None


class _ObservedCheck:
    """The script's check, as the cell compares: within its tolerance, a ``Mismatch`` naming what differs; the
    graphs compiled by the first comparison kept (a later graph is a recompile)."""

    def __init__(self, cell: Cell) -> None:
        self.cell = cell
        self.graphs_at_first: int | None = None

    def __call__(self, what: str, out: Any, expected: Any) -> None:
        cell = self.cell
        if self.graphs_at_first is None:
            self.graphs_at_first = cell.capture.graphs
        cell.synchronize()
        if what.startswith(GRADIENT):
            compare_gradient(cell, what.removeprefix(GRADIENT), out, expected)
        else:
            cell.compare(what, out, expected)
        cell.measurements.calls = (cell.measurements.calls or 0) + 1
        cell.stage = "run"


def _case_inputs(cell: Cell, make: Callable[..., Any], made: list[Any]) -> Callable[..., Any]:
    def make_inputs(size: int, device: str, seed: int) -> Any:
        """The case's input maker, its failure the case's own (``CaseBug``), what it gives checked (and kept in
        ``made``)."""
        with cell.own("make_inputs", size, seed):
            inputs = make(size, device, seed)
            check_inputs(cell.case, inputs)
        made.append(inputs)
        return inputs

    return make_inputs


def _case_reference(cell: Cell, reference: type) -> type:
    class Reference(reference):  # type: ignore[misc, valid-type]
        """The case's reference, its failure the case's own (``CaseBug``)."""

        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            with cell.own("reference"):
                return super().__call__(*args, **kwargs)

    Reference.__name__, Reference.__qualname__ = reference.__name__, reference.__qualname__
    return Reference
