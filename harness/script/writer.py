"""A cell's program as its short script writes it: the imports, the case's own code (harness/script/usercode.py), the
wrapping style written for this case (stylecode.py), the path's constants, few calls and checks (pathcode.py) and its
``main``. The repro script is this text between its docstring and its ``if __name__ == "__main__":`` ending; a cell
of a path in ``RUN_BY_SCRIPT`` runs the same text (harness/cell/scripted.py)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from typing import Any

from harness.case import Case
from harness.kernel.compare import dtype_name
from harness.kernel.styles import AS_SHIPPED, CONTROL, KNOWN_STYLES, is_library_op, library_op_name
from harness.script.names import apart, renamed
from harness.script.pathcode import Checks, path_code
from harness.script.stylecode import (
    NAMESPACE,
    fields_needed,
    model_code,
    reference_code,
    shipped_extra,
    style_code,
)
from harness.script.usercode import user_code
from harness.spec import Tolerance

# the paths whose cells run their script's program
RUN_BY_SCRIPT = frozenset(
    {"eager", "cpu_fallback", "compile", "fullgraph", "dynamic", "cpu_compile", "cudagraphs", "vmap", "subclass_eager",
     "subclass_compile", "opcheck", "flop_counter", "train_eager", "train_compile",
     "export_strict", "export_nonstrict", "export_dynamic_strict", "export_dynamic_nonstrict", "export_saveload",
     "aoti_strict", "aoti_nonstrict", "aoti_standalone", "aoti_dynamic"}
)  # fmt: skip
CONSTANTS_LINE = "DEVICE, SIZE, SEED = "  # the line that names the inputs the program runs on
# that line, its names renamed apart from the case's (``SIZE_``) where the case's code defines them too
CONSTANTS = re.compile(r"DEVICE_*, SIZE_*, SEED_* = ")


@dataclass(frozen=True)
class Program:
    """The program's text, the names it gives what a runner looks at from outside (``main``, ``check``, the case's
    input maker, the reference's class, a compile path's backend and its graph check), whether an autotuner may run
    in it, and the size and seed it names."""

    text: str
    names: dict[str, str] = field(default_factory=dict)
    autotunes: bool = False
    size: int = 0
    seed: int = 0
    namespace: str = NAMESPACE  # where its op registers
    case_code: str = ""  # the case's own code it holds
    whole_module: bool = False  # that code is its whole module with a stand-in ``Case`` (usercode.py)
    op_key: str = ""  # a digest of the text that defines its op: the case's code and the style's

    def in_namespace(self, namespace: str) -> Program:
        """The same program, its op registered in ``namespace`` (the case's own code as it is)."""
        before, case, after = self.text.partition(self.case_code)
        text = before + case + _in_namespace(after, namespace, self.namespace)
        return replace(self, text=text, namespace=namespace)

    def digest(self) -> str:
        """sha256 of the text as its script writes it (its op in ``NAMESPACE``), the line naming its size and seed
        left out (a cell runs it at several)."""
        text = _in_namespace(self.text, NAMESPACE, self.namespace)
        kept = [line for line in text.splitlines() if not CONSTANTS.match(line)]
        return hashlib.sha256("\n".join(kept).encode()).hexdigest()


def write_program(
    module: str,
    case: Case,
    style: str,
    path: str,
    device: str,
    tolerance: Tolerance,
    example: tuple[int, int] | None = None,
    on_cpu_kernel: bool = False,
) -> Program:
    """The program of ``case`` (of module ``module``) in ``style`` on ``path``, on ``device`` at ``example`` (size,
    seed; by default the case's first size and seed 0), outputs compared within ``tolerance``. ``on_cpu_kernel``: the
    op meets CPU tensors and registers its CPU kernel. Its op registers in ``NAMESPACE`` (``Program.in_namespace``
    moves it: a cell process that runs many programs gives each its own). ``NotShort`` where it has no short form."""
    code = user_code(module, case, fields_needed(case, style, path))
    names = code.names
    built = style_code(case, style, path, names, on_cpu_kernel, code.defined)
    decorator, wrapper = KNOWN_STYLES[style]
    shipped = wrapper == AS_SHIPPED
    trainable = not case.mutates or wrapper in ("launcher", CONTROL)
    size, seed = example or (case.sizes[0], 0)
    checks = replace(_checks(case, style, names, built.library), traced=size)
    found = path_code(case, path, checks, built.op, trainable)
    extra = shipped_extra(case, names) if shipped and case.shipped_args else []
    if shipped and "shipped_module" in names:
        model_lines, build = [], f"{names['shipped_module']}()"
    elif wrapper == CONTROL:  # the reference itself, as the cell builds it
        model_lines, build = reference_code(case, names, "Model")
    else:
        model_lines, build = model_code(case, built.call, names, extra)
    reference_lines, reference_build = reference_code(case, names)
    main = [
        "torch.manual_seed(0)",
        f"model = {build}.to(DEVICE)",
        *(["torch.manual_seed(0)  # the same parameters"] if checks.parameters else []),
        f"reference_model = {reference_build}.to(DEVICE)",
        *([f"inputs = {names['make_inputs']}(SIZE, DEVICE, SEED)"] if "inputs" in "\n".join(found.main) else []),
        *found.main,
        *([f"return {found.returns}"] if found.returns else []),
    ]
    constants = [
        f"{CONSTANTS_LINE}{device!r}, {size}, {seed}  # the inputs the cell ran",
        f"ATOL, RTOL = {tolerance.atol!r}, {tolerance.rtol!r}  # the tolerance for {dtype_name(case.dtype)}",
    ]
    imports = {"import torch", *built.imports, *found.imports}
    if decorator not in (None, "jit"):
        imports.add("import triton")
    own_lines = {line.strip() for line in code.text.splitlines()}
    own = [
        f"# ---- the style: {style} ----\n" + "\n".join([*built.lines, "", "", *model_lines, "", "", *reference_lines]),
        f"# ---- the path: {path} ----\n" + "\n".join(constants),
        *found.helpers,
        "def main():\n" + "\n".join(f"    {line}" if line else "" for line in main),
    ]
    renames = apart(own, code.defined)  # the style's and path's names apart from the case's
    own = [renamed(part, renames) if renames else part for part in own]
    op_key = hashlib.sha256(f"{code.text}\n{own[0]}".encode()).hexdigest()[:8]
    parts = [
        "\n".join(sorted(line for line in imports if line not in own_lines)) + "\n",
        f"# ---- the case's own code ({module}) ----\n\n{code.text}",
        *own,
    ]
    text = "\n\n\n".join(part.strip("\n") for part in parts if part.strip()) + "\n"
    hooks = {"main": "main", "check": "check", "reference": reference_build.partition("(")[0], "size": "SIZE",
             "seed": "SEED", "inductor": "inductor", "held": "held", "flops": "counted_as_declared",
             "export": "export", "save": "save", "package": "aoti_compile_and_package",
             "standalone": "in_fresh_process", "tempfile": "tempfile"}  # fmt: skip
    hooks = {role: renames.get(name, name) for role, name in hooks.items()}
    hooks["make_inputs"] = names["make_inputs"]
    autotunes = shipped or "autotune" in (decorator or "") or "autotune" in code.text
    return Program(text, hooks, autotunes, size, seed, NAMESPACE, code.text, code.whole, op_key)


def _in_namespace(text: str, namespace: str, was: str = NAMESPACE) -> str:
    """``text`` with the style's op registered in ``namespace`` instead of ``was``."""
    if namespace == was:
        return text
    for written in ('"{}::', "torch.ops.{}.", "'{}.'"):  # its registration, its calls, a graph's name for it
        text = text.replace(written.format(was), written.format(namespace))
    return text


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
