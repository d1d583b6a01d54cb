"""The wrapping style as a short repro script writes it: the decorator stack over the case's kernel, the wrapper
around its launch (a plain function, ``torch.library.triton_op`` + ``wrap_triton``, ``torch.library.custom_op``),
its autograd where the path trains, and the ``Model`` whose ``forward`` calls the op as user code does; the same
registrations the cell's style makes (harness/kernel/wrappers.py, gradients.py), written for this one case."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from harness.case import OPTIONAL_TENSOR, Case
from harness.kernel.model import literal, model_source, parameters, reference_source
from harness.kernel.styles import AS_SHIPPED, KNOWN_STYLES, is_library_op, library_op_name
from harness.script.usercode import NotShort

NAMESPACE = "mylib"
ZEROS = "grad = tuple(torch.zeros_like(o) if g is None else g for o, g in zip(outs, grads))"  # grads none got
TRAINING_PATHS = ("train_eager", "train_compile", "opcheck")  # the paths that need the style's autograd


@dataclass(frozen=True)
class Backward:
    """A backward's body: ``call``'s lines, the ``helper`` definitions they need, and whether they take the saved
    values as they are (``saved``: the backward op's call) or ``(inputs, output, grad)`` as the case's backward."""

    call: list[str]
    helper: list[str] = field(default_factory=list)
    saved: bool = False


@dataclass
class Style:
    """The style's lines, the expression the model calls, the library op's name (None for none), and the
    imports the lines need."""

    lines: list[str]
    call: str
    library: str | None = None
    imports: set[str] = field(default_factory=set)
    op: str = ""  # the name the script binds its torch.library op to (what opcheck checks; "": none)


def fields_needed(case: Case, style: str, path: str) -> tuple[str, ...]:
    """The case's fields the script of ``style`` on ``path`` reads."""
    decorator, wrapper = KNOWN_STYLES[style]
    fields = ["make_inputs", "reference", "module", "shipped_module"]
    fields += ["flops"] if path == "flop_counter" else []
    if wrapper == AS_SHIPPED:
        return (*fields, "shipped", "shipped_args")
    if decorator is None:
        return tuple(fields)
    fields += ["kernel", "launch", "kernels"]
    fields += ["configs", "key", "autotune_options"] if decorator != "jit" else []
    fields += ["heuristics"] if "heuristics" in decorator else []
    fields += ["config_heuristics"] if decorator == "autotune_heuristics" else []
    fields += ["cpu_kernel"] if wrapper != "launcher" else []
    fields += ["fake"] if wrapper == "custom_op" else []
    if path in TRAINING_PATHS:
        fields += ["backward", "backward_kernel", "launch_backward"]
    return tuple(fields)


def style_code(case: Case, style: str, path: str, names: dict[str, str], on_cpu: bool, taken: set[str]) -> Style:
    """The style ``style`` around ``case`` for ``path``; ``names``: the name the script reads each field by;
    ``on_cpu``: the op meets CPU tensors, and registers its CPU kernel (the cell registers it everywhere but under
    Triton's interpreter; a CUDA call never reaches it); ``taken``: the names the case's code defines (the op is
    named after the case, unless it takes one of those)."""
    decorator, wrapper = KNOWN_STYLES[style]
    if wrapper == AS_SHIPPED:
        return _as_shipped(case, names)
    if decorator is None:
        return Style([], names["reference"], None)
    if case.launch is None:
        raise NotShort("no kernel to wrap: the style is a skip")
    train = path in TRAINING_PATHS
    function = case.id if case.id not in taken else f"{case.id}_op"
    kernel_lines, meta, kernel = _decorated(case, decorator, names)
    head = [*kernel_lines, "", ""] if kernel_lines else []
    if wrapper == "launcher":
        lines = [*head, *_launcher(case, function, names, meta, kernel)]
        if not train:
            return Style(lines, function)
        body = _function(case, function, _backward_call(case, names, launcher=True))
        return Style([*lines, "", "", *body], f"{_class_name(case)}.apply")
    name = f"{NAMESPACE}::{function}"
    lines = [*head, *_library_op(case, wrapper, name, function, names, meta, kernel)]
    if on_cpu:  # a CPU kernel of its own where CPU tensors reach the op (not under Triton's interpreter)
        lines.append(f'\n\n{function}.register_kernel("cpu")({names.get("cpu_kernel", names["reference"])})')
    imports = {"from typing import Optional"} if _optional(case) else set()
    if path == "flop_counter" and "flops" in names:
        imports.add("from torch.utils.flop_counter import register_flop_formula")
        flops = names["flops"]
        lines += [
            "",
            "",
            f"register_flop_formula(torch.ops.{NAMESPACE}.{function})(",
            f"    lambda *shapes, out_shape=None, **kwargs: {flops}(*shapes))",
        ]
    if train and not (case.mutates and path == "opcheck"):  # opcheck checks a mutating op without autograd
        backward = _backward_call(case, names, launcher=False)
        if case.launch_backward is not None:
            op_lines, backward = _backward_op(case, wrapper, function, names, on_cpu)
            lines += ["", "", *op_lines]
        lines += ["", "", *_autograd(case, function, backward)]
    return Style(lines, f"torch.ops.{NAMESPACE}.{function}", name, imports, function)


def model_code(
    case: Case, call: str, names: dict[str, str], extra: list[str], name: str = "Model"
) -> tuple[list[str], str]:
    """The definitions of the module that calls ``call`` as user code does, and the expression that builds it: the
    case's own ``module`` around a function calling ``call``, else class ``name`` whose ``forward`` calls it (an op
    that writes into its inputs gets copies and returns the first)."""
    params = parameters(case)
    if "module" in names:
        function = "op" if name == "Model" else "reference_op"
        args = ", ".join([*params, *extra])
        return [f"def {function}({', '.join(params)}):", f"    return {call}({args})"], f"{names['module']}({function})"
    return model_source(call, params, case.mutates_index, extra, name).rstrip().splitlines(), f"{name}()"


def reference_code(case: Case, names: dict[str, str], name: str = "Reference") -> tuple[list[str], str]:
    """The reference's module, as the cell builds it (a shipped module's parameters passed after the arguments)."""
    if "shipped_module" not in names:
        return model_code(case, names["reference"], names, [], name)
    source = reference_source(case, names["reference"], name)  # the cell's template, which reads CASE
    return source.replace("CASE.shipped_module()", f"{names['shipped_module']}()").rstrip().splitlines(), f"{name}()"


def _as_shipped(case: Case, names: dict[str, str]) -> Style:
    if "shipped_module" in names:
        return Style([], "", None, op="")
    shipped = case.shipped
    if shipped is None:
        raise NotShort("no op as shipped")
    library = library_op_name(shipped) if is_library_op(shipped) else None
    return Style([], names["shipped"], library, op=names["shipped"] if library else "")


def shipped_extra(case: Case, names: dict[str, str]) -> list[str]:
    """The library's own argument choices as ``forward`` passes them: by the name the script has for them, else
    (a literal the case wrote inline) each value written out."""
    if "shipped_args" in names:
        return [f"*{names['shipped_args']}"]
    return [_literal(value) for value in case.shipped_args]


def _decorated(case: Case, decorator: str, names: dict[str, str]) -> tuple[list[str], dict[str, Any], str]:
    """``kernel = ...`` (the decorator stack over the case's kernel; none for plain ``@triton.jit``), the constexprs
    the launch still passes, and the kernel's name."""
    kernel = names.get("kernel", "None")  # a case may launch without a Triton kernel of its own
    config_keys = {key for config in case.configs for key in config.kwargs}
    if decorator == "jit":
        return [], dict(case.meta), kernel
    options = f", **{names['autotune_options']}" if case.autotune_options else ""
    # a case without configs or key: the empty list the autotuner is given (Triton's default config then)
    autotune = f"triton.autotune(configs={names.get('configs', '[]')}, key={names.get('key', '[]')}{options})"
    dropped = config_keys if decorator == "autotune" else config_keys | set(case.heuristics)
    meta = {key: value for key, value in case.meta.items() if key not in dropped}
    if decorator == "autotune":
        return [f"kernel = {autotune}({kernel})"], meta, "kernel"
    heuristics = names.get("heuristics", "{}")
    if decorator == "heuristics_autotune":
        return [f"kernel = triton.heuristics({heuristics})({autotune}({kernel}))"], meta, "kernel"
    both = f"{{**{heuristics}, **{names['config_heuristics']}}}" if case.config_heuristics else heuristics
    return [f"kernel = {autotune}(triton.heuristics({both})({kernel}))"], meta, "kernel"


def _launch(case: Case, kernel: str, names: dict[str, str], meta: dict[str, Any], wrap: str = "") -> str:
    """``launch(kernel, x, y, **meta)`` as the wrapper's body calls it."""
    args = [kernel, *parameters(case)]
    if case.kernels:
        args.append(
            f"kernels={{name: {wrap}(k) for name, k in {names['kernels']}.items()}}"
            if wrap
            else f"kernels={names['kernels']}"
        )
    args += [f"{key}={_literal(value)}" for key, value in meta.items()]
    return f"{names['launch']}({', '.join(args)})"


def _literal(value: Any) -> str:
    text = literal(value)
    if text is None:
        raise NotShort(f"a meta value that is no literal: {value!r}")
    return text


def _launcher(case: Case, function: str, names: dict[str, str], meta: dict[str, Any], kernel: str) -> list[str]:
    params = ", ".join(parameters(case))
    return [f"def {function}({params}):", f"    return {_launch(case, kernel, names, meta)}"]


def _library_op(
    case: Case, wrapper: str, name: str, function: str, names: dict[str, str], meta: dict[str, Any], kernel: str
) -> list[str]:
    """The ``triton_op`` (launching ``wrap_triton(kernel)``) or ``custom_op`` (launching the kernel, with a fake
    that runs the case's ``fake``, else its reference) of the case."""
    wrap = "torch.library.wrap_triton" if wrapper == "triton_op" else ""
    kernel = f"{wrap}({kernel})" if wrap else kernel
    typed = ", ".join(
        f"{p}: {_annotation(case.arg_type(n))}" for p, n in zip(parameters(case), case.arg_names, strict=True)
    )
    returns = "None" if case.mutates else _returns(case.outputs)
    head = [
        f'@torch.library.{wrapper}("{name}", mutates_args={tuple(case.mutates)!r})',
        f"def {function}({typed}) -> {returns}:",
    ]
    call = _launch(case, kernel, names, meta, wrap)
    lines = [*head, f"    {'' if case.mutates else 'return '}{call}"]
    if wrapper == "custom_op":
        params = ", ".join(parameters(case))
        fake = "None" if case.mutates else f"{names.get('fake', names['reference'])}({params})"
        lines += ["", "", f"@{function}.register_fake", f"def _({params}):", f"    return {fake}"]
    return lines


def _annotation(kind: Any) -> str:
    if kind is torch.Tensor:
        return "torch.Tensor"
    if kind == OPTIONAL_TENSOR:
        return "Optional[torch.Tensor]"
    return kind.__name__


def _returns(count: int) -> str:
    return "torch.Tensor" if count == 1 else f"tuple[{', '.join(['torch.Tensor'] * count)}]"


def _optional(case: Case) -> bool:
    return any(case.arg_type(name) == OPTIONAL_TENSOR for name in case.arg_names)


def _class_name(case: Case) -> str:
    return "".join(part.title() for part in case.id.split("_")) + "Function"


def _backward_call(case: Case, names: dict[str, str], launcher: bool) -> Backward:
    """What the backward calls on ``(inputs, output, grad)``, and the helper it needs (autograd of the reference)."""
    if launcher and case.launch_backward is not None:
        kernels = f", kernels={names['kernels']}" if case.kernels else ""
        return Backward(
            [f"return tuple({names['launch_backward']}({names['backward_kernel']}, inputs, output, grad{kernels}))"]
        )
    if case.backward is not None:
        return Backward([f"return tuple({names['backward']}(inputs, output, grad))"])
    no_grad = tuple(case.arg_names.index(name) for name in case.no_grad)
    helper = [
        "def reference_backward(inputs, output, grad):  # autograd of the reference",
        f"    takes = [isinstance(v, torch.Tensor) and v.is_floating_point() and i not in {no_grad!r}"
        " for i, v in enumerate(inputs)]",
        "    with torch.enable_grad():",
        "        leaves = [v.detach().requires_grad_() if t else v for v, t in zip(inputs, takes)]",
        f"        outs = {names['reference']}(*leaves)",
        "        outs, grads = (outs, grad) if isinstance(outs, tuple) else ((outs,), (grad,))",
        "        pairs = [(o, g) for o, g in zip(outs, grads) if o.requires_grad]",
        "        wanted = [v for v, t in zip(leaves, takes) if t]",
        "        if not pairs or not wanted:",
        "            return (None,) * len(inputs)",
        "        found = iter(torch.autograd.grad([o for o, _ in pairs], wanted, [g for _, g in pairs],"
        " allow_unused=True))",
        "    return tuple(next(found) if t else None for t in takes)",
    ]
    return Backward(["return reference_backward(inputs, output, grad)"], helper)


def _backward_op(
    case: Case, wrapper: str, function: str, names: dict[str, str], on_cpu: bool
) -> tuple[list[str], Backward]:
    """The case's backward kernel as a library op of its own (``<op>_backward``: the recipe's ``mysin`` calling a
    ``mycos`` op), with its CPU kernel (the case's torch backward) and, for a ``custom_op``, a fake; and the call
    the forward op's backward makes of it."""
    params = parameters(case)
    outputs = [f"output_{i}" for i in range(case.outputs)]
    grads = [f"grad_{i}" for i in range(case.outputs)]
    typed = [f"{p}: {_annotation(case.arg_type(n))}" for p, n in zip(params, case.arg_names, strict=True)]
    typed += [f"{v}: torch.Tensor" for v in [*outputs, *grads]]
    signature = ", ".join([*params, *outputs, *grads])
    packed = f"({', '.join(params)},)", _packed(outputs), _packed(grads)
    tensors = case.tensor_args
    back = f"{function}_backward"
    wrap = "torch.library.wrap_triton" if wrapper == "triton_op" else ""
    kernel = f"{wrap}({names['backward_kernel']})" if wrap else names["backward_kernel"]
    kernels = ""
    if case.kernels:
        kernels = (
            f", kernels={{n: {wrap}(k) for n, k in {names['kernels']}.items()}}"
            if wrap
            else f", kernels={names['kernels']}"
        )
    picked = ", ".join(f"grads[{i}]" for i in tensors)
    torch_backward = _backward_call(case, names, launcher=False)
    torch_call = torch_backward.call[-1].removeprefix("return ")
    torch_call = torch_call.replace("(inputs, output, grad)", f"({', '.join(packed)})")
    helper = torch_backward.helper if on_cpu else []  # the CPU kernel's alone
    lines = [
        *helper,
        *([""] * 2 * bool(helper)),
        f'@torch.library.{wrapper}("{NAMESPACE}::{back}", mutates_args=())',
        f"def {back}({', '.join(typed)}) -> {_returns(len(tensors))}:",
        f"    grads = {names['launch_backward']}({kernel}, {', '.join(packed)}{kernels})",
        f"    return {picked}",
    ]
    if on_cpu:
        lines += [
            "",
            "",
            f'@{back}.register_kernel("cpu")',
            f"def _({signature}):",
            f"    grads = {torch_call}",
            f"    return {picked}",
        ]
    if wrapper == "custom_op":
        empty = ", ".join(f"torch.empty_like({params[i]})" for i in tensors)
        lines += ["", "", f"@{back}.register_fake", f"def _({signature}):", f"    return {empty}"]
    single = len(tensors) == 1
    per_arg = ", ".join(
        ("grads" if single else f"grads[{tensors.index(i)}]") if i in tensors else "None" for i in range(len(params))
    )
    saved = "out" if case.outputs == 1 or case.mutates else "*outs"  # the output(s) as the backward reads them
    spread = f"{saved}, grad" if case.outputs == 1 else f"{saved}, *grad"
    return lines, Backward([f"grads = {back}({', '.join(params)}, {spread})", f"return ({per_arg},)"], saved=True)


def _packed(values: list[str]) -> str:
    return values[0] if len(values) == 1 else f"({', '.join(values)},)"


def _saving(case: Case, out: str = "out") -> tuple[list[str], list[str]]:
    """Lines saving what the backward reads (the tensor inputs, an overwritten one as it was before the call or
    None, and the output(s), ``out``), and the lines reading it back."""
    params = parameters(case)
    scalars = [p for p, n in zip(params, case.arg_names, strict=True) if case.arg_type(n) in (float, int, bool)]
    mutated = [params[i] for i in case.mutates_index]
    saved = [("before" if case.save_mutated else "None") if p in mutated else p for p in params if p not in scalars]
    outputs = [mutated[0]] if mutated else [out] if case.outputs == 1 else [f"*{out}"]
    save = [f"ctx.save_for_backward({', '.join([*saved, *outputs])})"]
    save += [f"ctx.{p} = {p}" for p in scalars]
    tensors = [p for p in params if p not in scalars]
    read_outputs = "out" if case.outputs == 1 or mutated else "*outs"
    read = [
        f"{', '.join([*tensors, read_outputs])}, = ctx.saved_tensors"
        if len(tensors) + 1 == 1
        else f"{', '.join([*tensors, read_outputs])} = ctx.saved_tensors"
    ]
    read += [f"{p} = ctx.{p}" for p in scalars]
    return save, read


def _backward_body(case: Case, backward: Backward) -> list[str]:
    """The backward's body after the saved values are read: ``inputs``, ``output`` and ``grad`` as the case's
    backward takes them, or the saved values as they are (a grad of zeros for an output that got none), then the
    backward's call."""
    zeros = [] if case.outputs == 1 or case.mutates else [ZEROS]
    if backward.saved:
        return [*zeros, *backward.call]
    output = "out" if case.outputs == 1 or case.mutates else "tuple(outs)"
    return [f"inputs, output = ({', '.join(parameters(case))},), {output}", *zeros, *backward.call]


def _function(case: Case, function: str, backward: Backward) -> list[str]:
    """The launcher's training: a ``torch.autograd.Function`` around the launch, its backward the case's."""
    helper = backward.helper
    params = parameters(case)
    save, read = _saving(case)
    mutated = [params[i] for i in case.mutates_index]
    grads = "grad" if case.outputs == 1 or mutated else "*grads"
    forward = [f"before = {mutated[0]}.detach().clone()"] if mutated and case.save_mutated else []
    forward += [f"{'' if mutated else 'out = '}{function}({', '.join(params)})", *save]
    forward += [f"ctx.mark_dirty({', '.join(mutated)})", f"return {mutated[0]}"] if mutated else ["return out"]
    return [
        *helper,
        *([""] * 2 * bool(helper)),
        f"class {_class_name(case)}(torch.autograd.Function):",
        "    @staticmethod",
        f"    def forward(ctx, {', '.join(params)}):",
        *(f"        {line}" for line in forward),
        "",
        "    @staticmethod",
        f"    def backward(ctx, {grads}):",
        *(f"        {line}" for line in [*read, *_backward_body(case, backward)]),
    ]


def _autograd(case: Case, function: str, backward: Backward) -> list[str]:
    """A library op's autograd: ``setup_context`` saving what the backward reads, the backward the case's."""
    helper = backward.helper
    params = parameters(case)
    save, read = _saving(case, "output")
    mutated = [params[i] for i in case.mutates_index]
    grads = "grad" if case.outputs == 1 or mutated else "*grads"
    setup = [f"{', '.join(params)}, = inputs" if len(params) == 1 else f"{', '.join(params)} = inputs"]
    return [
        *helper,
        *([""] * 2 * bool(helper)),
        "def setup_context(ctx, inputs, output):",
        *(f"    {line}" for line in [*setup, *save]),
        "",
        "",
        f"def {function}_gradients(ctx, {grads}):",
        *(f"    {line}" for line in [*read, *_backward_body(case, backward)]),
        "",
        "",
        f"{function}.register_autograd({function}_gradients, setup_context=setup_context)",
    ]
