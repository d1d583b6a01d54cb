"""Case shapes nobody wrote: a hypothesis strategy over the Case API's axes, and the case module each shape is.

A drawn case is one elementwise op over 1-D tensors, correct by construction: ``acc = sum(c_i * x_i)``, times a
float ``alpha``, plus an int ``k``, plus an optional ``bias``, negated where a bool ``flag`` is set; outputs ``acc``
and ``2 * acc + 1`` and an integer ``x0 > 0``, or ``acc`` written into ``x0`` (in place). Each tensor may be a
strided view or an expanded scalar; the backward is autograd of the reference, its torch ops or a Triton kernel;
the op may be shipped as a function, an ``autograd.Function``'s ``apply``, an ``nn.Module`` with a parameter and a
buffer, or a ``torch.library`` op. ``bug`` plants a known defect: ``"mask"`` drops the last element of the
forward (a mask off by one), ``"backward"`` scales the gradients of a Triton backward kernel by 1.01 (a case's
backward in torch ops is checked against autograd when the case loads: a wrong one is a broken case, exit 2).
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

COEFFICIENTS = (1.0, -0.5, 2.0)  # exact in binary: the kernel and the reference add the same products
SCALARS = {"alpha": ("float", "0.75"), "k": ("int", "3"), "flag": ("bool", "True")}
LAYOUTS = ("contiguous", "strided", "expanded")
SHIPPED = (None, "function", "autograd", "module", "library")
BACKWARDS = ("autograd", "torch", "kernel")


@dataclass(frozen=True)
class Shape:
    """One drawn case: its arguments, outputs, backward and how a library ships it."""

    id: str
    layouts: tuple[str, ...]  # one per tensor argument x0, x1, ...
    scalars: tuple[str, ...]  # a subset of SCALARS, in its order
    bias: str | None  # None: no optional tensor; "given" or "none": the value make_inputs gives it
    outputs: int  # float outputs: acc, then 2 * acc + 1
    int_output: bool
    inplace: bool
    backward: str
    heuristics: bool
    shipped: str | None

    @property
    def arg_names(self) -> tuple[str, ...]:
        tensors = tuple(f"x{i}" for i in range(len(self.layouts)))
        return tensors + self.scalars + (("bias",) if self.bias else ())


@st.composite
def shapes(draw: st.DrawFn, index: int = 0) -> Shape:
    """A case shape within what the Case API allows."""
    inplace = draw(st.booleans())
    layouts = draw(st.lists(st.sampled_from(LAYOUTS), min_size=1, max_size=3))
    if inplace and layouts[0] == "expanded":  # a kernel cannot write into an expanded tensor
        layouts[0] = "strided"
    scalars = tuple(name for name in SCALARS if draw(st.booleans()))
    bias = draw(st.sampled_from((None, "given", "none")))
    backward = draw(st.sampled_from(BACKWARDS))
    if inplace and backward == "autograd":  # an op that writes into its inputs needs its backward
        backward = "torch"
    if backward == "kernel" and (bias or inplace):  # the Case API's limits on a backward kernel
        backward = "torch"
    outputs = 1 if inplace else draw(st.integers(1, 2))
    int_output = not inplace and draw(st.booleans())
    shipped = draw(st.sampled_from(SHIPPED))
    if shipped == "module" and (inplace or outputs + int_output > 1):
        shipped = "autograd"
    if shipped == "function" and inplace:  # autograd cannot see a plain function's write: wrong by construction
        shipped = "autograd"
    return Shape(
        id=f"drawn{index}",
        layouts=tuple(layouts),
        scalars=scalars,
        bias=bias,
        outputs=outputs,
        int_output=int_output,
        inplace=inplace,
        backward=backward,
        heuristics=draw(st.booleans()),
        shipped=shipped,
    )


def case_lists(count: int) -> st.SearchStrategy[list[Shape]]:
    """``count`` shapes, named drawn0, drawn1, ..."""
    return st.tuples(*(shapes(index) for index in range(count))).map(list)


def module_source(cases: list[Shape], bug: str | None = None, namespace: str = "drawn") -> str:
    """A case module holding every shape as a case (``CASES``), with ``bug`` planted in each; its library ops
    register under ``namespace`` (an op registers once per process)."""
    head = "import math\n\nimport torch\nimport triton\nimport triton.language as tl\n\nfrom harness.case import Case\n"
    scale = 1.01 if bug == "backward" else 1.0
    parts = [head, f"MAX_BLOCK = 64\nSLIP = tl.constexpr({int(bug == 'mask')})  # elements the mask drops\n"]
    parts.append(f"KERNEL_GRAD_SCALE = tl.constexpr({scale})  # the backward kernel's gradients scaled\n")
    parts += [_case_source(shape) for shape in cases]
    parts.append(f"CASES = [{', '.join(f'{shape.id}_case' for shape in cases)}]\n")
    return (
        "\n\n".join(parts).replace("'drawn::", f"'{namespace}::").replace("torch.ops.drawn.", f"torch.ops.{namespace}.")
    )


def _case_source(shape: Shape) -> str:
    return "\n\n".join(
        [
            _kernel(shape),
            _launch(shape),
            _reference(shape),
            _backward(shape),
            _inputs(shape),
            *_shipped(shape),
            _case(shape),
        ]
    )


def _kernel(shape: Shape) -> str:
    s = shape.id
    tensors = [f"x{i}_ptr, x{i}_stride" for i in range(len(shape.layouts))]
    args = [*tensors, *shape.scalars, *(["bias_ptr, bias_stride"] if shape.bias else [])]
    args += ["out0_ptr", "out1_ptr", "outi_ptr", "n", "HAS_BIAS: tl.constexpr", "BLOCK_SIZE: tl.constexpr"]
    args += ["EVEN: tl.constexpr"] if shape.heuristics else []
    body = [
        "    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)",
        "    mask = offsets < n - SLIP",
    ]
    if shape.heuristics:
        body += ["    if EVEN:", "        mask = offsets < n + BLOCK_SIZE  # no tail: every lane in bounds"]
    terms = [
        f"{COEFFICIENTS[i]} * tl.load(x{i}_ptr + offsets * x{i}_stride, mask=mask)" for i in range(len(shape.layouts))
    ]
    body += [f"    acc = {' + '.join(terms)}"]
    body += ["    acc = acc * alpha"] if "alpha" in shape.scalars else []
    body += ["    acc = acc + k"] if "k" in shape.scalars else []
    if shape.bias:
        body += ["    if HAS_BIAS:", "        acc = acc + tl.load(bias_ptr + offsets * bias_stride, mask=mask)"]
    body += ["    if flag:", "        acc = -acc"] if "flag" in shape.scalars else []
    if shape.inplace:
        body += ["    tl.store(x0_ptr + offsets * x0_stride, acc, mask=mask)"]
    else:
        body += ["    tl.store(out0_ptr + offsets, acc, mask=mask)"]
        body += ["    tl.store(out1_ptr + offsets, 2.0 * acc + 1.0, mask=mask)"] if shape.outputs == 2 else []
        if shape.int_output:
            body += [
                "    x0 = tl.load(x0_ptr + offsets * x0_stride, mask=mask)",
                "    tl.store(outi_ptr + offsets, (x0 > 0).to(tl.int32), mask=mask)",
            ]
    source = f"@triton.jit\ndef {s}_kernel({', '.join(args)}):\n" + "\n".join(body)
    if shape.backward == "kernel":
        grads = ", ".join(f"g{i}_ptr" for i in range(len(shape.layouts)))
        lines = [
            "    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)",
            "    mask = offsets < n",
            "    grad = tl.load(grad0_ptr + offsets, mask=mask)",
        ]
        lines += ["    grad = grad + 2.0 * tl.load(grad1_ptr + offsets, mask=mask)"] if shape.outputs == 2 else []
        lines += ["    grad = grad * alpha"] if "alpha" in shape.scalars else []
        lines += ["    if flag:", "        grad = -grad"] if "flag" in shape.scalars else []
        lines += [
            f"    tl.store(g{i}_ptr + offsets, {COEFFICIENTS[i]} * grad * KERNEL_GRAD_SCALE, mask=mask)"
            for i in range(len(shape.layouts))
        ]
        scalars = "".join(f"{name}, " for name in shape.scalars if name != "k")
        source += (
            f"\n\n\n@triton.jit\ndef {s}_backward_kernel(grad0_ptr, grad1_ptr, {grads}, {scalars}n, "
            "BLOCK_SIZE: tl.constexpr):\n" + "\n".join(lines)
        )
    return source


def _signature(shape: Shape) -> str:
    return ", ".join(shape.arg_names)


def _launch(shape: Shape) -> str:
    s, args = shape.id, _signature(shape)
    tensors = "".join(f"x{i}, x{i}.stride(0), " for i in range(len(shape.layouts)))
    # a bool reaches the kernel as an int: Triton's interpreter cannot take a Python bool (int1 from 32 bits)
    scalars = "".join("int(flag), " if name == "flag" else f"{name}, " for name in shape.scalars)
    bias = "x0 if bias is None else bias, 0 if bias is None else bias.stride(0), " if shape.bias else ""
    has_bias = "bias is not None" if shape.bias else "False"
    lines = [
        f"def {s}_launch(kernel, {args}, **meta):",
        "    n = x0.shape[0]",
        "    out0 = torch.empty(n, device=x0.device, dtype=x0.dtype)",
        "    out1 = torch.empty(n, device=x0.device, dtype=x0.dtype)",
        "    outi = torch.empty(n, device=x0.device, dtype=torch.int32)",
        "    grid = lambda m: (triton.cdiv(n, m['BLOCK_SIZE']),)",
        f"    kernel[grid]({tensors}{scalars}{bias}out0, out1, outi, n, HAS_BIAS={has_bias}, **meta)",
    ]
    lines += ["    return None"] if shape.inplace else [f"    return {_outputs(shape, 'out0', 'out1', 'outi')}"]
    return "\n".join(lines)


def _outputs(shape: Shape, first: str, second: str, integer: str) -> str:
    names = [first] + ([second] if shape.outputs == 2 else []) + ([integer] if shape.int_output else [])
    return names[0] if len(names) == 1 else f"({', '.join(names)})"


def _reference(shape: Shape) -> str:
    s = shape.id
    terms = " + ".join(f"{COEFFICIENTS[i]} * x{i}" for i in range(len(shape.layouts)))
    module = shape.shipped == "module"  # the module's parameter comes after the op's arguments
    lines = [f"def {s}_reference({_signature(shape)}{', scale' if module else ''}):", f"    acc = {terms}"]
    lines += ["    acc = acc * alpha"] if "alpha" in shape.scalars else []
    lines += ["    acc = acc + k"] if "k" in shape.scalars else []
    lines += ["    if bias is not None:", "        acc = acc + bias"] if shape.bias else []
    lines += ["    if flag:", "        acc = -acc"] if "flag" in shape.scalars else []
    lines += ["    acc = acc * scale"] if module else []
    if shape.inplace:
        lines += ["    x0.copy_(acc)", "    return None"]
    else:
        lines += [f"    return {_outputs(shape, 'acc', '2.0 * acc + 1.0', '(x0 > 0).to(torch.int32)')}"]
    return "\n".join(lines)


def _backward(shape: Shape) -> str:
    """``<id>_backward(inputs, output, grad)`` in torch ops, and for a backward kernel its launch."""
    s = shape.id
    lines = [f"def {s}_backward(inputs, output, grad):", f"    {_signature(shape)}, = inputs"]
    first = "grad[0]" if _output_count(shape) > 1 else "grad"
    lines += [f"    g = {first}" + (" + 2.0 * grad[1]" if shape.outputs == 2 else "")]
    lines += ["    g = -g if flag else g"] if "flag" in shape.scalars else []
    lines += ["    g_bias = g"]  # the bias is added after the scale: its gradient is not scaled
    lines += ["    g = g * alpha"] if "alpha" in shape.scalars else []
    grads = [f"{COEFFICIENTS[i]} * g" for i in range(len(shape.layouts))]
    grads += [None] * len(shape.scalars)
    grads += ["None if bias is None else g_bias"] if shape.bias else []
    lines += [f"    return ({''.join(f'{grad}, ' for grad in grads)})"]
    source = "\n".join(lines)
    if shape.backward == "kernel":
        grads = ", ".join(f"g{i}" for i in range(len(shape.layouts)))
        scalars = "".join("int(flag), " if name == "flag" else f"{name}, " for name in shape.scalars if name != "k")
        count = _output_count(shape)
        source += "\n\n\n" + "\n".join(
            [
                f"def {s}_launch_backward(kernel, inputs, output, grad):",
                f"    {_signature(shape)}, = inputs",
                f"    grads = {'tuple(grad)' if count > 1 else '(grad,)'}",
                "    grad0 = grads[0].contiguous()",
                f"    grad1 = {'grads[1].contiguous()' if shape.outputs == 2 else 'grad0'}",
                "    n = x0.shape[0]",
                *(f"    g{i} = torch.empty(n, device=x0.device, dtype=x0.dtype)" for i in range(len(shape.layouts))),
                f"    kernel[(triton.cdiv(n, 32),)](grad0, grad1, {grads}, {scalars}n, BLOCK_SIZE=32)",
                f"    return ({grads}, {''.join('None, ' for _ in shape.scalars)})",
            ]
        )
    return source


def _output_count(shape: Shape) -> int:
    return 1 if shape.inplace else shape.outputs + shape.int_output


def _inputs(shape: Shape) -> str:
    made = {
        "contiguous": "torch.randn(size, generator=gen).to(device)",
        "strided": "torch.randn(size, 2, generator=gen).to(device)[:, 0]",
        "expanded": "torch.randn(1, generator=gen).to(device).expand(size)",
    }
    values = [made[layout] for layout in shape.layouts] + [SCALARS[name][1] for name in shape.scalars]
    if shape.bias:
        values += [made["contiguous"] if shape.bias == "given" else "None"]
    lines = [
        f"def {shape.id}_inputs(size, device, seed):",
        "    gen = torch.Generator().manual_seed(seed)",
        f"    return ({''.join(f'{value}, ' for value in values)})",
    ]
    return "\n".join(lines)


def _shipped(shape: Shape) -> list[str]:
    """The op as a library ships it: definitions, and the Case keyword naming it."""
    if shape.shipped is None:
        return []
    s, args = shape.id, _signature(shape)
    launch = f"{s}_launch({s}_kernel, {args}, BLOCK_SIZE=32{', EVEN=False' if shape.heuristics else ''})"
    if shape.shipped == "function":
        return [f"def {s}_shipped({args}):\n    return {launch}"]
    function = [
        f"class {s}_Function(torch.autograd.Function):",
        "    @staticmethod",
        f"    def forward(ctx, {args}):",
        f"        ctx.inputs = ({args},)",
        *(
            ["        ctx.mark_dirty(x0)", f"        {launch}", "        return x0"]
            if shape.inplace
            else [f"        return {launch}"]
        ),
        "",
        "    @staticmethod",
        "    def backward(ctx, *grads):",
        f"        return {s}_backward(ctx.inputs, None, grads if len(grads) > 1 else grads[0])",
    ]
    if shape.shipped == "autograd":
        return ["\n".join(function)]
    if shape.shipped == "module":
        module = [
            f"class {s}_Module(torch.nn.Module):",
            "    def __init__(self):",
            "        super().__init__()",
            "        self.scale = torch.nn.Parameter(torch.ones(1))",
            "        self.register_buffer('shift', torch.zeros(1))",
            "",
            f"    def forward(self, {args}):",
            f"        return {s}_Function.apply({args}) * self.scale + self.shift",
        ]
        return ["\n".join(function), "\n".join(module)]
    return [_library_op(shape, launch)]


def _library_op(shape: Shape, launch: str) -> str:
    s, args = shape.id, _signature(shape)
    kinds = {name: kind for name, (kind, _) in SCALARS.items()}
    typed = [f"x{i}: torch.Tensor" for i in range(len(shape.layouts))]
    typed += [f"{name}: {kinds[name]}" for name in shape.scalars]
    typed += ["bias: torch.Tensor | None"] if shape.bias else []
    count = _output_count(shape)
    returns = (
        "None" if shape.inplace else "torch.Tensor" if count == 1 else f"tuple[{', '.join(['torch.Tensor'] * count)}]"
    )
    mutates = "('x0',)" if shape.inplace else "()"
    return "\n".join(
        [
            f"@torch.library.custom_op('drawn::{s}', mutates_args={mutates})",
            f"def {s}_op({', '.join(typed)}) -> {returns}:",
            f"    {'' if shape.inplace else 'return '}{launch}",
            "",
            "",
            f"@{s}_op.register_fake",
            f"def _({args}):",
            f"    return {'None' if shape.inplace else f'{s}_reference({args})'}",
            "",
            "",
            f"def {s}_setup(ctx, inputs, output):",
            "    ctx.inputs = inputs",
            "",
            "",
            f"def {s}_library_backward(ctx, *grads):",
            f"    return {s}_backward(ctx.inputs, None, grads if len(grads) > 1 else grads[0])",
            "",
            "",
            *([] if shape.inplace else [f"{s}_op.register_autograd({s}_library_backward, setup_context={s}_setup)"]),
        ]
    )


def _case(shape: Shape) -> str:
    s = shape.id
    types = {name: SCALARS[name][0] for name in shape.scalars}
    if shape.bias:
        types["bias"] = "torch.Tensor | None"
    # a module with a parameter is a case of its own: its reference takes the parameter, the kernel's op does not
    kernel = [] if shape.shipped == "module" else [f"kernel={s}_kernel", f"launch={s}_launch"]
    fields = [
        f"id={s!r}",
        *kernel,
        f"reference={s}_reference",
        f"make_inputs={s}_inputs",
        f"arg_names={shape.arg_names!r}",
        f"arg_types={{{', '.join(f'{name!r}: {kind}' for name, kind in types.items())}}}",
        "sizes=(37, 101)",
        f"outputs={_output_count(shape)}",
        f"flops=lambda *args: math.prod(args[0]) * {len(shape.layouts)}",
        "meta={'BLOCK_SIZE': 32" + (", 'EVEN': False}" if shape.heuristics else "}"),
        "configs=[triton.Config({'BLOCK_SIZE': 32}), triton.Config({'BLOCK_SIZE': 64})]",
        "key=['n']",
    ]
    if shape.heuristics:
        fields += [
            "heuristics={'EVEN': lambda args: args['n'] % MAX_BLOCK == 0}",
            "config_heuristics={'EVEN': lambda args: args['n'] % args['BLOCK_SIZE'] == 0}",
        ]
    if shape.inplace:
        fields += ["mutates=('x0',)", "autotune_options={'restore_value': ['x0_ptr']}"]
    if shape.backward != "autograd":
        fields += [f"backward={s}_backward"]
    if shape.backward == "kernel":
        fields += [f"backward_kernel={s}_backward_kernel", f"launch_backward={s}_launch_backward"]
    shipped = {
        "function": f"shipped={s}_shipped",
        "autograd": f"shipped={s}_Function.apply",
        "module": f"shipped_module={s}_Module",
        "library": f"shipped=torch.ops.drawn.{s}",
    }
    fields += [shipped[shape.shipped]] if shape.shipped else []
    return f"{s}_case = Case(\n" + "".join(f"    {field},\n" for field in fields) + ")"


# Shapes a drawn run found wrong, kept as examples: a bias added after the scale alpha (the generator had scaled its
# gradient: the harness rejected the case as broken, exit 2), and an nn.Module with a parameter (the reference must
# take it after the op's arguments).
FOUND = [
    Shape(
        id="drawn0",
        layouts=("expanded",),
        scalars=("alpha", "k", "flag"),
        bias="given",
        outputs=1,
        int_output=True,
        inplace=False,
        backward="torch",
        heuristics=False,
        shipped="library",
    ),
    Shape(
        id="drawn1",
        layouts=("contiguous",),
        scalars=(),
        bias=None,
        outputs=1,
        int_output=False,
        inplace=False,
        backward="autograd",
        heuristics=False,
        shipped="module",
    ),
]
