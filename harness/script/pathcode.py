"""The path as a short repro script writes it: the few calls of the path (harness/cell/paths/) on ``model`` and the
checks the cell's verdict makes, in public API: every output (and gradient) against the reference with
``torch.testing.assert_close``, the graphs Inductor compiled searched for the op, FlopCounterMode's count against
the case's formula. Each check raises with the words the cell's status is confirmed by ("wrong numbers:",
"graph break:", "FlopCounterMode counted")."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from harness.case import Case
from harness.kernel.model import parameters
from harness.script.usercode import NotShort
from harness.spec import CUDAGRAPH_CALLS, VMAP_BATCH

COMPILED = ("compile", "fullgraph", "dynamic", "cudagraphs", "cpu_compile", "subclass_compile", "train_compile")

COPIED = """def copied(inputs):  # fresh copies of the tensors for every call, their strides kept
    return tuple((v.detach().clone() if v.is_contiguous() or 0 in v.stride() else torch.empty_strided(
        v.shape, v.stride(), dtype=v.dtype, device=v.device).copy_(v)) if isinstance(v, torch.Tensor) else v
        for v in inputs)"""
CHECK = """def check(what, out, expected):  # every output against the reference's, on the CPU
    cpu = lambda v: tuple(map(cpu, v)) if isinstance(v, tuple | list) else v.detach().cpu() if torch.is_tensor(v) else v
    try:
        torch.testing.assert_close(cpu(out), cpu(expected), atol=ATOL, rtol=RTOL)
    except AssertionError as error:
        raise AssertionError(f"wrong numbers: {what}: {' '.join(str(error).split())}") from None"""
INDUCTOR = """graphs, backward_graphs = [], []


def inductor(**patches):  # torch.compile's Inductor, keeping the graphs it compiles to look for the op in
    def backend(gm, example_inputs):
        graphs.append(gm)
        with torch._functorch.config.patch(enable_autograd_cache=False):  # each graph compiled, none from a cache
            return compile_fx(gm, example_inputs, INNER, config_patches=patches or None)
    return backend


"""
HELD = """def held(graphs):  # WHETHER
    nodes = [n for gm in graphs for m in gm.modules() if isinstance(m, torch.fx.GraphModule) for n in m.graph.nodes]
    words = ("triton_kernel_wrapper", "auto_functionalized")
    return RETURN"""
HELD_OP = HELD.replace("WHETHER", "whether a compiled graph calls the op, or a Triton kernel").replace(
    "RETURN",
    """any(n.op == "call_function" and (any(w in getattr(n.target, "__name__", "") for w in words)
               or f"{n.target}.".startswith(OP_PREFIXES)) for n in nodes)""",
)
# the op as shipped, no library op: a graph break may leave any of its kernels outside the graphs
UNBROKEN = HELD.replace(
    "WHETHER", "whether a compiled graph calls a Triton kernel, and no graph break left one outside"
).replace(
    "RETURN",
    """not sum(torch._dynamo.utils.counters["graph_break"].values()) and any(
        n.op == "call_function" and any(w in getattr(n.target, "__name__", "") for w in words) for n in nodes)""",
)
FLOPS = """def counted_as_declared(counted, declared):  # FlopCounterMode's count against the case's formula
    if counted != declared:
        raise AssertionError(f"FlopCounterMode counted {counted} for the op, the case declares {declared}")"""
EXPORT = "export = torch.export.export"
AOTI = "from torch._inductor import aoti_compile_and_package, aoti_load_package"
FRESH_PROCESS = """def in_fresh_process(package, inputs):  # a process that imports torch only loads and runs it
    folder = tempfile.mkdtemp()
    torch.save(list(inputs), f"{folder}/in.pt")
    loader = ("import sys, torch, torch._inductor.package; runner = torch._inductor.aoti_load_package(sys.argv[1]); "
              "torch.save(runner(*torch.load(sys.argv[2])), sys.argv[3])")
    done = subprocess.run([sys.executable, "-c", loader, package, f"{folder}/in.pt", f"{folder}/out.pt"],
                          capture_output=True, text=True)
    if done.returncode < 0:
        os.kill(os.getpid(), -done.returncode)  # it died of a signal: so do we
    if done.returncode:
        said = (done.stderr.strip().splitlines() or ["(nothing on stderr)"])[-1]
        raise RuntimeError(f"standalone process exited {done.returncode}: {said}")
    return torch.load(f"{folder}/out.pt")"""
SAVELOAD = "export, save, load = torch.export.export, torch.export.save, torch.export.load"
PLAIN_INDUCTOR = """def inductor(**patches):  # torch.compile's default backend, Inductor (a mode's options as patches)
    return lambda gm, example_inputs: compile_fx(gm, example_inputs, config_patches=patches or None)"""
INNER = """def inner(gm, example_inputs, *args, **kwargs):  # Inductor's compile of each graph, the backward's kept
    (backward_graphs if kwargs.get("is_backward") else []).append(gm)
    return compile_fx_inner(gm, example_inputs, *args, **kwargs)"""
TRAIN = """def noncontiguous(grad):  # the grad's values in a non-contiguous view (one element: as it is)
    if grad.numel() <= 1:
        return grad
    wide = grad.new_zeros(*grad.shape[:-1], 2 * grad.shape[-1])
    wide[..., ::2] = grad
    return wide[..., ::2]


