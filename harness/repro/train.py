"""A repro script's library op (``triton_op`` + ``wrap_triton``, ``custom_op``) and its training code, written as a
user writes them: ``register_kernel("cpu")``, ``register_fake``, ``register_flop_formula``, ``register_autograd``, or
an ``autograd.Function`` around a launcher; the backward is the case's backward kernel, its torch ops, or autograd of
its reference."""

from __future__ import annotations

from harness.case import Case
from harness.kernel.model import parameters
from harness.repro.style import LIBRARY, annotation, kernels_argument, signature, value

SAVE = '''

def outputs(value):
    return tuple(value) if isinstance(value, tuple | list) else (value,)


def save(ctx, inputs, output):  # the tensor inputs (not those the op overwrote) and every output; scalars on ctx
    kept = [None if i in MUTATED or not isinstance(v, torch.Tensor) else v for i, v in enumerate(inputs)]
    ctx.save_for_backward(*kept, *(() if output is None else outputs(output)))
    ctx.scalars = tuple(None if isinstance(v, torch.Tensor) else v for v in inputs)


def saved(ctx, grads):  # (inputs, output, grad) as the case's backward takes them
    tensors, count = ctx.saved_tensors, len(ctx.scalars)
    inputs = tuple(t if s is None else s for t, s in zip(tensors[:count], ctx.scalars))
    outs = tensors[count:]
    if not outs:
        return inputs, None, grads[0]
    grads = tuple(torch.zeros_like(o) if g is None else g for o, g in zip(outs, grads))
    return inputs, (outs[0] if len(outs) == 1 else outs), (grads[0] if len(grads) == 1 else grads)
'''

REFERENCE_BACKWARD = '''

def backward_of_reference(inputs, output, grad):  # autograd of the PyTorch reference
    with torch.enable_grad():
        leaves = tuple(v.detach().requires_grad_() if TAKES_GRAD[i] else v for i, v in enumerate(inputs))
        pairs = [(o, g) for o, g in zip(outputs(CASE.reference(*leaves)), outputs(grad)) if o.requires_grad]
        wanted = [v for i, v in enumerate(leaves) if TAKES_GRAD[i]]
        found = iter(torch.autograd.grad([o for o, _ in pairs], wanted, [g for _, g in pairs], allow_unused=True))
    return tuple(next(found) if TAKES_GRAD[i] else None for i in range(len(inputs)))
'''


def backward_expression(case: Case) -> tuple[str, str]:
    """(definitions, the backward ``(inputs, output, grad) -> grads`` the launcher's Function calls)."""
    if case.launch_backward is not None:
        kernels = kernels_argument(case, "")
        return "", f"lambda inputs, out, grad: CASE.launch_backward(CASE.backward_kernel, inputs, out, grad{kernels})"
    if case.backward is not None:
        return "", "CASE.backward"
    return REFERENCE_BACKWARD, "backward_of_reference"


def constants(case: Case) -> str:
    return f"MUTATED = {case.mutates_index!r}\n"


def function_code(case: Case, name: str) -> str:
    """An ``autograd.Function`` whose forward launches the kernel and whose backward is the case's."""
    definitions, backward = backward_expression(case)
    args = ", ".join(parameters(case))
    forward = [f"        out = {name}({args})", f"        save(ctx, ({args},), out)"]
    if case.mutates:
        first = parameters(case)[case.mutates_index[0]]
        dirty = ", ".join(parameters(case)[i] for i in case.mutates_index)
        forward += [f"        ctx.mark_dirty({dirty})", f"        return {first}"]
    else:
        forward += ["        return out"]
    body = [
        f"class {name}_function(torch.autograd.Function):",
        "    @staticmethod",
        f"    def forward(ctx, {args}):",
        *forward,
        "",
        "    @staticmethod",
        "    def backward(ctx, *grads):",
        "        return tuple(BACKWARD(*saved(ctx, grads)))",
    ]
    return constants(case) + SAVE + definitions + f"\n\nBACKWARD = {backward}\n\n\n" + "\n".join(body)


def library_code(
    case: Case, name: str, wrapper: str, training: bool, interpreted: bool, lines: list[str]
) -> tuple[str, str, str]:
    """The op as ``torch.library.triton_op`` (launching ``wrap_triton(kernel)``) or ``custom_op`` (launching the
    kernel), with a CPU kernel, fake, flop formula and, on a training path, autograd."""
    args = ", ".join(parameters(case))
    triton_op = wrapper == "triton_op"
    wrap = "torch.library.wrap_triton" if triton_op else ""
    kernel = "torch.library.wrap_triton(kernel)" if triton_op else "kernel"
    op = f"torch.ops.{LIBRARY}.{name}"
    lines += [
        "",
        "",
        f"@torch.library.{wrapper}({f'{LIBRARY}::{name}'!r}, mutates_args={tuple(case.mutates)!r})",
        f"def {name}{signature(case)}:",
        f"    {'' if case.mutates else 'return '}CASE.launch({kernel}, {args}{kernels_argument(case, wrap)}, **META)",
    ]
    if not triton_op:
        fake = "None" if case.mutates else f"CASE.reference({args})"
        lines += ["", "", f"@{name}.register_fake", f"def _({args}):", f"    return {fake}"]
    if not interpreted:  # in Triton's interpreter, CPU tensors reach the kernel itself
        lines += ["", "", f"{name}.register_kernel('cpu')({value(case, 'cpu_kernel', 'CASE.reference')})"]
    if case.flops is not None:
        lines += ["", "", f"torch.utils.flop_counter.register_flop_formula({op})("]
        lines += ["    lambda *shapes, out_shape=None, **kwargs: CASE.flops(*shapes)", ")"]
    if training:
        lines += [constants(case) + SAVE, *autograd_lines(case, name, wrapper, interpreted)]
    return "\n".join(lines), op, op


