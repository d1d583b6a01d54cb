"""A repro script's second half: the path run the way PyTorch's docs show it (``torch.compile(model, fullgraph=True)``,
``torch.export.export``, ``aoti_compile_and_package`` / ``aoti_load_package``, ``torch.vmap``, ``FlopCounterMode``,
...), every output and gradient compared with the case's PyTorch reference, each artifact called twice. A graph break
is shown with a backend that keeps the graphs Dynamo hands it: the kernel is in none of them."""

from __future__ import annotations

import inspect
from collections.abc import Callable

from harness.case import Case
from harness.cell.paths.training import noncontiguous
from harness.kernel.styles import AS_SHIPPED, CONTROL
from harness.repro.style import LIBRARY

COMPILE = {
    "compile": "",
    "fullgraph": "fullgraph=True",
    "dynamic": "dynamic=True",
    "cudagraphs": 'mode="reduce-overhead"',
    "train_compile": "",
    "cpu_compile": "",
    "subclass_compile": "",
}
HELPERS = '''

def copy_tensor(t):  # a copy with the same strides: a strided view stays strided
    t = t.detach()
    if 0 in t.stride() or t.is_contiguous():
        return t.clone()
    return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device).copy_(t)


def copy(inputs):
    return tuple(copy_tensor(v) if isinstance(v, torch.Tensor) else v for v in inputs)


def build(make):  # seeded: the model and its reference get the same parameters
    torch.manual_seed(0)
    return make().to(DEVICE)


def inputs_of(size=SIZE, seed=SEED):
    return CASE.make_inputs(size, DEVICE, seed)


def expected(inputs):
    with torch.no_grad():
        return build(Reference)(*copy(inputs))


def compare(what, actual, expected):
    try:
        torch.testing.assert_close(actual, expected, atol=ATOL, rtol=RTOL)
    except AssertionError as error:
        raise AssertionError(f"wrong numbers: {what}: {error}") from None


def synchronize():  # a GPU fault of the kernel surfaces here, right after the call that caused it
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def infer(what, run, inputs):  # every call compared: the same inputs twice
    for call in (1, 2):
        with torch.no_grad():
            out = run(*copy(inputs))
        synchronize()
        compare(f"{what}, call {call}", out, expected(inputs))
'''
TRAIN = '''

LAYOUTS = {"": False, " (non-contiguous output grad)": True}  # the output grads as they are, then strided views


NONCONTIGUOUS


def forward_backward(model, inputs, strided):  # backward of each output times a seeded random grad
    inputs = tuple(v.detach().requires_grad_(TAKES_GRAD[i]) if isinstance(v, torch.Tensor) else v
                   for i, v in enumerate(inputs))
    out = model(*inputs)
    outs = tuple(out) if isinstance(out, tuple | list) else (out,)
    gen = torch.Generator().manual_seed(1)
    grads = [torch.randn(o.shape, generator=gen).to(device=o.device, dtype=o.dtype) for o in outs]
    grads = [noncontiguous(g) for g in grads] if strided else grads
    pairs = [(o, g) for o, g in zip(outs, grads) if o.requires_grad] or list(zip(outs, grads))
    torch.autograd.backward([o for o, _ in pairs], [g for _, g in pairs])
    synchronize()
    named = [(f"input {i}", v) for i, v in enumerate(inputs) if isinstance(v, torch.Tensor) and v.requires_grad]
    named += list(model.named_parameters())  # a module's parameters: the reference holds the same ones
    detached = tuple(o.detach() for o in outs) if isinstance(out, tuple | list) else out.detach()
    return detached, [t.grad for _, t in named], [name.removeprefix("_orig_mod.") for name, _ in named]


def train(model):
    reference = build(Reference)
    for layout, strided in LAYOUTS.items():
        model.zero_grad(set_to_none=True)
        reference.zero_grad(set_to_none=True)
        out, grads, names = forward_backward(model, inputs_of(), strided)
        want, want_grads, _ = forward_backward(reference, inputs_of(), strided)
        compare("output", out, want)
        for name, grad, want_grad in zip(names, grads, want_grads, strict=True):
            compare(f"gradient of {name}{layout}", grad, want_grad)
'''.replace("NONCONTIGUOUS", inspect.getsource(noncontiguous).strip())
GRAPHS = '''

GRAPHS = {"dynamo": [], "forward": [], "backward": []}


def keep(kind):  # a backend that keeps each graph Dynamo (or AOTAutograd) hands it, then runs it as it is
    def compiler(gm, example_inputs):
        GRAPHS[kind].append(gm)
        return gm.forward if kind == "dynamo" else make_boxed_func(gm.forward)
    return compiler


def nodes(kinds):  # the calls of the kept graphs of these kinds, their subgraphs' (a Function's bodies) included
    return [node for kind in kinds for gm in GRAPHS[kind] for sub in gm.modules()
            if isinstance(sub, torch.fx.GraphModule) for node in sub.graph.nodes if node.op == "call_function"]


def holds_kernel(*kinds):  # a Triton kernel (or the style's op) among the calls of the kept graphs
    names = [str(node.target) for node in nodes(kinds)]
    return any("triton_kernel_wrapper" in n or "auto_functionalized" in n or n.startswith(OWN_OPS) for n in names)


def kernels_held(*kinds):  # the names of the Triton kernels the kept graphs launch
    from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table

    held = set()
    for node in nodes(kinds):
        if "triton_kernel_wrapper" in str(node.target) and "kernel_idx" in node.kwargs:
            kernel = kernel_side_table.get_kernel(node.kwargs["kernel_idx"])
            while not hasattr(kernel, "__code__") and (getattr(kernel, "fn", None) or getattr(kernel, "kernel", None)):
                kernel = getattr(kernel, "fn", None) or getattr(kernel, "kernel")
            held.add(getattr(kernel, "__name__", type(kernel).__name__))
    return held
'''