def forward_backward(model, strided):  # the same seeded output grads for the op and the reference
    inputs = tuple(v.detach().requires_grad_(v.is_floating_point() and i not in NO_GRAD) if torch.is_tensor(v) else v
                   for i, v in enumerate(make_inputs(SIZE, DEVICE, SEED)))
    raw = model(*inputs)
    outs = raw if isinstance(raw, tuple | list) else (raw,)
    gen = torch.Generator().manual_seed(1)
    grads = [torch.randn(o.shape, generator=gen).to(device=o.device, dtype=o.dtype) for o in outs]
    grads = [noncontiguous(g) for g in grads] if strided else grads
    wanted = [i for i, o in enumerate(outs) if o.requires_grad] or range(len(outs))
    torch.autograd.backward([outs[i] for i in wanted], [grads[i] for i in wanted])
    named = [(f"input {i}", v) for i, v in enumerate(inputs) if isinstance(v, torch.Tensor) and v.requires_grad]
    named += [(n.removeprefix("_orig_mod."), p) for n, p in model.named_parameters()]
    return (tuple(o.detach() for o in outs) if isinstance(raw, tuple | list) else raw.detach()), named"""


@dataclass
class Path:
    """The helpers the path's main needs (source blocks), its main's lines, and its imports."""

    helpers: list[str] = field(default_factory=list)
    main: list[str] = field(default_factory=list)
    imports: set[str] = field(default_factory=set)
    returns: str = ""  # what main returns: the artifact it checked (a runner times it, on the first inputs made)


@dataclass(frozen=True)
class Checks:
    """What of the style the checks look for: the op's prefixes in a graph (none: the control), whether the op is
    a library's own kernels (graph breaks then count), whether a backward kernel must be compiled too, whether
    FlopCounterMode counts every op (the op as shipped) or the script's library op only."""

    kernel: bool = False  # the style has a kernel of its own to look for in the graphs (not the control)
    op_prefixes: tuple[str, ...] = ()
    shipped_kernels: bool = False
    backward_kernel: bool = False
    flops: str | None = None  # the flop formula's name in the script (None: no flop check)
    every_op: bool = False
    library: str | None = None  # the op's name in torch.ops, for the flop count
    reference: str = "reference"  # the reference's name in the script (the flop count's spy calls it)
    shipped_module: bool = False  # the reference takes a shipped module's parameters after the op's arguments
    parameters: bool = False  # the module may hold parameters (the case's own module, or one shipped)
    module: str | None = None  # the case's own module factory's name, where it has one
    opcheck_args: str = "inputs"  # what opcheck passes the op
    make_inputs: str = "make_inputs"  # the case's input maker's name in the script
    traced: int | None = None  # the size the cell ran (its example; None: the case's first), which export traces at


def _infer(model: str, what: str, calls: int = 2, inputs: str = "inputs", expected: str = "expected") -> list[str]:
    if calls == 1:
        return ["with torch.no_grad():", f"    out = {model}(*copied({inputs}))", f'check("{what}", out, {expected})']
    lines = [
        f"for call in range(1, {calls + 1}):",
        "    with torch.no_grad():",
        f"        out = {model}(*copied({inputs}))",
    ]
    label = f'"{what}" if call == 1 else f"{what}, call {{call}}"' if calls > 1 else f'"{what}"'
    return [*lines, f"    check({label}, out, {expected})"]


