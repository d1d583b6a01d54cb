"""One repro script per cell, short enough to paste into a bug report: the case's own code (its kernel, launch,
reference and inputs, as its module wrote them: harness/script/usercode.py), the wrapping style written for this
case (stylecode.py), the path's few calls and the checks of the cell's verdict in public API (pathcode.py). It
imports no harness and copies none of it in; it raises the failure while it is there (exit 1) and prints "no
failure" once it is gone. A cell whose case module cannot be cut down gets the long script (bundled.py)."""

from __future__ import annotations

import textwrap
from typing import Any

from harness.case import load_case
from harness.kernel.compare import dtype_name
from harness.records.record import Record
from harness.repro.bundled import INTERPRETER, INTERPRETER_BENCH, MARKER, REPEAT_FLAKY, bundled_source, script_device
from harness.script.writer import write_program
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
    device = script_device(record, env)
    example = record.measurements.example
    program = write_program(
        module,
        case,
        record.style,
        record.path,
        device,
        tolerances[dtype_name(case.dtype)],
        (example["size"], example["seed"]) if example else None,
        on_cpu_kernel=device == "cpu" and not interpreted,
    )
    parts = [
        _docstring(record, env, also),
        "import os\n" + INTERPRETER if interpreted else "",
        INTERPRETER_BENCH.format(source=_ONCE_EACH) if interpreted and program.autotunes else "",
        program.text,
        _ending(record, program.names["main"]),
    ]
    return "\n\n\n".join(part.strip("\n") for part in parts if part.strip()) + "\n"


_ONCE_EACH = """def once_each_bench(kernel_call, quantiles):  # each config runs once; all tie: the first is kept
    kernel_call()
    return [1.0] * len(quantiles)"""


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


def _ending(record: Record, main: str = "main") -> str:
    run = [f"    {main}()"]
    sync = "    torch.cuda.synchronize() if torch.cuda.is_initialized() else None  # a GPU fault left behind surfaces"
    if record.flaky:
        run = [
            f"    for attempt in range({REPEAT_FLAKY}):  # the cell's attempts differed: each afresh",
            "        torch._dynamo.reset()",
            f"        {main}()",
        ]
    return "\n".join(['if __name__ == "__main__":', *run, sync, f'    print("no failure: {record.id} passes here")'])