def inference(path: str) -> list[str]:
    """``check()``'s body for a path that runs the model without grad."""
    export = "program = torch.export.export(build(Model).eval(), copy(inputs), {}strict={})"
    package = 'package = torch._inductor.aoti_compile_and_package(program, package_path=tempfile.mktemp(".pt2"))'
    strict = "nonstrict" not in path
    if path in ("eager", "cpu_fallback"):
        return ["infer('output', build(Model), inputs_of())"]
    if path in ("compile", "fullgraph", "cpu_compile"):
        return ["infer('output', torch.compile(build(Model){options}), inputs_of())"]
    if path == "dynamic":
        return ["compiled = torch.compile(build(Model){options})", "for size in SIZES:",
                "    infer(f'output at size {size}', compiled, inputs_of(size))"]
    if path == "cudagraphs":
        return ["compiled = torch.compile(build(Model){options})", "for seed in range(3):",
                "    inputs = inputs_of(seed=seed)", "    with torch.no_grad():",
                "        out = compiled(*copy(inputs))",
                "        out = tuple(o.clone() for o in out) if isinstance(out, tuple | list) else out.clone()",
                "    compare(f'output of call {seed + 1}', out, expected(inputs))"]
    lines = ["inputs = inputs_of()"]
    if path in ("export_strict", "export_nonstrict"):
        return [*lines, export.format("", strict), "infer('output', program.module(), inputs)"]
    if path == "export_saveload":
        return [*lines, export.format("", True), "file = tempfile.mktemp('.pt2')", "torch.export.save(program, file)",
                "del program", "infer('output', torch.export.load(file).module(), inputs)"]
    if path in ("aoti_strict", "aoti_nonstrict"):
        return [*lines, export.format("", strict), package,
                "infer('output', torch._inductor.aoti_load_package(package), inputs)"]
    if path == "aoti_standalone":
        return [*lines, export.format("", True), package, "infer('output', standalone(package), inputs)"]
    dynamic = "dynamic_shapes=DYNAMIC, "
    if path in ("export_dynamic_strict", "export_dynamic_nonstrict", "aoti_dynamic"):
        lines += [export.format(dynamic, strict)]
        run = "program.module()"
        if path == "aoti_dynamic":
            lines += [package, "runner = torch._inductor.aoti_load_package(package)"]
            run = "runner"
        return [*lines, f"infer(f'output at traced size {{SIZE}}', {run}, inputs)", "for size in OTHER_SIZES:",
                f"    infer(f'output at size {{size}}', {run}, inputs_of(size))"]
    raise KeyError(path)


STANDALONE = '''

def standalone(package):  # a fresh process that imports torch only loads the package and runs it
    def run(*inputs):
        folder = tempfile.mkdtemp()
        torch.save(list(inputs), f"{folder}/in.pt")
        code = ("import sys, torch; inputs = torch.load(sys.argv[2])"
                "; runner = torch._inductor.aoti_load_package(sys.argv[1])"
                "; torch.save(runner(*inputs), sys.argv[3])")
        done = subprocess.run([sys.executable, "-c", code, package, f"{folder}/in.pt", f"{folder}/out.pt"])
        if done.returncode:
            raise RuntimeError(f"standalone process exited {done.returncode}")
        return torch.load(f"{folder}/out.pt")
    return run
'''


