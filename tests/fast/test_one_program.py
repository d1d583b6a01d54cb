"""One program per cell: every harness function a cell runs, apart from the runner that observes it, is in the
program whose digest the cell's record carries (an earlier record is reused only for the same program); the cell's
repro script is the short one, the case's own code with the style and path written out, none of the harness's.
Checked with a profiler on a set of cells that runs every style and every path at least once."""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import importlib.util
import inspect
import itertools
import os
import re
import sys
from pathlib import Path
from types import CodeType

import pytest

from harness.bundle import Bundle, BundleError, bundle
from harness.case import load_case
from harness.cell import scripted
from harness.cell.paths import PATHS
from harness.cell.program import case_imports, program
from harness.cell.runner import run_cell
from harness.kernel.styles import AS_SHIPPED, KNOWN_STYLES
from harness.matrix.config import load_matrix
from harness.records.record import Record
from harness.repro.script import script_source
from harness.script.writer import RUN_BY_SCRIPT, write_program
from harness.spec import CellSpec, Tolerance
from tests.conftest import REPO, cell_spec

HARNESS = REPO / "harness"
MATRIX = load_matrix(REPO / "matrix.toml")
# what runs a cell and observes it from outside its program: the runner, the bundler that computes the program's
# digest, the build cache's dispatch to the style's functions (and the op name it gives, which a script writes as
# a literal) and its check that this torch has the style's API, the kept call for the timing phase (and its
# bandwidth-size regime), the error's own words the record keeps, and what the runner asks or sets (Triton's
# autotuning store, the interpreter's rewritten kernels) before it runs the program
OUTSIDE_MODULES = ("harness.cell.runner", "harness.bundle", "harness.cell.bandwidth", "harness.cell.autotuners")
# a cell of a path its script runs (harness/cell/scripted.py) runs none of the harness's styles, model or paths: only
# the runner that loads the script's program and observes it (the comparison, the case's own code marked, the
# launches counted, the verdict), and the writer that wrote it
OBSERVERS = (
    "harness.cell.scripted", "harness.cell.context", "harness.cell.program", "harness.cell.verdict",
    "harness.kernel.compare", "harness.kernel.casecheck", "harness.kernel.launches", "harness.cell.timing",
    "harness.script", "harness.sources", "harness.case", "harness.spec", "harness.kernel.interpreter",
    "harness.kernel.compat",
)
BUILDERS = ("harness.kernel.styles", "harness.kernel.wrappers", "harness.kernel.decorators", "harness.kernel.model",
            "harness.kernel.gradients", "harness.cell.paths")  # fmt: skip
WRITERS = {f"harness.kernel.model.{name}" for name in ("model_source", "reference_source", "literal", "parameters",
                                                       "identifier")}  # text the writer and the builder share
OUTSIDE = {
    "harness.cell.program.program",
    "harness.cell.program.program_digest",
    "harness.cell.program.case_imports",
    "harness.cell.program.style_roots",
    "harness.kernel.styles.build_style",
    "harness.kernel.styles.applies",
    "harness.kernel.styles.as_shipped",  # the record's words for how the op is shipped
    "harness.kernel.styles.is_library_op",
    "harness.kernel.styles.wrapped_as",
    "harness.kernel.styles.library_op_name",
    "harness.cell.scripted.cell_program",
    "harness.cell.scripted.readable",
    "harness.kernel.styles.op_name",
    "harness.kernel.styles.missing_api",
    "harness.kernel.compat.store_autotuning",
    "harness.kernel.compat.forget_interpreted_kernels",
    "harness.spec.triton_interpreted",
    "harness.cell.timing.keep",
    "harness.cell.paths.training.compare_gradient",  # a gradient's comparison, as the cell's path compares it
    "harness.cell.paths.training.training_step",  # the training step the timing phase times
    # an AOTInductor package shared by the cells that compile the very same program, and the fresh torch-only process
    # that loads one as a deployment does
    "harness.cell.paths.export.shared_package",
    "harness.cell.paths.export._shared_stem",
    "harness.cell.paths.export._names",
    "harness.cell.paths.export.program_digest",
    "harness.cell.paths.export.standalone_outputs",
    "harness.cell.standalone.run_standalone",
    "harness.cell.standalone.standalone_address",
    "harness.cell.timing.timer_for",
    "harness.cell.timing.untimed",
    "harness.cell.timing.faulted_at_size",
    "harness.spec.Timing",
    "harness.spec.CellSpec",
    "harness.spec.CellId",
    "harness.spec.Outcome",
    "harness.spec.own_words",
    "harness.kernel.interpreter.interpreter_fault",
}
STYLES = [style for style in KNOWN_STYLES if style != AS_SHIPPED]
# every path once, the styles taken in turn, so that every style runs too
COVER = [(style, path) for style, path in zip(itertools.cycle(STYLES), PATHS, strict=False)]
COVER += [(style, "eager") for style in STYLES[len(PATHS) :]]
# what the runner runs to write a script's program, where it finds it cannot run one (harness/cell/scripted.py)
WRITING = ("harness.script.", "harness.cell.scripted.", "harness.sources.", "harness.case.load_case",
           "harness.kernel.compare.dtype_name")  # fmt: skip