def _expect(inputs: str = "inputs", name: str = "expected") -> list[str]:
    return ["with torch.no_grad():", f"    {name} = reference_model(*copied({inputs}))"]


def _compiled(case: Case, checks: Checks, options: str = "", mode: str | None = None) -> str:
    patches = f'**torch._inductor.list_mode_options("{mode}")' if mode else ""
    return f"torch.compile(model, backend=inductor({patches}){options})"


def _held_check(checks: Checks, trained: bool) -> list[str]:
    if not checks.kernel:
        return []
    lines = [
        'breaks = sum(torch._dynamo.utils.counters["graph_break"].values())',
        "if not held(graphs):",
        '    raise AssertionError(f"graph break: the kernel ran outside the compiled graph ({breaks} graph break(s))")',
    ]
    if trained and checks.backward_kernel:
        lines += [
            "if not held(backward_graphs):",
            '    raise AssertionError("graph break: the backward kernel ran outside the compiled graph")',
        ]
    return lines


def path_code(case: Case, path: str, checks: Checks, op: str, trainable: bool) -> Path:
    """The main of ``path`` (``op``: the name the script binds the style's op to, for opcheck; ``trainable``:
    whether the op takes gradients there)."""
    build = PATHS.get(path)
    if build is None:
        raise NotShort(f"no short form of path {path}")
    found = build(case, checks, path, op, trainable)
    if any(line.startswith("program = export(") for line in found.main) and SAVELOAD not in found.helpers:
        found.helpers.insert(0, EXPORT)
    if path in COMPILED and checks.kernel:
        backward = path == "train_compile" and checks.backward_kernel
        held = UNBROKEN if checks.shipped_kernels else HELD_OP.replace("OP_PREFIXES", repr(checks.op_prefixes))
        helper = INDUCTOR + held
        inner = "inner_compile=inner" if backward else ""
        found.helpers.insert(0, helper.replace("INNER", inner).replace("example_inputs, , ", "example_inputs, "))
        if backward:
            found.helpers.insert(1, INNER)
        found.imports.add("from torch._inductor.compile_fx import compile_fx" + (", compile_fx_inner" * backward))
        found.main += _held_check(checks, path == "train_compile")
    elif path in COMPILED:  # the control: no kernel to look for
        found.helpers.insert(0, PLAIN_INDUCTOR)
        found.imports.add("from torch._inductor.compile_fx import compile_fx")
    return found


PathWriter = Callable[[Case, Checks, str, str, bool], Path]
PATHS: dict[str, PathWriter] = {}


def writes(*names: str) -> Callable[[PathWriter], PathWriter]:
    def register(writer: PathWriter) -> PathWriter:
        PATHS.update(dict.fromkeys(names, writer))
        return writer

    return register


@writes("eager", "cpu_fallback")
def _eager(case: Case, checks: Checks, path: str, op: str, trainable: bool) -> Path:
    return Path([COPIED, CHECK], [*_expect(), *_infer("model", "output")], returns="model")


@writes("compile", "cpu_compile")
def _compile(case: Case, checks: Checks, path: str, op: str, trainable: bool) -> Path:
    main = [*_expect(), f"compiled = {_compiled(case, checks)}", *_infer("compiled", "output")]
    return Path([COPIED, CHECK], main, returns="compiled")


@writes("fullgraph")
def _fullgraph(case: Case, checks: Checks, path: str, op: str, trainable: bool) -> Path:
    main = [*_expect(), f"compiled = {_compiled(case, checks, ', fullgraph=True')}", *_infer("compiled", "output")]
    return Path([COPIED, CHECK], main, returns="compiled")


@writes("dynamic")
def _dynamic(case: Case, checks: Checks, path: str, op: str, trainable: bool) -> Path:
    main = [
        f"compiled = {_compiled(case, checks, ', dynamic=True')}",
        f"for size in {list(case.sizes)!r}:",
        f"    inputs = {checks.make_inputs}(size, DEVICE, SEED)",
    ]
    body = [*_expect(), *_infer("compiled", "output at size {size}")]
    body = [line.replace('"output at size {size}"', 'f"output at size {size}"') for line in body]
    return Path([COPIED, CHECK], [*main, *(f"    {line}" for line in body)], returns="compiled")


