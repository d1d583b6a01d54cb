"""One repro script, put together: a docstring saying what the harness recorded and where, the imports, the case's
module, the style, the model, the path's ``check()`` and a main that runs it (again, for a cell whose attempts
differed) and prints "no failure" once the failure is gone."""

from __future__ import annotations

from typing import Any

import torch

from harness.case import Case, load_case
from harness.kernel.compare import dtype_name
from harness.kernel.launches import user_kernels
from harness.kernel.model import identifier, library_name, model_source, parameters
from harness.kernel.styles import AS_SHIPPED, CONTROL, KNOWN_STYLES
from harness.records.record import Record
from harness.repro import path as script_path
from harness.repro.style import (
    LIBRARY,
    TRAIN_PATHS,
    case_code,
    decorated_kernel,
    kernels_argument,
    model_code,
    module_global,
    shipped_code,
)
from harness.repro.train import function_code, library_code
from harness.spec import Status

MARKER = ": a reproducer written by triton-torch-matrix."  # ends every script's first line: the harness's own
REPEAT_FLAKY = 5  # how often a script runs a cell whose attempts differed (each after torch._dynamo.reset())
IMPORTS = (
    "import subprocess\nimport sys\nimport tempfile\nimport time\n\n"
    "import torch\nimport torch.utils.flop_counter\nimport triton\n"
)
PATH_IMPORTS = {
    "flop_counter": "from torch.utils.flop_counter import FlopCounterMode\n",
    "subclass_eager": "from torch.testing._internal.two_tensor import TwoTensor\n",
    "subclass_compile": "from torch.testing._internal.two_tensor import TwoTensor\n",
}
GRAPH_IMPORTS = (
    "from functorch.compile import make_boxed_func\nfrom torch._dynamo.backends.common import aot_autograd\n"
)
INTERPRETER = 'os.environ["TRITON_INTERPRET"] = "1"  # measured in Triton\'s CPU interpreter: set before any kernel\n'


def script_source(
    record: Record, env: dict[str, Any], tolerances: dict[str, Any], also: list[str] | None = None
) -> str:
    """The script for one record (``record.module`` names the case's module); ``also``: the other cells that failed
    the same way, listed in its docstring."""
    case = load_case(str(record.module), record.case)
    tolerance = tolerances[dtype_name(case.dtype)]
    example = record.measurements.example or {"size": case.sizes[0], "seed": 0}
    interpreted = bool(env.get("triton_interpret"))
    entry = (env.get("paths") or {}).get(record.path)  # the device the run's matrix gave the path
    declared = entry.get("device") if isinstance(entry, dict) else None
    device = "cpu" if interpreted else declared or ("cpu" if record.path.startswith("cpu_") else "cuda")
    definitions, expression, op = style_code(case, str(record.module), record.style, record.path, interpreted)
    graph_break = record.status == Status.GRAPH_BREAK
    body, extra = _body(record, case, op, graph_break)
    constants = [
        f"DEVICE, SIZE, SEED = {device!r}, {example['size']!r}, {example['seed']!r}  # the input the cell failed on",
        f"ATOL, RTOL = {tolerance.atol!r}, {tolerance.rtol!r}  # the tolerance for {dtype_name(case.dtype)}",
        f"TAKES_GRAD = {_takes_grad(case)!r}  # which arguments are differentiated",
        f"SIZES, OTHER_SIZES = {tuple(case.sizes)!r}, {tuple(case.sizes_around(example['size']))!r}",
    ]
    if record.path in ("export_dynamic_strict", "export_dynamic_nonstrict", "aoti_dynamic"):
        constants += [_dynamic(case)]
    parts = [
        _docstring(record, env, also),
        "import os\n" + (INTERPRETER if interpreted else ""),  # before torch and triton are imported
        IMPORTS + PATH_IMPORTS.get(record.path, "") + (GRAPH_IMPORTS if graph_break else ""),
        f"# ---- the case: {record.module} (its kernel, launch and PyTorch reference) ----\n",
        case_code(str(record.module), record.case),
        f"\n# ---- the style: {record.style} ({_style_words(record.style)}) ----\n",
        definitions,
        "\n\n" + model_code(case, record.style, expression),
        f"\n# ---- the path: {record.path} ----\n",
        "\n".join(constants),
        script_path.HELPERS + extra,
        _spy(case, record) if record.path == "flop_counter" else "",
        "\n\ndef check():\n" + "\n".join(f"    {line}" for line in body) + "\n",
        _main(record),
    ]
    return "\n".join(part for part in parts if part).replace("\n\n\n\n", "\n\n\n")


def style_code(case: Case, module_name: str, style: str, path: str, interpreted: bool) -> tuple[str, str, str]:
    """(the style's definitions, the expression ``forward`` calls, the op a ``torch.library`` check takes)."""
    decorator, wrapper = KNOWN_STYLES[style]
    params = parameters(case)
    args = ", ".join(params)
    name = identifier(f"{case.id}_{style}", "op")
    if wrapper == CONTROL:
        own = module_global(module_name, case.reference)
        return "", own or "CASE.reference", ""
    if wrapper == AS_SHIPPED:
        return shipped_code(case, module_name)
    lines = decorated_kernel(case, str(decorator), interpreted)
    training = path in TRAIN_PATHS
    if wrapper == "launcher":
        lines += ["", "", f"def {name}({args}):"]
        lines += [f"    return CASE.launch(kernel, {args}{kernels_argument(case, '')}, **META)"]
        if not training:
            return "\n".join(lines), name, ""
        return "\n".join([*lines, "", "", function_code(case, name)]), f"{name}_function.apply", ""
    return library_code(case, name, wrapper, training, interpreted, lines)