SHIPPED = [("mul_add_function", "train_compile"), ("mul_add_library_op", "compile"), ("mul_add_module", "train_eager"),
           ("mul_add_library_op", "opcheck"), ("mul_add_function", "vmap")]
# every style on the eager paths; each other path its script runs with two styles, the styles taken in turn
EAGER = ("eager", "cpu_fallback")
LIBRARY = ("triton_op", "custom_op", AS_SHIPPED)
OTHERS = sorted(RUN_BY_SCRIPT - set(EAGER))


def scripted_on(style: str, path: str) -> bool:
    """Whether the cell of ``style`` on ``path`` runs its script: opcheck checks torch.library ops (a launcher's or
    the control's cell is a skip), and the shipped fixture declares no flop formula (its flop_counter cell too)."""
    if path == "opcheck":
        return KNOWN_STYLES[style][1] in LIBRARY
    return (style, path) != (AS_SHIPPED, "flop_counter")


TURNS = itertools.cycle(KNOWN_STYLES)
SCRIPTED = [(style, path) for path in EAGER for style in KNOWN_STYLES]
SCRIPTED += [(next(s for s in TURNS if scripted_on(s, path)), path) for path in OTHERS for _ in range(2)]


def top_level(code: CodeType) -> str | None:
    """``module.name`` of the top-level definition of the harness that holds ``code``, None outside the harness."""
    file = Path(code.co_filename)
    if not file.is_relative_to(HARNESS):
        return None
    module = ".".join(file.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
    for start, end, name in definitions(module):
        if start <= code.co_firstlineno <= end:
            return f"{module}.{name}"
    return f"{module}.<module>"


@functools.cache
def definitions(module: str) -> list[tuple[int, int, str]]:
    """(first line, decorators included; last line; name) of each top-level function and class of ``module``."""
    nodes = ast.parse(inspect.getsource(sys.modules[module])).body
    return [
        (min([node.lineno, *(one.lineno for one in node.decorator_list)]), node.end_lineno or node.lineno, node.name)
        for node in nodes
        if isinstance(node, ast.FunctionDef | ast.ClassDef)
    ]


def lacking(ran: set[str], code: Bundle) -> list[str]:
    """What the cell ran of the harness that its program's bundle does not hold, observation from outside aside."""
    outside = {name for name in ran if name.startswith(OUTSIDE_MODULES) or name in OUTSIDE}
    return sorted(ran - {item.qualified for item in code.items} - outside)


def executed(spec: CellSpec, tmp_path: Path) -> tuple[set[str], Record]:
    """The harness definitions the cell ran, and its record."""
    ran, _, record = traced(spec, tmp_path)
    return ran, record


def traced(spec: CellSpec, tmp_path: Path) -> tuple[set[str], set[str], Record]:
    """The harness definitions the cell ran, the functions it ran of a program it loaded, and its record."""
    codes: set[CodeType] = set()

    def profile(frame, event, arg):
        if event == "call":
            codes.add(frame.f_code)

    case = load_case(spec.module, spec.case)
    sys.setprofile(profile)
    try:
        outcome = run_cell(case, spec, tmp_path, {}, "cpu")
    finally:
        sys.setprofile(None)
    names = {name for name in map(top_level, codes) if name}
    loaded = {code.co_name for code in codes if Path(code.co_filename) == tmp_path / f"{spec.id}.py"}
    return names, loaded, Record.of(spec, outcome)


@pytest.mark.parametrize(("style", "path"), COVER, ids=[f"{style}-{path}" for style, path in COVER])
def test_the_cell_runs_only_the_program_its_script_holds(style: str, path: str, tmp_path: Path):
    spec = cell_spec("add", style, path)
    ran, record = executed(spec, tmp_path)
    env = {"device": "cpu", "torch": "t", "triton": "x"}
    script = script_source(record, env, MATRIX.tolerances)  # the short script: the case's own code, no harness
    assert "def make_inputs(" in script and "import harness" not in script and "from harness" not in script
    if path in RUN_BY_SCRIPT:
        on_cpu = {**env, "paths": {path: {"device": "cpu"}}}  # the device the cell ran on (a CUDA path on CPU)
        assert_runs_its_script(ran, record, script_source(record, on_cpu, MATRIX.tolerances))
        return
    code = program(style, path, case_imports(spec.module))
    missing = lacking(ran, code)
    assert not missing, f"{record.id} ({record.status}) ran harness code its script lacks: {missing}"
    assert record.measurements.program == code.digest()
    assert not any(item.source in script for item in code.items if item.module.startswith("harness.")), record.id


@pytest.mark.parametrize(("style", "path"), SCRIPTED, ids=[f"{style}-{path}" for style, path in SCRIPTED])
def test_a_cell_of_a_path_its_script_runs_runs_that_script(style, path, tmp_path: Path, monkeypatch, interpreted):
    """It runs the script's program: none of the harness's style, model or path code, the case's own functions from
    the program's file, the verdict, stage, error and calls the harness's own path gives that cell."""
    module, case = ("tests.fixtures.shipped_module", "shipped_module") if style == AS_SHIPPED else ("cases.add", "add")
    interpreted(module)
    spec = cell_spec(case, style, path, module=module)
    ran, loaded, record = traced(spec, tmp_path)
    env = {"device": "cpu", "torch": "t", "triton": "x", "triton_interpret": True, "paths": {path: {"device": "cpu"}}}
    script = script_source(record, env, MATRIX.tolerances)
    assert_runs_its_script(ran, record, script, interpreted=True)
    own = {"main", "forward"} | (set() if style in (AS_SHIPPED, "control") else {"add_kernel"})
    if record.status != "pass":  # wrap_triton refuses a heuristics-over-autotune kernel: no launch runs
        own -= {"add_kernel"}
    if record.stage == "trace":  # ... as Dynamo traces the forward, which never runs then
        own -= {"forward"}
    assert own <= loaded, (record.id, sorted(loaded))  # the case's launch and kernel too, from the program's file
    monkeypatch.setattr(scripted, "RUN_BY_SCRIPT", frozenset())  # the same cell through harness/cell/paths/
    _, _, harness_run = traced(spec, tmp_path)  # under the same profiler (Dynamo's tracing meets it too)
    assert verdict(record) == verdict(harness_run)
    if harness_run.measurements.calls is not None:  # a path that compares its calls' outputs (not each item's)
        assert record.measurements.calls == harness_run.measurements.calls


def verdict(record: Record) -> tuple:
    """Status, stage and error, the op's own name and Dynamo's frames of the user's code left out (the script
    registers the op as the case's, in ``mylib``, and calls it from its own text; the harness names the op for the
    case and style, and calls it through its own functions)."""
    error = (record.error or "").partition("from user code:")[0]
    return record.status, record.stage, re.sub(r"\b(harness|mylib)(\.|::)\w+", "OP", error)


@pytest.fixture
def interpreted():
    """Triton's CPU interpreter for the test, its kernels and a case module's (``interpreted(module)``) defined under
    it, so that both ways of running a cell run them; the module as it was again after."""
    reloaded = []

    def under_interpreter(module: str) -> None:
        os.environ["TRITON_INTERPRET"] = "1"
        importlib.reload(importlib.import_module(module))
        reloaded.append(module)

    yield under_interpreter
    os.environ.pop("TRITON_INTERPRET", None)
    for module in reloaded:
        importlib.reload(importlib.import_module(module))


def assert_runs_its_script(ran: set[str], record: Record, script: str, interpreted: bool = False) -> None:
    """The cell ran the program its script holds, and of the harness only what loads and observes it."""
    builders = sorted(name for name in ran if name.startswith(BUILDERS) and name not in OUTSIDE | WRITERS)
    assert not builders, f"{record.id} ({record.status}) ran the harness's own style, model or path: {builders}"
    others = sorted(name for name in ran if not name.startswith((*OBSERVERS, *OUTSIDE_MODULES, *BUILDERS)))
    assert not (set(others) - OUTSIDE), f"{record.id} ran harness code outside its observation: {others}"
    case = load_case(str(record.module), record.case)
    drawn = record.measurements.example
    example = (drawn["size"], drawn["seed"]) if drawn else None
    on_cpu_kernel = not interpreted  # the cell ran on CPU tensors: its op registers its CPU kernel
    written = write_program(str(record.module), case, record.style, record.path, "cpu", MATRIX.tolerances["float32"],
                            example, on_cpu_kernel)  # fmt: skip
    assert written.text.strip() in script, record.id  # the script holds the program, as the cell was given it
    assert record.measurements.program == written.digest(), record.id


@pytest.mark.parametrize(("case", "path"), SHIPPED, ids=[f"{case}-{path}" for case, path in SHIPPED])
def test_an_op_as_shipped_runs_only_the_program_its_script_holds(case: str, path: str, tmp_path: Path):
    spec = cell_spec(case, AS_SHIPPED, path, module="examples.shipped")
    ran, record = executed(spec, tmp_path)
    code = program(AS_SHIPPED, path, case_imports(spec.module))
    if path in RUN_BY_SCRIPT:  # the runner tried to write the script's program, and found only the whole module's
        assert record.measurements.program == code.digest() and "harness.script.writer.write_program" in ran
        ran = {name for name in ran if not name.startswith(WRITING)}
    missing = lacking(ran, code)
    assert not missing, f"{record.id} ({record.status}) ran harness code its script lacks: {missing}"
    assert record.measurements.program == code.digest()


def test_every_style_and_path_is_written_once():
    """Each style's and path's functions are the harness's own (no second definition for scripts): the bundle of
    every style x path holds the very functions the registries run."""
    for style, path in itertools.product(KNOWN_STYLES, PATHS):
        code = program(style, path, [("harness.case", "Case")])
        assert PATHS[path].__name__ in code.names()
        assert code.names()[PATHS[path].__name__] == f"{PATHS[path].__module__}.{PATHS[path].__name__}"


def test_a_definition_that_imports_the_harness_inside_itself_is_refused(tmp_path: Path, monkeypatch):
    module = tmp_path / "harness_bundle_probe.py"
    module.write_text("def probe():\n    from harness.spec import Status\n    return Status\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import harness_bundle_probe

    monkeypatch.setattr(harness_bundle_probe, "__name__", "harness_bundle_probe")
    with pytest.raises(BundleError, match="imports the harness inside itself"):
        bundle([harness_bundle_probe.probe])


def test_definitions_read_as_they_are_defined_come_first():
    code: Bundle = bundle([("harness.spec", "STATUS_TABLE")])
    order = [item.name for item in code.items]
    assert order.index("Status") < order.index("STATUS_TABLE") and order.index("StatusRule") < order.index(
        "STATUS_TABLE"
    )


def test_names_bound_together_are_bundled_once(tmp_path: Path, monkeypatch):
    module = tmp_path / "harness_bundle_pair.py"
    module.write_text("LOW, HIGH = 1, 2\n\n\ndef span():\n    return HIGH - LOW\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import harness_bundle_pair

    code = bundle([harness_bundle_pair.span])
    namespace: dict = {}
    exec(code.text(), namespace)
    assert namespace["span"]() == 1 and code.text().count("LOW, HIGH = 1, 2") == 1


@pytest.mark.skipif(importlib.util.find_spec("liger_kernel") is None, reason="the liger extra is not installed")
def test_a_half_precision_gradient_as_close_as_the_reference_is_noted_alike(tmp_path: Path, monkeypatch):
    """bfloat16 RMSNorm's control, compiled and trained: Inductor's fused gradient is off the eager bfloat16
    reference by more than the tolerance, but no further from float64 than the reference: a note, not wrong, in the
    cell that runs its script's program and in the harness's own path."""
    bfloat16 = Tolerance(1e-2, 1.6e-2)  # matrix.toml's
    spec = dataclasses.replace(cell_spec("liger_rms_norm", "control", "train_compile"), tolerance=bfloat16)
    case = load_case(spec.module, spec.case)
    script = run_cell(case, spec, tmp_path, {}, "cpu")
    monkeypatch.setattr(scripted, "RUN_BY_SCRIPT", frozenset())
    harness_run = run_cell(case, spec, tmp_path, {}, "cpu")
    assert script.measurements.program != harness_run.measurements.program  # the two ways of running it
    assert script.status == harness_run.status == "pass", (script.error, harness_run.error)
    notes = script.measurements.as_close_as_reference
    assert notes and set(notes) == set(harness_run.measurements.as_close_as_reference or {}), notes
