"""One repro script per cell, short enough to paste into a bug report: the case's own code (its kernel, launch,
reference and inputs, as its module wrote them: harness/repro/usercode.py), the wrapping style written for this
case (stylecode.py), the path's few calls and the checks of the cell's verdict in public API (pathcode.py). It
imports no harness and copies none of it in; it raises the failure while it is there (exit 1) and prints "no
failure" once it is gone. A cell whose case module cannot be cut down gets the long script (bundled.py)."""

from __future__ import annotations

import textwrap
from dataclasses import replace
from typing import Any

from harness.case import Case, load_case
from harness.kernel.compare import dtype_name
from harness.kernel.styles import AS_SHIPPED, CONTROL, KNOWN_STYLES, is_library_op, library_op_name
from harness.records.record import Record
from harness.repro.bundled import INTERPRETER, INTERPRETER_BENCH, MARKER, REPEAT_FLAKY, bundled_source, script_device
from harness.repro.names import kept_apart
from harness.repro.pathcode import Checks, path_code
from harness.repro.stylecode import (
    NAMESPACE,
    fields_needed,
    model_code,
    reference_code,
    shipped_extra,
    style_code,
)
from harness.repro.usercode import user_code
from harness.spec import Status

__all__ = ["MARKER", "script_source"]

RECORDED_CHARS, DOC_WIDTH = 200, 116  # the recorded failure's line in the docstring: at most, and wrapped at


def script_source(
    record: Record, env: dict[str, Any], tolerances: dict[str, Any], also: list[str] | None = None
) -> str:
    """The script of one record (``record.module`` names the case's module); ``also``: the other cells that failed
    the same way (same style and path), listed in its docstring."""
    try:
        return short_source(record, env, tolerances, also)
    except Exception:  # NotShort, or a case the writer cannot cut down: the long script runs the same program
        return bundled_source(record, env, tolerances, also)


def short_source(record: Record, env: dict[str, Any], tolerances: dict[str, Any], also: list[str] | None) -> str:
    """The short script, or ``NotShort`` where the case module or style cannot be written that way."""
    module = str(record.module)
    case = load_case(module, record.case)
    interpreted = bool(env.get("triton_interpret"))
    code = user_code(module, case, fields_needed(case, record.style, record.path))
    names = code.names
    device = script_device(record, env)
    style = style_code(case, record.style, record.path, names, device == "cpu" and not interpreted, code.defined)
    decorator, wrapper = KNOWN_STYLES[record.style]
    shipped = wrapper == AS_SHIPPED
    trainable = not case.mutates or wrapper in ("launcher", CONTROL)
    example = record.measurements.example
    size, seed = (example["size"], example["seed"]) if example else (case.sizes[0], 0)
    checks = replace(_checks(case, record.style, names, style.library), traced=size)
    path = path_code(case, record.path, checks, style.op, trainable)
    extra = shipped_extra(case, names) if shipped and case.shipped_args else []
    if shipped and "shipped_module" in names:
        model_lines, build = [], f"{names['shipped_module']}()"
    elif wrapper == CONTROL:  # the reference itself, as the cell builds it
        model_lines, build = reference_code(case, names, "Model")
    else:
        model_lines, build = model_code(case, style.call, names, extra)
    reference_lines, reference_build = reference_code(case, names)
    tolerance = tolerances[dtype_name(case.dtype)]
    main = [
        "torch.manual_seed(0)",
        f"model = {build}.to(DEVICE)",
        *(["torch.manual_seed(0)  # the same parameters"] if checks.parameters else []),
        f"reference_model = {reference_build}.to(DEVICE)",
        *([f"inputs = {names['make_inputs']}(SIZE, DEVICE, SEED)"] if "inputs" in "\n".join(path.main) else []),
        *path.main,
    ]
    constants = [
        f"DEVICE, SIZE, SEED = {device!r}, {size}, {seed}  # the inputs the cell ran",
        f"ATOL, RTOL = {tolerance.atol!r}, {tolerance.rtol!r}  # the tolerance for {dtype_name(case.dtype)}",
    ]
    imports = {"import torch", *style.imports, *path.imports}
    if decorator not in (None, "jit"):
        imports.add("import triton")
    own = {line.strip() for line in code.text.splitlines()}
    scripts_own = kept_apart(  # the style's and path's code, its names apart from the case's
        [
            f"# ---- the style: {record.style} ----\n"
            + "\n".join([*style.lines, "", "", *model_lines, "", "", *reference_lines]),
            f"# ---- the path: {record.path} ----\n" + "\n".join(constants),
            *path.helpers,
            "def main():\n" + "\n".join(f"    {line}" if line else "" for line in main),
            _ending(record),
        ],
        code.defined,
    )
    autotunes = shipped or "autotune" in (decorator or "") or "autotune" in code.text  # an autotuner may run
    parts = [
        _docstring(record, env, also),
        "import os\n" + INTERPRETER if interpreted else "",
        "\n".join(sorted(line for line in imports if line not in own)) + "\n",
        INTERPRETER_BENCH.format(source=_ONCE_EACH) if interpreted and autotunes else "",
        f"# ---- the case's own code ({module}) ----\n\n{code.text}",
        *scripts_own,
    ]
    return "\n\n\n".join(part.strip("\n") for part in parts if part.strip()) + "\n"