def _main(record: Record) -> str:
    """Run ``check()`` once, or ``REPEAT_FLAKY`` times, each afresh, for a cell whose attempts differed; then wait for
    the GPU, raised or not (a fault left behind is the run's, as the cell's end-of-cell sync charges it)."""
    if not record.flaky:
        run = "        check()"
    else:
        run = f"        for attempt in range({REPEAT_FLAKY}):  # the cell's attempts differed: run it again, afresh"
        run += "\n            torch._dynamo.reset()\n            check()"
    end = "    finally:  # a GPU fault left behind surfaces here, as at the end of a cell\n        synchronize()"
    return f'\n\nif __name__ == "__main__":\n    try:\n{run}\n{end}\n    print("no failure: {record.id} passes here")\n'


def _docstring(record: Record, env: dict[str, Any], also: list[str] | None) -> str:
    more = f"\nThe same failure in {len(also)} more cell(s): {', '.join(also)}.\n" if also else ""
    return f'''"""{record.id}{MARKER}

The harness recorded: {record.summary}
Measured on {env.get("device")}, torch {env.get("torch")}, triton {env.get("triton")}.{more}
Run it with python: it raises while the failure is there (exit 1) and prints "no failure" once it is fixed.
It needs torch, triton and the case's own imports; no code of the harness is in it.
"""
'''


def _style_words(style: str) -> str:
    decorator, wrapper = KNOWN_STYLES[style]
    if wrapper == AS_SHIPPED:
        return "the op as its library ships it"
    if decorator is None:
        return "the pure-PyTorch reference"
    return f"@triton.{decorator.replace('_', ' over @triton.')} kernel in a {wrapper}"


def _takes_grad(case: Case) -> tuple[bool, ...]:
    inputs = case.make_inputs(case.sizes[0], "cpu", 0)
    return tuple(case.takes_grad(index, value) for index, value in enumerate(inputs))


def _dynamic(case: Case) -> str:
    """``DYNAMIC``: one ``torch.export.Dim`` for the dims the case's size drives (dim 0 of every tensor by default)."""
    low, high = case.bounds
    dims = case.dynamic_dims
    if dims is None:
        inputs = case.make_inputs(case.sizes[0], "cpu", 0)
        dims = tuple((0,) if isinstance(value, torch.Tensor) else () for value in inputs)
    specs = ", ".join("{" + ", ".join(f"{d}: size" for d in one) + "}" if one else "None" for one in dims)
    return f'size = torch.export.Dim("size", min={low}, max={high})\nDYNAMIC = ({specs},)'


def _body(record: Record, case: Case, op: str, graph_break: bool) -> tuple[list[str], str]:
    """``check()``'s lines and the definitions they need; a graph break compiles with a backend keeping the graphs."""
    path = record.path
    options = script_path.COMPILE.get(path, "")
    extra = script_path.STANDALONE if path == "aoti_standalone" else ""
    if path in script_path.OTHER_PATHS:
        body, more = script_path.other(path, case, record.style, op)
        extra += more
    else:
        body = script_path.inference(path)
    if graph_break:
        trained = path == "train_compile"
        aot = "aot_autograd(fw_compiler=keep('forward'), bw_compiler=keep('backward'))"
        backend = aot if trained else "keep('dynamo')"
        options = ", ".join(option for option in (options, f"backend={backend}") if option and "mode=" not in option)
        shipped = case.shipped if record.style == AS_SHIPPED else None
        own = (library_name(shipped) or "").replace("::", ".") if shipped is not None else ""
        extra += script_path.GRAPHS.replace("OWN_OPS", repr((own or f"{LIBRARY}.",)))
        kinds = "'forward', 'backward'" if trained else "'dynamo'"
        body += ["reasons = [r.reason for r in torch._dynamo.explain(build(Model))(*inputs_of()).break_reasons]"]
        launched = user_kernels(list(record.capture.kernels_launched)) if record.style == AS_SHIPPED else []
        if launched and not own:  # each kernel the op as shipped launches must be in a graph
            body += [f"missing = sorted(set({sorted(launched)!r}) - kernels_held({kinds}))", "if missing:",
                     "    raise AssertionError(f'graph break: kernel(s) {missing} ran outside the compiled graph "
                     "({len(reasons)} graph break(s): {reasons[:3]})')"]
        else:
            body += [f"if not holds_kernel({'forward' if trained else 'dynamo'!r}):",
                     "    raise AssertionError(f'graph break: the kernel ran outside the compiled graph "
                     "({len(reasons)} graph break(s): {reasons[:3]})')"]
    options = f", {options}" if options else ""
    return [line.replace("{options}", options) for line in body], extra


def _spy(case: Case, record: Record) -> str:
    """``Spy``: the model around a function that adds up the flops the case declares for each call of the op."""
    shipped = ", *build(CASE.shipped_module).parameters()" if case.shipped_module is not None else ""
    source = (
        "\n\nDECLARED = []\n\n\ndef spy(*args):  # the case's flop formula over the shapes the op is called with\n"
        "    DECLARED.append(CASE.flops(*(tuple(a.shape) if isinstance(a, torch.Tensor) else a for a in args)))\n"
        f"    return CASE.reference(*args{shipped})\n\n\n"
    )
    if case.module is not None:
        return source + "def Spy():\n    return CASE.module(spy)\n"
    return source + model_source("spy", parameters(case), case.mutates_index, name="Spy")