@writes("cudagraphs")
def _cudagraphs(case: Case, checks: Checks, path: str, op: str, trainable: bool) -> Path:
    main = [
        f"compiled = {_compiled(case, checks, mode='reduce-overhead')}",
        f"for seed in range({CUDAGRAPH_CALLS}):  # fresh inputs each call; the next replay overwrites the output",
        f"    inputs = {checks.make_inputs}(SIZE, DEVICE, seed)",
        "    with torch.no_grad():",
        "        out = compiled(*copied(inputs))",
        "        out = tuple(o.clone() for o in out) if isinstance(out, tuple | list) else out.clone()",
        "        expected = reference_model(*copied(inputs))",
        '    check(f"output of call {seed + 1}", out, expected)',
    ]
    return Path([COPIED, CHECK], main, returns="compiled")


def _export_lines(case: Case, strict: bool, dynamic: bool, named: bool = True) -> list[str]:
    """The export of ``model``; ``dynamic``: its dims the case's size drives dynamic, keyed by the case's
    parameter names where the script writes ``model``'s forward (``named``), else by the forward's own names (a
    shipped module's or the case's own module's, which may be other names than the case's), as the cell keys them."""
    lines = ["model.eval()"]
    shapes = ""
    if dynamic:
        low, high = case.bounds
        dims = case.size_dims()
        lines.append(f'size = torch.export.Dim("size", min={low}, max={high})')
        if named:
            specs = ", ".join(f'"{p}": {_spec(d)}' for p, d in zip(parameters(case), dims, strict=True))
            shapes = f", dynamic_shapes={{{specs}}}"
        else:
            each = ", ".join(_spec(d) for d in dims) + ("," if len(dims) == 1 else "")
            lines.append(f"specs = ({each})  # one per input")
            lines.append("specs = inspect.signature(model.forward).bind(*specs).arguments  # by forward's own names")
            shapes = ", dynamic_shapes=specs"
    return [*lines, f"program = export(model, copied(inputs){shapes}, strict={strict})"]


def _binding(checks: Checks) -> set[str]:
    """What a dynamic export's script imports to key its dims by the forward's own names (``_export_lines``)."""
    return {"import inspect"} if checks.parameters else set()


def _spec(dims: tuple[int, ...]) -> str:
    return "{" + ", ".join(f"{d}: size" for d in dims) + "}" if dims else "None"


def _sizes(case: Case, checks: Checks, runner: str) -> list[str]:
    traced = case.sizes[0] if checks.traced is None else checks.traced  # as the cell: harness/cell/paths/export.py
    body = [*_expect("at"), *_infer(runner, "output at size {size}", inputs="at")]
    body = [line.replace('"output at size {size}"', 'f"output at size {size}"') for line in body]
    return [
        f"for size in {[traced, *case.sizes_around(traced)]!r}:",
        f"    at = inputs if size == SIZE else {checks.make_inputs}(size, DEVICE, SEED)",
        *(f"    {b}" for b in body),
    ]


def _package(target: str) -> list[str]:
    where = f'os.path.join(tempfile.mkdtemp(), "{target}.pt2")'
    return [f"package = aoti_compile_and_package(program, package_path={where})"]


@writes("export_strict", "export_nonstrict")
def _export(case: Case, checks: Checks, path: str, op: str, trainable: bool) -> Path:
    return Path(
        [COPIED, CHECK],
        [*_expect(), *_export_lines(case, "nonstrict" not in path, False), *_infer("program.module()", "output")],
        returns="program.module()",
    )


@writes("export_dynamic_strict", "export_dynamic_nonstrict")
def _export_dynamic(case: Case, checks: Checks, path: str, op: str, trainable: bool) -> Path:
    return Path(
        [COPIED, CHECK],
        [
            *_export_lines(case, "nonstrict" not in path, True, not checks.parameters),
            "runner = program.module()",
            *_sizes(case, checks, "runner"),
        ],
        _binding(checks),
        returns="runner",
    )


