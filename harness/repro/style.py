"""A repro script's first half, as a user writes it: the case's own module (its kernel, launch and PyTorch reference),
then the style built the way the README tells a user to build it (the decorators applied to the kernel, the launcher,
``autograd.Function``, ``triton_op`` + ``wrap_triton`` or ``custom_op``), then the model whose ``forward`` calls the op
(the template the harness runs too: harness/kernel/model.py). No harness code is inlined or imported."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
from typing import Any

import torch

from harness.case import OPTIONAL_TENSOR, Case
from harness.kernel.decorators import DECORATORS
from harness.kernel.model import (
    library_name,
    literal,
    model_source,
    op_function_source,
    parameters,
    reference_source,
)
from harness.kernel.styles import AS_SHIPPED, CONTROL, KNOWN_STYLES

LIBRARY = "mylib"  # the namespace a repro registers its op under, as the recipe's examples do
TRAIN_PATHS = ("train_eager", "train_compile")
CASE_STAND_IN = "Case = types.SimpleNamespace  # the harness's case container: here just the case's own fields\n"


def case_code(module_name: str, case_id: str) -> str:
    """The case module's source, its harness import replaced by a plain namespace, then ``CASE`` bound to the case."""
    module = importlib.import_module(module_name)
    source = inspect.getsource(module)
    lines = source.splitlines()
    dropped: set[int] = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(("harness", "__future__")):
            dropped.update(range(node.lineno - 1, node.end_lineno or node.lineno))
    kept = "\n".join(line for index, line in enumerate(lines) if index not in dropped).strip("\n")
    if getattr(module, "CASE", None) is None or module.CASE.id != case_id:
        kept += f"\n\nCASE = next(case for case in CASES if case.id == {case_id!r})"
    return "import types\n\n" + CASE_STAND_IN + "\n" + kept + "\n"


def given(case: Case, name: str) -> bool:
    """Whether the case module gave field ``name`` (so ``CASE.name`` exists in the script's namespace)."""
    default = next(f for f in dataclasses.fields(case) if f.name == name)
    empty = default.default if default.default is not dataclasses.MISSING else default.default_factory()  # type: ignore[misc]
    return getattr(case, name) != empty


def value(case: Case, name: str, fallback: str) -> str:
    """``CASE.name`` where the case gave it, else ``fallback`` (the default's source)."""
    return f"CASE.{name}" if given(case, name) else fallback


def module_global(module_name: str, obj: Any) -> str | None:
    """The case module's own name for ``obj`` (a name its code binds), if it has one."""
    module = importlib.import_module(module_name)
    return next((name for name, bound in vars(module).items() if bound is obj and name.isidentifier()), None)


def annotation(kind: Any) -> str:
    if kind == OPTIONAL_TENSOR:
        return "torch.Tensor | None"
    return "torch.Tensor" if kind is torch.Tensor else kind.__name__


def returns(case: Case) -> str:
    if case.mutates:
        return "None"
    return "torch.Tensor" if case.outputs == 1 else f"tuple[{', '.join(['torch.Tensor'] * case.outputs)}]"


def decorated_kernel(case: Case, decorator: str, interpreted: bool) -> list[str]:
    """``kernel = ...``: the case's kernel under the decorator stack, and ``META``, the constexprs the launch passes."""
    options = [f"key={list(case.key)!r}"]
    options += ["do_bench=wall_clock"] if interpreted else []
    options += ["**CASE.autotune_options"] if case.autotune_options else []
    autotune = f"triton.autotune(configs=CASE.configs, {', '.join(options)})"
    heuristics = value(case, "heuristics", "{}")
    if case.config_heuristics:
        heuristics = "{**CASE.heuristics, **CASE.config_heuristics}"
    expression = {
        "jit": "CASE.kernel",
        "autotune": f"{autotune}(CASE.kernel)",
        "heuristics_autotune": f"triton.heuristics({value(case, 'heuristics', '{}')})({autotune}(CASE.kernel))",
        "autotune_heuristics": f"{autotune}(triton.heuristics({heuristics})(CASE.kernel))",
    }[decorator]
    meta = DECORATORS[decorator](case)[1]
    lines = []
    if interpreted and decorator != "jit":
        lines += [
            "",
            "def wall_clock(kernel_call, quantiles):  # Triton's interpreter has no device to time configs on",
            "    start = time.perf_counter()",
            "    kernel_call()",
            "    return [(time.perf_counter() - start) * 1e3] * len(quantiles)",
            "",
        ]
    return [*lines, f"kernel = {expression}", f"META = {literal(meta) or repr(meta)}"]


def kernels_argument(case: Case, wrap: str) -> str:
    if not case.kernels:
        return ""
    inner = f"{wrap}(k)" if wrap else "k"
    return f", kernels={{name: {inner} for name, k in CASE.kernels.items()}}"


def signature(case: Case) -> str:
    params = parameters(case)
    typed = [f"{param}: {annotation(case.arg_type(name))}" for param, name in zip(params, case.arg_names, strict=True)]
    return f"({', '.join(typed)}) -> {returns(case)}"


def shipped_code(case: Case, module_name: str) -> tuple[str, str, str]:
    """The op as its library ships it, named as the case module names it."""
    shipped = case.shipped
    if shipped is None:
        return "", "CASE.shipped_module", ""
    qualified = library_name(shipped)
    if qualified is not None:
        namespace, _, rest = qualified.partition("::")
        op = f"torch.ops.{namespace}.{rest}"
        return "", op, op
    owner = getattr(shipped, "__self__", None)
    if inspect.isclass(owner) and issubclass(owner, torch.autograd.Function):
        own = module_global(module_name, owner)
        if own:
            return "", f"{own}.apply", ""
        return f"{owner.__name__} = CASE.shipped.__self__", f"{owner.__name__}.apply", ""
    own = module_global(module_name, shipped)
    return ("", own, "") if own else ("shipped = CASE.shipped", "shipped", "")


def extra_arguments(case: Case) -> list[str]:
    return [literal(arg) or f"CASE.shipped_args[{index}]" for index, arg in enumerate(case.shipped_args)]


def model_code(case: Case, style: str, expression: str) -> str:
    """``Model`` (calling the style's op) and ``Reference`` (the case's PyTorch reference), built alike."""
    params = parameters(case)
    extra = extra_arguments(case) if KNOWN_STYLES[style][1] == AS_SHIPPED else []
    if expression == "CASE.shipped_module":
        model = "Model = CASE.shipped_module  # the library's nn.Module\n"
    elif case.module is not None:
        model = op_function_source("op", expression, params, extra) + "\n\ndef Model():\n    return CASE.module(op)\n"
    elif KNOWN_STYLES[style][1] == CONTROL:
        model = reference_source(case, expression, "Model")  # the control: the PyTorch reference itself
    else:
        model = model_source(expression, params, case.mutates_index, extra)
    if case.module is not None:
        reference = "def Reference():\n    return CASE.module(CASE.reference)\n"
    else:
        reference = reference_source(case, "CASE.reference")
    return model + "\n\n" + reference
