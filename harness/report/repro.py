"""Reproducers: a script per distinct failure of a run (``repros/<failure>.py``), that needs only torch and
triton and shows the failure with one ``python`` call; ``python -m harness repro CELL-ID`` writes one for any
other cell on demand. A script inlines the case's module and exactly the harness code the cell ran (the style
and path functions and what they use, found by walking their names), so it fails the way the cell did; it
runs the input the cell failed on (the shrunk one, when hypothesis drew it). Cells fail "the same way" when
their stage, error type and message match once case-specific names and numbers are set aside.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import re
from pathlib import Path
from typing import Any

from harness.errors import InputError
from harness.records.record import Record
from harness.records.results import Results
from harness.report.source_code import bound_names, used_imports, used_names, without_registry
from harness.spec import FAILURES

# The harness modules a cell's code comes from, in the order their definitions are emitted.
SOURCES = (
    "harness.spec",
    "harness.case",
    "harness.kernel.compare",
    "harness.kernel.interpreter",
    "harness.kernel.gradients",
    "harness.kernel.decorators",
    "harness.kernel.wrappers",
    "harness.kernel.styles",
    "harness.cell.context",
    "harness.cell.standalone",
    "harness.cell.paths",
    "harness.cell.paths.common",
    "harness.cell.paths.compilation",
    "harness.cell.paths.export",
    "harness.cell.paths.training",
    "harness.cell.paths.subsystems",
)
BY_VALUE = {"SERVER_SOURCE"}  # emitted as the value computed at import (the standalone server's code, as text)
# defined before the case module, which builds its CASE with them (Case checks its arg_types against ARG_TYPES)
CASE_NAMES = ("Tensor", "OPTIONAL_TENSOR", "ARG_TYPES", "Case", "OpModule")
SPECIFIC = (
    (re.compile(r"harness::\w+"), "harness::OP"),  # an op registered per case and style
    (re.compile(r"0x[0-9a-fA-F]+"), "ADDR"),
    (re.compile(r"\d+(\.\d+)?(e[-+]?\d+)?"), "N"),
)
MAX_NAME = 80
# a cell measured in Triton's interpreter runs there again: set before triton is imported (it reads it per kernel)
INTERPRETER_PRELUDE = 'import os\n\nos.environ["TRITON_INTERPRET"] = "1"  # measured in Triton\'s CPU interpreter\n'


def failure_signature(record: Record) -> str:
    """How a cell failed, with what is specific to its case set aside: status, stage, error type and the
    message's first line with op names, addresses, numbers and the cell's own ids replaced."""
    lines = (record.error or "").strip().splitlines()
    message = lines[0] if lines else ""
    for name in (record.case, record.style, record.path):
        message = re.sub(rf"\b{re.escape(name)}\b", "ID", message)
    for pattern, replacement in SPECIFIC:
        message = pattern.sub(replacement, message)
    return " | ".join(str(part) for part in (record.status, record.stage, record.error_type, message))


def write_repros(
    results: Results, tolerances: dict[str, Any], out_dir: Path, cells: list[str] | None = None
) -> list[Path]:
    """Into ``out_dir`` (emptied of older scripts first): for the ``cells`` named, one script each; else one
    script per distinct failure of ``results``, named after the failure and listing every cell it stands for."""
    records = results.by_id()
    unknown = [cell for cell in cells or [] if cell not in records or not records[cell].module]
    if unknown:
        raise InputError("command line", "CELL", f"no record with a case module for: {', '.join(unknown)}")
    if cells:
        groups = {cell: [records[cell]] for cell in cells}
    else:
        groups = {}
        for record in results.cells:
            if record.status in FAILURES and record.module:
                groups.setdefault(failure_signature(record), []).append(record)
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("*.py"):
        old.unlink()
    written: list[Path] = []
    for key, group in groups.items():
        name = group[0].id if cells else _file_name(key)
        target = out_dir / f"{name}.py"
        for n in range(2, len(groups) + 2):
            if target not in written:
                break
            target = out_dir / f"{name}-{n}.py"
        target.write_text(repro_source(group[0], results.environment, tolerances, [r.id for r in group[1:]]))
        written.append(target)
    return written


def _file_name(signature: str) -> str:
    """A failure signature as a file name: lowercase words joined by '-', at most MAX_NAME characters."""
    words = re.findall(r"[a-z0-9]+", signature.lower().replace("harness::op", "op"))
    name = "-".join(words)[:MAX_NAME].rstrip("-")
    return name or "failure"


def repro_source(record: Record, env: dict[str, Any], tolerances: dict[str, Any], also: list[str] | None = None) -> str:
    """The script for one record (``record.module`` names the case's module); ``also``: the other cells
    that failed the same way, listed in its docstring."""
    from harness.case import load_case
    from harness.kernel.compare import dtype_name

    case = load_case(str(record.module), record.case)
    tolerance = tolerances[dtype_name(case.dtype)]
    example = record.diagnostics.get("example") or {"size": case.sizes[0], "seed": 0}
    interpreted = bool(env.get("triton_interpret"))  # measured in Triton's CPU interpreter: CUDA paths on CPU
    device = "cpu" if record.path.startswith("cpu_") or interpreted else "cuda"
    build, style_functions = _style_call(record.style, case)
    definitions, imports = _harness_code(["Cell", "Tolerance", *style_functions, record.path])
    header = f'''"""Reproducer for {record.id}, written by the compatibility-matrix harness.

Recorded: {record.summary}{_also(also)}
Measured on {env.get("device")}, torch {env.get("torch")}, triton {env.get("triton")},
harness commit {env.get("commit")}.

Run it with python: it raises the failure (exit 1) while the failure is there, and prints
"no failure" once it is fixed. Needs only torch and triton: the kernel's module ({record.module}) and the
harness code the cell ran (style {record.style!r}, path {record.path!r}) are inlined below.
"""
'''
    main = f"""
STYLE, PATH, DEVICE = {record.style!r}, {record.path!r}, {device!r}
SIZE, SEED = {example["size"]!r}, {example["seed"]!r}  # the input the cell failed on


def main() -> None:
    import tempfile

    cell = Cell(
        case=CASE,
        style=STYLE,
        device=DEVICE,
        tolerance=Tolerance(atol={tolerance.atol!r}, rtol={tolerance.rtol!r}),
        workdir=Path(tempfile.mkdtemp()),
    )
    cell.example = (SIZE, SEED)
    torch.manual_seed(0)
    cell.wrapped = {build}
    {record.path}(cell)
    print(f"no failure: {{CASE.id}}-{{STYLE}}-{{PATH}} passes here")


if __name__ == "__main__":
    main()
"""
    case_code = _case_module_code(str(record.module), record.case)
    case_definitions = [code for name, code in definitions if name in CASE_NAMES]
    other_definitions = [code for name, code in definitions if name not in CASE_NAMES]
    body = "\n".join([*(code for _, code in definitions), case_code, main])
    parts = [
        header,
        "from __future__ import annotations\n",
        INTERPRETER_PRELUDE if interpreted else "",
        "\n".join(used_imports(imports, used_names(ast.parse(body)) | {"torch", "triton"})),
        "\n# ---- harness.case: the case's container ----\n",
        "\n\n".join(case_definitions),
        f"\n# ---- {record.module}: the case, inlined ----\n",
        case_code,
        "\n# ---- the harness code the cell ran ----\n",
        "\n\n".join(other_definitions),
        main,
    ]
    return "\n".join(parts).replace("\n\n\n\n", "\n\n\n")


def _also(cells: list[str] | None) -> str:
    return f"\nThe same failure ({len(cells)} more cell(s)): " + ", ".join(cells) + "." if cells else ""


def _style_call(style: str, case: Any) -> tuple[str, list[str]]:
    """The script's expression that builds ``style`` (as ``harness.kernel.styles.build_style`` does, with the functions
    named directly: the decorator stack inside the wrapper, the op as shipped, or the control) and the functions it
    calls."""
    from harness.kernel.styles import AS_SHIPPED, KNOWN_STYLES, as_shipped, control, op_name

    decorator, wrapper = KNOWN_STYLES[style]
    if wrapper == AS_SHIPPED:
        return f"{as_shipped.__name__}(CASE)", [as_shipped.__name__]
    if decorator is None:
        return f"{control.__name__}(CASE)", [control.__name__]
    return f"{wrapper}(CASE, *{decorator}(CASE), {op_name(case, style)!r})", [decorator, wrapper]


Definitions = dict[str, tuple[int, str, set[str], str]]  # name -> (order, source, names it uses, module)


@functools.cache
def _harness_definitions() -> tuple[Definitions, dict[str, frozenset[str]]]:
    """Every top-level definition of the harness modules in ``SOURCES``, and each module's non-harness imports
    (parsed once per process: ``write_repros`` asks for them once per failing cell)."""
    definitions: Definitions = {}
    imports_of: dict[str, frozenset[str]] = {}
    order = 0
    for module_name in SOURCES:
        module = importlib.import_module(module_name)
        source = inspect.getsource(module)
        imports: set[str] = set()
        for node in ast.parse(source).body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                if not (isinstance(node, ast.ImportFrom) and (node.module or "").startswith(("harness", "__future__"))):
                    imports.add(ast.unparse(node))
                continue
            for name in bound_names(node):
                order += 1
                if name in BY_VALUE:
                    definitions[name] = (order, f"{name} = {getattr(module, name)!r}", set(), module_name)
                else:
                    definitions[name] = (order, without_registry(source, node), used_names(node), module_name)
        imports_of[module_name] = frozenset(imports)
    return definitions, imports_of


def _harness_code(roots: list[str]) -> tuple[list[tuple[str, str]], set[str]]:
    """The top-level definitions of the harness modules that ``roots`` need (transitively), in module order,
    and the (non-harness) imports of the modules they come from."""
    definitions, imports_of = _harness_definitions()
    needed: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in needed or name not in definitions:
            continue
        needed.add(name)
        todo.extend(definitions[name][2])
    chosen = sorted(needed, key=lambda name: definitions[name][0])
    code: list[tuple[str, str]] = []
    seen_sources: set[str] = set()
    for name in chosen:
        source = definitions[name][1]
        if source not in seen_sources:  # an assignment binding two names is emitted once
            seen_sources.add(source)
            code.append((name, source))
    imports = set().union(*(imports_of[definitions[name][3]] for name in needed))
    return code, imports | {"from pathlib import Path", "import torch"}


def _case_module_code(module_name: str, case_id: str) -> str:
    """The case module's source without its harness and __future__ imports, then ``CASE`` bound to the case."""
    module = importlib.import_module(module_name)
    source = inspect.getsource(module)
    tree = ast.parse(source)
    lines = source.splitlines()
    dropped: set[int] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(("harness", "__future__")):
            dropped.update(range(node.lineno - 1, (node.end_lineno or node.lineno)))
    kept = "\n".join(line for index, line in enumerate(lines) if index not in dropped)
    if getattr(module, "CASE", None) is None or module.CASE.id != case_id:
        kept += f"\n\nCASE = next(case for case in CASES if case.id == {case_id!r})\n"
    return kept
