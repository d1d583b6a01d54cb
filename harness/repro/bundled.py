"""The long repro script, for a cell the short one cannot be written for (harness/repro/script.py): the cell's
program as a file. The harness's functions the cell ran (its style's and path's,
and everything they use: harness/cell/program.py) are copied in as text, then the case's own module, the style
built by the same call the cell's build makes, and a main that runs the path and judges the verdict as the cell
did, raising the cell's failure while it is there (again, for a cell whose attempts differed) and printing
"no failure" once it is gone. It needs no harness installed."""

from __future__ import annotations

import ast
import importlib
import inspect
from typing import Any

from harness.bundle import Bundle, from_harness
from harness.case import load_case
from harness.cell.paths import PATHS
from harness.cell.program import case_imports, program, style_call
from harness.kernel.compare import dtype_name
from harness.kernel.interpreter import once_each_bench
from harness.kernel.styles import AS_SHIPPED, KNOWN_STYLES
from harness.records.record import Record
from harness.spec import Status

MARKER = ": a reproducer written by triton-torch-matrix."  # ends every script's first line: the harness's own
REPEAT_FLAKY = 5  # how often a script runs a cell whose attempts differed (each after torch._dynamo.reset())
STYLE_MODULES = (
    "harness.kernel.decorators",
    "harness.kernel.wrappers",
    "harness.kernel.gradients",
    "harness.kernel.styles",
)
PATH_MODULES = ("harness.cell.paths.",)
INTERPRETER = 'os.environ["TRITON_INTERPRET"] = "1"  # measured in Triton\'s CPU interpreter: set before any kernel\n'
INTERPRETER_BENCH = """
# ---- Triton's interpreter has no device to benchmark autotune configs on (Triton's benchmark asks the device's
# driver: "0 active drivers"): every autotuner without a benchmark of its own runs each config once and keeps the
# first, as the cell's did
from triton.runtime.autotuner import Autotuner


{source}
Autotuner.do_bench = property(lambda self: self._do_bench or once_each_bench)
"""
MAIN = '''

def run_cell():
    """The cell's program: the style built above, the path run on it, the verdict judged (raised unless pass)."""
    cell = Cell(case=CASE, style=STYLE, device=DEVICE, tolerance=Tolerance(atol=ATOL, rtol=RTOL),
                workdir=Path(tempfile.mkdtemp()), example=EXAMPLE, wrapped=WRAPPED)
    check(cell, PATH)
    return cell


if __name__ == "__main__":
    try:
        for attempt in range(ATTEMPTS):  # more than one: the cell's attempts differed; each runs afresh
            torch._dynamo.reset()
            run_cell()
    finally:  # a GPU fault left behind surfaces here, as at the end of a cell
        if torch.cuda.is_initialized():
            torch.cuda.synchronize()
    print("no failure: CELL passes here")
'''


def script_device(record: Record, env: dict[str, Any]) -> str:
    """The device a cell's script runs on: the CPU under Triton's interpreter, else the one the run's matrix gave
    the path (by default the CPU for a ``cpu_`` path, CUDA for the rest)."""
    entry = (env.get("paths") or {}).get(record.path)
    declared = entry.get("device") if isinstance(entry, dict) else None
    interpreted = bool(env.get("triton_interpret"))
    return "cpu" if interpreted else declared or ("cpu" if record.path.startswith("cpu_") else "cuda")