@writes("aoti_strict", "aoti_nonstrict")
def _aoti(case: Case, checks: Checks, path: str, op: str, trainable: bool) -> Path:
    main = [
        *_expect(),
        *_export_lines(case, "nonstrict" not in path, False),
        *_package("model"),
        "runner = aoti_load_package(package)",
        *_infer("runner", "output"),
    ]
    return Path([COPIED, CHECK], main, {"import os", "import tempfile", AOTI}, returns="runner")


@writes("aoti_dynamic")
def _aoti_dynamic(case: Case, checks: Checks, path: str, op: str, trainable: bool) -> Path:
    main = [
        *_export_lines(case, True, True, not checks.parameters),
        *_package("model"),
        "runner = aoti_load_package(package)",
        *_sizes(case, checks, "runner"),
    ]
    return Path([COPIED, CHECK], main, {"import os", "import tempfile", AOTI, *_binding(checks)}, returns="runner")


@writes("aoti_standalone")
def _aoti_standalone(case: Case, checks: Checks, path: str, op: str, trainable: bool) -> Path:
    main = [
        *_expect(),
        *_export_lines(case, True, False),
        *_package("model"),
        'check("output", in_fresh_process(package, inputs), expected)',
    ]
    compiles = AOTI.replace(", aoti_load_package", "")
    imports = {"import os", "import subprocess", "import sys", "import tempfile", compiles}
    return Path([COPIED, CHECK, FRESH_PROCESS], main, imports)


@writes("export_saveload")
def _saveload(case: Case, checks: Checks, path: str, op: str, trainable: bool) -> Path:
    main = [
        *_expect(),
        *_export_lines(case, True, False),
        'target = os.path.join(tempfile.mkdtemp(), "model.pt2")',
        "save(program, target)",
        "del program",
        "loaded = load(target)",
        *_infer("loaded.module()", "output"),
    ]
    return Path([SAVELOAD, COPIED, CHECK], main, {"import os", "import tempfile"}, returns="loaded.module()")


@writes("train_eager", "train_compile")
def _train(case: Case, checks: Checks, path: str, op: str, trainable: bool) -> Path:
    compiled = "compile" in path
    no_grad = tuple(case.arg_names.index(name) for name in case.no_grad)
    main = [
        f"model = {_compiled(case, checks)}" if compiled else "",
        'for layout, strided in (("", False), (" (non-contiguous output grad)", True)):',
        "    out, grads = forward_backward(model, strided)",
        "    expected, expected_grads = forward_backward(reference_model, strided)",
        '    check("output", out, expected)',
        "    for (name, value), (_, reference_value) in zip(grads, expected_grads):  # a missing one: None mismatch",
        '        check(f"gradient of {name}{layout}", value.grad, reference_value.grad)',
        *(
            ["    model.zero_grad(set_to_none=True)", "    reference_model.zero_grad(set_to_none=True)"]
            if checks.parameters
            else []
        ),
    ]
    helper = TRAIN.replace("NO_GRAD", repr(no_grad)).replace("make_inputs(", f"{checks.make_inputs}(")
    return Path([CHECK, helper], [line for line in main if line], returns="model")


@writes("flop_counter")
def _flop_counter(case: Case, checks: Checks, path: str, op: str, trainable: bool) -> Path:
    main = [
        *_expect(),
        "counter = FlopCounterMode(display=False)",
        "with counter:",
        *(f"    {line}" for line in _infer("model", "output", calls=1)),
    ]
    imports = {"from torch.utils.flop_counter import FlopCounterMode"}
    if checks.flops is None:
        return Path([COPIED, CHECK], main, imports)
    mine = "" if checks.every_op else f" if str(op).startswith('{checks.library}.')"
    shapes = "*(tuple(a.shape) if isinstance(a, torch.Tensor) else a for a in args)"
    main += [
        'counts = counter.get_flop_counts().get("Global", {})',
        f"counted = sum(n for op, n in counts.items(){mine})",
        "declared = 0",
        "",
        "def spy(*args):  # the case's formula over the shapes the op is called with",
        "    nonlocal declared",
        f"    declared += {checks.flops}({shapes})",
        f"    return {checks.reference}(*args{', *reference_model.shipped.parameters()' * checks.shipped_module})",
        "",
        "with torch.no_grad():",
        f"    {checks.module}(spy).to(DEVICE)(*copied(inputs))" if checks.module else "    spy(*copied(inputs))",
        "counted_as_declared(counted, declared)",
    ]
    return Path([COPIED, CHECK, FLOPS], main, imports)


