"""The ``nn.Module`` every path runs, written the way a user's model calls an op: its ``forward`` names the op in its
own code (``Fn.apply(x)``, ``torch.ops.ns.op(x)``, ``fn(x)``), never through an attribute of the module.

A module holding ``Fn.apply`` as an attribute and calling ``self.op(x)`` is not what users write, and Dynamo treats it
differently: torch 2.11 fails to trace it (``GetAttrVariable(AutogradFunctionVariable(), setup_context) has no type``)
where ``Fn.apply(x)`` in ``forward`` compiles. So the module is made from one source template (``model_source``), the
same text a repro script carries (harness/repro/script.py), executed with the op bound to a global name.
"""

from __future__ import annotations

import copy
import inspect
import itertools
import keyword
import linecache
import sys
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from harness.case import Case

MODEL_CLASS = "Model"
RESERVED = {"torch", "self", MODEL_CLASS}
_MODULES = itertools.count()


@dataclass(frozen=True)
class OpCall:
    """How user code names an op: ``expression`` (``Fn.apply``, ``torch.ops.ns.name``, ``fn``), given the global
    ``names`` it reads."""

    expression: str
    names: dict[str, Any] = field(default_factory=dict)


def identifier(name: str, fallback: str) -> str:
    """``name`` where it can be a global of user code, else ``fallback``."""
    ok = name.isidentifier() and not keyword.iskeyword(name) and name not in RESERVED
    return name if ok else fallback


def is_function_apply(op: Any) -> bool:
    """Whether ``op`` is the ``apply`` of a ``torch.autograd.Function`` subclass."""
    owner = getattr(op, "__self__", None)
    return inspect.isclass(owner) and issubclass(owner, torch.autograd.Function) and op.__name__ == "apply"


def library_name(op: Any) -> str | None:
    """``ns::name`` (``ns::name.overload``) of a ``torch.library`` op, None for anything else."""
    if isinstance(op, torch._library.custom_ops.CustomOpDef):
        return op._qualname
    if isinstance(op, torch._ops.OpOverloadPacket):
        return op._qualified_op_name
    if isinstance(op, torch._ops.OpOverload):
        return f"{op._schema.name}.{op._overloadname}"
    return None


def op_call(op: Callable[..., Any]) -> OpCall:
    """How a user's ``forward`` calls ``op``: the Function's ``apply`` through its class, a library op through
    ``torch.ops``, any other callable by its own name."""
    if is_function_apply(op):
        owner = op.__self__  # type: ignore[attr-defined]
        name = identifier(owner.__name__, "KernelFunction")
        return OpCall(f"{name}.apply", {name: owner})
    qualified = library_name(op)
    if qualified is not None:
        namespace, _, rest = qualified.partition("::")
        return OpCall(f"torch.ops.{namespace}.{rest}")
    name = identifier(getattr(op, "__name__", ""), "op")
    return OpCall(name, {name: op})


def parameters(case: Case) -> list[str]:
    """``forward``'s parameter names: the case's argument names where they can be Python names."""
    names = [identifier(name, f"arg{index}") for index, name in enumerate(case.arg_names)]
    return names if len(set(names)) == len(names) else [f"arg{index}" for index in range(len(names))]


def model_source(
    expression: str, params: Sequence[str], mutated: Sequence[int], extra: Sequence[str] = (), name: str = MODEL_CLASS
) -> str:
    """The source of class ``name``: ``forward`` calls ``expression`` on its arguments (then ``extra``, the library's
    own argument choices, as source); an op that writes into its inputs gets copies of those and returns the first."""
    args = ", ".join([*params, *extra])
    lines = [f"class {name}(torch.nn.Module):", f"    def forward(self, {', '.join(params)}):"]
    if not mutated:
        return "\n".join([*lines, f"        return {expression}({args})", ""])
    lines += [f"        {params[index]} = {params[index]}.clone()" for index in mutated]
    return "\n".join([*lines, f"        {expression}({args})", f"        return {params[mutated[0]]}", ""])


def reference_source(case: Case, expression: str, name: str = "Reference") -> str:
    """The source of class ``name`` calling the reference ``expression``. For a ``shipped_module`` case it holds the
    module's parameters (built seeded, as the module is: the same values) and passes them after the op's arguments,
    so their gradients are compared too; it reads ``CASE``."""
    params = parameters(case)
    if case.shipped_module is None:
        return model_source(expression, params, case.mutates_index, name=name)
    source = model_source(expression, params, case.mutates_index, ["*self.shipped.parameters()"], name)
    head, forward = source.split("\n", 1)
    init = ["    def __init__(self):", "        super().__init__()", "        self.shipped = CASE.shipped_module()"]
    return "\n".join([head, *init, forward])


def op_function_source(name: str, expression: str, params: Sequence[str], extra: Sequence[str] = ()) -> str:
    """A plain function calling ``expression`` (a case's own ``module`` gets it: what it holds is a function)."""
    args = ", ".join([*params, *extra])
    return f"def {name}({', '.join(params)}):\n    return {expression}({args})\n"


def literal(value: Any) -> str | None:
    """``value`` as Python source where its ``repr`` reads back as an equal value, else None."""
    text = repr(value)
    try:
        same = eval(text, {"__builtins__": {}}) == value  # repr of a literal: no name to resolve
    except Exception:
        return None
    return text if same else None


def _execute(source: str, names: dict[str, Any], label: str) -> dict[str, Any]:
    """Run generated ``source`` as a module of its own (export resolves a model class's module by name) with ``names``
    among its globals; its lines are registered with linecache, so tracebacks and Dynamo's messages show them."""
    name = f"user_model_{next(_MODULES)}"
    filename = f"<{name}: {label}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    module = types.ModuleType(name)
    module.__dict__.update(torch=torch, **names)
    sys.modules[name] = module
    exec(compile(source, filename, "exec"), module.__dict__)
    return module.__dict__


def build_model(case: Case, op: Callable[..., Any], extra: Sequence[Any] = ()) -> torch.nn.Module:
    """The module the paths run around ``op`` (seeded: every style gets the same parameters): the case's own
    ``module`` given a plain function calling ``op``, a shipped ``nn.Module`` as it is (a copy: no state crosses
    cells), or the template's model calling ``op`` directly. ``extra``: arguments passed after the inputs."""
    torch.manual_seed(0)
    if isinstance(op, torch.nn.Module) and not extra:
        if not case.mutates:
            return copy.deepcopy(op)
        call = OpCall("shipped", {"shipped": copy.deepcopy(op)})
    else:
        call = op_call(op)
    params = parameters(case)
    names = dict(call.names)
    extra_source = []
    for index, value in enumerate(extra):
        text = literal(value)
        if text is None:
            text = f"SHIPPED_ARG_{index}"
            names[text] = value
        extra_source.append(text)
    if case.module is not None:
        name = "op" if call.expression != "op" else "call_op"
        source = op_function_source(name, call.expression, params, extra_source)
        return case.module(_execute(source, names, f"{case.id} op")[name])
    if op is case.reference and not extra:  # the reference (and the control): with a shipped module's parameters
        source = reference_source(case, call.expression, MODEL_CLASS)
        return _execute(source, {**names, "CASE": case}, f"{case.id} reference")[MODEL_CLASS]()
    source = model_source(call.expression, params, case.mutates_index, extra_source)
    return _execute(source, names, f"{case.id} model")[MODEL_CLASS]()