def autograd_lines(case: Case, name: str, wrapper: str, interpreted: bool) -> list[str]:
    """``register_autograd`` of the op: its backward is the case's backward kernel as a second op of the same kind
    (as the recipe's ``mysin`` calls ``mycos``), or its torch ops, or autograd of its reference."""
    if case.launch_backward is not None:
        lines = backward_op_lines(case, name, wrapper, interpreted)
    else:
        definitions, backward = (("", "CASE.backward") if case.backward is not None else
                                 (REFERENCE_BACKWARD, "backward_of_reference"))
        lines = [definitions, f"\nBACKWARD = {backward}"]
    return [
        *lines,
        "",
        "",
        "def setup_context(ctx, inputs, output):",
        "    save(ctx, inputs, output)",
        "",
        "",
        "def backward(ctx, *grads):",
        "    return tuple(BACKWARD(*saved(ctx, grads)))",
        "",
        "",
        f"{name}.register_autograd(backward, setup_context=setup_context)",
    ]


def backward_op_lines(case: Case, name: str, wrapper: str, interpreted: bool) -> list[str]:
    """The case's backward kernel as an op of the same kind as the forward (``wrapper``), and ``BACKWARD`` calling
    it with the forward's inputs, outputs and output gradients."""
    tensor_args = [parameters(case)[i] for i in case.tensor_args]
    outs = [f"output_{i}: torch.Tensor" for i in range(case.outputs)]
    grads = [f"grad_{i}: torch.Tensor" for i in range(case.outputs)]
    names = zip(parameters(case), case.arg_names, strict=True)
    params = [f"{p}: {annotation(case.arg_type(name))}" for p, name in names]
    count = len(tensor_args)
    result = "torch.Tensor" if count == 1 else f"tuple[{', '.join(['torch.Tensor'] * count)}]"
    wrap = "torch.library.wrap_triton" if wrapper == "triton_op" else ""
    kernel = f"{wrap}(CASE.backward_kernel)" if wrap else "CASE.backward_kernel"
    out_names = ", ".join(f"output_{i}" for i in range(case.outputs))
    grad_names = ", ".join(f"grad_{i}" for i in range(case.outputs))

    def one(names: str) -> str:
        return names if case.outputs == 1 else f"({names})"

    pick = ", ".join(f"grads[{i}]" for i in case.tensor_args)
    lines = [
        "",
        "",
        f"@torch.library.{wrapper}({f'{LIBRARY}::{name}_backward'!r}, mutates_args=())",
        f"def {name}_backward({', '.join([*params, *outs, *grads])}) -> {result}:",
        f"    grads = CASE.launch_backward({kernel}, ({', '.join(parameters(case))},), {one(out_names)}, "
        f"{one(grad_names)}{kernels_argument(case, wrap)})",
        f"    return {pick}",
    ]
    if wrapper == "custom_op":
        lines += ["", "", f"@{name}_backward.register_fake", "def _(*args):"]
        lines += [f"    return {', '.join(f'torch.empty_like(args[{i}])' for i in case.tensor_args)}"]
    if not interpreted:
        lines += ["", "", f"@{name}_backward.register_kernel('cpu')", "def _(*args):"]
        lines += [f"    inputs = args[:{len(case.arg_names)}]"]
        lines += [f"    out, grad = args[{len(case.arg_names)}:{len(case.arg_names) + case.outputs}], "
                  f"args[{len(case.arg_names) + case.outputs}:]"]
        backward = "CASE.backward" if case.backward is not None else "backward_of_reference"
        lines += [f"    grads = {backward}(inputs, *out, *grad)" if case.outputs == 1 else
                  f"    grads = {backward}(inputs, tuple(out), tuple(grad))"]
        lines += [f"    return {pick}"]
    by_position = ", ".join(
        f"found[{case.tensor_args.index(i)}]" if i in case.tensor_args else "None"
        for i in range(len(case.arg_names))
    )
    call = f"outputs({name}_backward(*inputs, *outputs(output), *outputs(grad)))"
    lines += ["", "", "def BACKWARD(inputs, output, grad):", f"    found = {call}", f"    return ({by_position},)"]
    if case.backward is None and not interpreted:
        lines.insert(0, REFERENCE_BACKWARD)
    return lines