@writes("subclass_eager", "subclass_compile")
def _subclass(case: Case, checks: Checks, path: str, op: str, trainable: bool) -> Path:
    runner = _compiled(case, checks) if "compile" in path else "model"
    main = [
        *_expect(),
        "second = tuple(b if isinstance(b, torch.Tensor) else a for a, b in zip(inputs,"
        f" {checks.make_inputs}(SIZE, DEVICE, SEED + 1)))",
        *_expect("second", "expected_b"),
        "both = tuple(TwoTensor(*copied((a, b))) if isinstance(a, torch.Tensor) else a for a, b in zip(inputs,"
        " second))",
        "with torch.no_grad():",
        f"    out = {runner}(*both)",
        'torch.cuda.synchronize() if DEVICE == "cuda" else None  # a fault of the kernel surfaces here',
        "outs = out if isinstance(out, tuple | list) else (out,)",
        "several = isinstance(out, tuple | list)",
        "for i, one in enumerate(outs):",
        "    if not isinstance(one, TwoTensor):",
        '        what = f"output {i}" if several else "output"',
        '        raise AssertionError(f"wrong numbers: {what}: expected a TwoTensor, got {type(one).__name__}")',
        'check("output .a", tuple(o.a for o in outs) if several else out.a, expected)',
        'check("output .b", tuple(o.b for o in outs) if several else out.b, expected_b)',
    ]
    return Path([COPIED, CHECK], main, {"from torch.testing._internal.two_tensor import TwoTensor"})


@writes("vmap")
def _vmap(case: Case, checks: Checks, path: str, op: str, trainable: bool) -> Path:
    main = [
        "items = [inputs] + [tuple(b if isinstance(b, torch.Tensor) else a for a, b in zip(inputs,"
        f" {checks.make_inputs}("
        f"SIZE, DEVICE, SEED + k))) for k in range(1, {VMAP_BATCH})]",
        "def stacked(v):  # along a new dim 0, each item keeping its dim order in memory (a transposed one stays so)",
        "    order = sorted(range(v[0].dim()), key=lambda d: -v[0].stride(d))",
        "    batch = torch.stack([t.permute(order) for t in v])",
        "    return batch.permute(0, *(order.index(d) + 1 for d in range(v[0].dim())))",
        "batched = tuple(stacked(v) if isinstance(v[0], torch.Tensor) else v[0] for v in zip(*items))",
        "in_dims = tuple(0 if isinstance(v, torch.Tensor) else None for v in batched)",
        "with torch.no_grad():",
        "    out = torch.vmap(model, in_dims=in_dims)(*batched)",
        'torch.cuda.synchronize() if DEVICE == "cuda" else None  # a fault of the kernel surfaces here',
        "for one in out if isinstance(out, tuple | list) else (out,):",
        f"    if not isinstance(one, torch.Tensor) or one.shape[:1] != ({VMAP_BATCH},):",
        '        got = f"shape {tuple(one.shape)}" if isinstance(one, torch.Tensor) else type(one).__name__',
        f'        raise AssertionError(f"wrong numbers: output: expected {VMAP_BATCH} items along dim 0, got {{got}}")',
        "for k, item in enumerate(items):",
        *(f"    {line}" for line in _expect("item")),
        '    check(f"output of item {k}", tuple(o[k] for o in out) if isinstance(out, tuple | list) else out[k],'
        " expected)",
    ]
    return Path([COPIED, CHECK], main)


@writes("opcheck")
def _opcheck(case: Case, checks: Checks, path: str, op: str, trainable: bool) -> Path:
    if not op:
        raise NotShort("opcheck of no torch.library op is a skip")
    no_grad = tuple(case.arg_names.index(name) for name in case.no_grad)
    main = []
    if trainable:
        kept = f" and i not in {no_grad!r}" if no_grad else ""
        main = [
            f"inputs = tuple(v.detach().requires_grad_(v.is_floating_point(){kept})"
            " if isinstance(v, torch.Tensor) else v for i, v in enumerate(inputs))"
        ]
    opcheck = f"torch.library.opcheck({op}, {checks.opcheck_args})  # the op against itself"
    return Path([COPIED, CHECK], [*_expect(), *_infer("model", "output", calls=1), *main, opcheck])