def bundled_source(
    record: Record, env: dict[str, Any], tolerances: dict[str, Any], also: list[str] | None = None
) -> str:
    """The script for one record (``record.module`` names the case's module); ``also``: the other cells that failed
    the same way, listed in its docstring."""
    module = str(record.module)
    case = load_case(module, record.case)
    tolerance = tolerances[dtype_name(case.dtype)]
    example = record.measurements.example
    interpreted = bool(env.get("triton_interpret"))
    device = script_device(record, env)
    code = program(record.style, record.path, case_imports(module))
    constants = [
        f"STYLE, DEVICE = {record.style!r}, {device!r}",
        f"EXAMPLE = {(example['size'], example['seed']) if example else None!r}  # (size, seed) the cell failed on;"
        " None: the case's first size, seed 0",
        f"ATOL, RTOL = {tolerance.atol!r}, {tolerance.rtol!r}  # the tolerance for {dtype_name(case.dtype)}",
        f"ATTEMPTS = {REPEAT_FLAKY if record.flaky else 1}",
        f"PATH = {PATHS[record.path].__name__}",
    ]
    parts = [
        _docstring(record, env, also, code.digest()),
        "from __future__ import annotations\n",
        "import os\n" + (INTERPRETER if interpreted else ""),  # before torch and triton are imported
        code.import_lines() + "\n",
        INTERPRETER_BENCH.format(source=inspect.getsource(once_each_bench)) if interpreted else "",
        "\n# ---- what the program uses: the harness's own code, as the cell ran it ----\n",
        code.text(_support(code)),
        f"\n\n# ---- the case: {module} (its kernel, launch and PyTorch reference) ----\n",
        case_code(module, record.case),
        f"\n# ---- the style: {record.style} ({style_words(record.style)}) ----\n",
        code.text(STYLE_MODULES),
        f"\n\nWRAPPED = {style_call(case, record.style)}  # built once: a library op registers once per process",
        f"\n\n# ---- the path: {record.path} ----\n",
        code.text(PATH_MODULES),
        "\n\n" + "\n".join(constants),
        MAIN.replace("CELL", record.id),
    ]
    return "\n".join(part for part in parts if part).replace("\n\n\n\n", "\n\n\n")


def _support(code: Bundle) -> tuple[str, ...]:
    """The modules of the bundle's definitions that are neither the style's nor the path's."""
    own = STYLE_MODULES + PATH_MODULES
    return tuple(sorted({item.module for item in code.items if not item.module.startswith(own)}))


def case_code(module_name: str, case_id: str) -> str:
    """The case module's source, its harness and ``__future__`` imports left out (the script defines those names
    above), then ``CASE`` bound to the case."""
    module = importlib.import_module(module_name)
    source = inspect.getsource(module)
    lines = source.splitlines()
    dropped: set[int] = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom) and (from_harness(node) or node.module == "__future__"):
            dropped.update(range(node.lineno - 1, node.end_lineno or node.lineno))
    kept = "\n".join(line for index, line in enumerate(lines) if index not in dropped).strip("\n")
    if getattr(module, "CASE", None) is None or module.CASE.id != case_id:
        kept += f"\n\nCASE = next(case for case in CASES if case.id == {case_id!r})"
    return kept + "\n"


def _docstring(record: Record, env: dict[str, Any], also: list[str] | None, digest: str) -> str:
    more = f"\nThe same failure in {len(also)} more cell(s): {', '.join(also)}.\n" if also else ""
    status = "" if record.status == Status.PASS else f"The harness recorded: {record.summary}\n"
    return f'''"""{record.id}{MARKER}

{status}Measured on {env.get("device")}, torch {env.get("torch")}, triton {env.get("triton")}.{more}
Run it with python: it raises while the failure is there (exit 1) and prints "no failure" once it is fixed.
It needs torch, triton and the case's own imports. It is the cell's program: the harness's functions the cell
ran are copied in as they are (first), then the case, the style, the path, and the main the cell ran them by.
Program digest (sha256 of the harness code copied in, as the cell's record holds it): {digest}
"""
'''


def style_words(style: str) -> str:
    decorator, wrapper = KNOWN_STYLES[style]
    if wrapper == AS_SHIPPED:
        return "the op as its library ships it"
    if decorator is None:
        return "the pure-PyTorch reference"
    return f"@triton.{decorator.replace('_', ' over @triton.')} kernel in a {wrapper}"