def other(path: str, case: Case, style: str, op: str) -> tuple[list[str], str]:
    """``check()``'s body (and extra definitions) for the training, flop, subclass, vmap and opcheck paths."""
    return OTHER_PATHS[path](path, case, style, op)


def _train(path: str, case: Case, style: str, op: str) -> tuple[list[str], str]:
    model = "torch.compile(build(Model){options})" if path == "train_compile" else "build(Model)"
    return [f"train({model})"], TRAIN


def _flop_counter(path: str, case: Case, style: str, op: str) -> tuple[list[str], str]:
    every = style == AS_SHIPPED
    lines = [
        "inputs = inputs_of()",
        "want = expected(inputs)",
        "with FlopCounterMode(display=False) as counter, torch.no_grad():  # one call's flops",
        "    out = build(Model)(*copy(inputs))",
        "compare('output', out, want)",
        f"counted = sum(n for op, n in counter.get_flop_counts().get('Global', {{}}).items()"
        f" if {every!r} or str(op).startswith({LIBRARY + '.'!r}))",
    ]
    if style != CONTROL:
        lines += ["with torch.no_grad():", "    build(Spy)(*copy(inputs))",
                  "if counted != sum(DECLARED):",
                  "    raise AssertionError(f'FlopCounterMode counted {counted} for the op, the case declares "
                  "{sum(DECLARED)}')"]
    return lines, ""


def _subclass(path: str, case: Case, style: str, op: str) -> tuple[list[str], str]:
    model = "torch.compile(build(Model){options})" if path == "subclass_compile" else "build(Model)"
    return [
        "first, second = inputs_of(), inputs_of(seed=SEED + 1)",
        "second = tuple(b if isinstance(b, torch.Tensor) else a for a, b in zip(first, second))",
        "both = tuple(TwoTensor(copy_tensor(a), copy_tensor(b)) if isinstance(a, torch.Tensor) else a"
        " for a, b in zip(first, second))",
        f"out = {model}(*both)",
        "synchronize()",
        "outs = tuple(out) if isinstance(out, tuple | list) else (out,)",
        "for index, one in enumerate(outs):",
        "    if not isinstance(one, TwoTensor):",
        "        raise AssertionError(f'wrong numbers: output {index} is a {type(one).__name__}, not a TwoTensor')",
        "single = lambda values: values[0] if len(values) == 1 else values",
        "compare('output .a', single(tuple(o.a for o in outs)), expected(first))",
        "compare('output .b', single(tuple(o.b for o in outs)), expected(second))",
    ], ""


def _vmap(path: str, case: Case, style: str, op: str) -> tuple[list[str], str]:
    return [
        "items = [inputs_of(seed=SEED + k) for k in range(3)]",
        "items = [tuple(b if isinstance(b, torch.Tensor) else a for a, b in zip(items[0], item))",
        "         for item in items]",
        "batched = tuple(torch.stack(v) if isinstance(v[0], torch.Tensor) else v[0] for v in zip(*items))",
        "in_dims = tuple(0 if isinstance(v, torch.Tensor) else None for v in batched)",
        "with torch.no_grad():",
        "    out = torch.vmap(build(Model), in_dims=in_dims)(*batched)",
        "synchronize()",
        "for k, inputs in enumerate(items):",
        "    item = tuple(o[k] for o in out) if isinstance(out, tuple | list) else out[k]",
        "    compare(f'output of item {k}', item, expected(inputs))",
    ], ""


def _opcheck(path: str, case: Case, style: str, op: str) -> tuple[list[str], str]:
    grad = not case.mutates
    extra = " + CASE.shipped_args" if style == AS_SHIPPED and case.shipped_args else ""
    return [
        f"inputs = tuple(v.detach().requires_grad_(TAKES_GRAD[i] and {grad!r}) if isinstance(v, torch.Tensor)",
        "               else v for i, v in enumerate(inputs_of()))",
        f"torch.library.opcheck({op or 'None'}, tuple(inputs){extra})",
    ], ""


# check()'s body of each path that is not a plain inference of the model
OTHER_PATHS: dict[str, Callable[[str, Case, str, str], tuple[list[str], str]]] = {
    "train_eager": _train,
    "train_compile": _train,
    "flop_counter": _flop_counter,
    "subclass_eager": _subclass,
    "subclass_compile": _subclass,
    "vmap": _vmap,
    "opcheck": _opcheck,
}