_ONCE_EACH = """def once_each_bench(kernel_call, quantiles):  # each config runs once; all tie: the first is kept
    kernel_call()
    return [1.0] * len(quantiles)"""


def _checks(case: Case, style: str, names: dict[str, str], library: str | None) -> Checks:
    """What the script's checks look for, as the cell's verdict does (harness/cell/verdict.py)."""
    wrapper = KNOWN_STYLES[style][1]
    common: dict[str, Any] = {
        "reference": names["reference"],
        "make_inputs": names["make_inputs"],
        "module": names.get("module"),
        "shipped_module": "shipped_module" in names,
        "parameters": "module" in names or "shipped_module" in names,
    }
    if wrapper == CONTROL:
        return Checks(**common)
    common["flops"] = names.get("flops") if case.flops is not None else None
    if wrapper == AS_SHIPPED:
        shipped = case.shipped
        if shipped is None or not is_library_op(shipped):
            return Checks(True, shipped_kernels=True, every_op=True, **common)
        name = str(library_op_name(shipped)).replace("::", ".")
        extra = "".join(f", {one}" for one in shipped_extra(case, names)) if case.shipped_args else ""
        return Checks(True, (f"{name}.",), every_op=True, opcheck_args=f"(*inputs{extra},)", **common)
    prefixes = (f"{NAMESPACE}.",) if library else ()
    return Checks(True, prefixes, backward_kernel=case.backward_kernel is not None, library=NAMESPACE, **common)


def _docstring(record: Record, env: dict[str, Any], also: list[str] | None) -> str:
    recorded = textwrap.fill(f"The harness recorded: {_first_line(record)}", DOC_WIDTH)
    status = "" if record.status == Status.PASS else f"{recorded}\n"
    more = f"The same failure in {len(also)} more cell(s) of this style and path: {', '.join(also)}.\n" if also else ""
    return f'''"""{record.id}{MARKER}
{status}{more}Measured on {env.get("device")}, torch {env.get("torch")}, triton {env.get("triton")}; needs no harness.
Run it: it raises the failure while it is there (exit 1), and prints "no failure" once it is fixed (exit 0)."""'''


def _first_line(record: Record) -> str:
    text = (record.error or record.reason or "").strip()
    line = text.splitlines()[0] if text else str(record.status)
    line = line.replace("\\", "\\\\").replace('"""', "'''")  # as a docstring holds it
    where = f" at {record.stage}" if record.stage else ""
    return f"{record.status}{where}: {textwrap.shorten(line, RECORDED_CHARS, placeholder=' …')}"


def _ending(record: Record) -> str:
    run = ["    main()"]
    sync = "    torch.cuda.synchronize() if torch.cuda.is_initialized() else None  # a GPU fault left behind surfaces"
    if record.flaky:
        run = [
            f"    for attempt in range({REPEAT_FLAKY}):  # the cell's attempts differed: each afresh",
            "        torch._dynamo.reset()",
            "        main()",
        ]
    return "\n".join(['if __name__ == "__main__":', *run, sync, f'    print("no failure: {record.id} passes here")'])
