"""The subsystems group: CPU tensors and PyTorch machinery around the op (flop counting, ...)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from harness.case import Inputs, as_tuple, copy_inputs, copy_tensor
from harness.cell.context import CellSkip
from harness.cell.paths.common import _compiled, _infer, path
from harness.cell.paths.compilation import compile_, eager
from harness.kernel.compare import Mismatch, nth
from harness.kernel.model import build_model
from harness.kernel.styles import AS_SHIPPED, is_library_op
from harness.spec import VMAP_BATCH

if TYPE_CHECKING:
    from harness.cell.context import Cell


GROUP = "subsystems"


@path
def cpu_fallback(cell: Cell) -> None:
    """CPU tensors, eager: works where the style has a CPU kernel."""
    eager(cell)


@path
def cpu_compile(cell: Cell) -> None:
    """CPU tensors under ``torch.compile``."""
    compile_(cell)


@path
def flop_counter(cell: Cell) -> None:
    """``FlopCounterMode`` must report the op's declared flops (the control row checks the output only): the
    harness op's for a re-wrapped style, every op's for the op as shipped. A skip where the case declares none.
    The path records both counts; the verdict (harness/cell/verdict.py) compares them."""
    from torch.utils.flop_counter import FlopCounterMode

    if cell.case.flops is None:
        raise CellSkip("the case declares no flops (Case.flops): nothing to compare FlopCounterMode's count with")
    inputs = cell.inputs()
    model = cell.model()
    expected = cell.expected(inputs)  # before the count: FlopCounterMode counts the op's flops alone
    cell.stage = "run"
    counter = FlopCounterMode(display=False)
    with counter:  # one call: the count is of one call's flops
        _infer(cell, model, inputs, calls=1, expected=expected)
    every = cell.style == AS_SHIPPED
    counts = counter.get_flop_counts().get("Global", {}).items()
    counted = sum(n for op, n in counts if every or str(op).startswith("harness."))
    cell.saw(flops=counted, declared_flops=_declared_flops(cell, inputs))


def _declared_flops(cell: Cell, inputs: Inputs) -> int:
    """The case's flop formula over the shapes the op is really called with inside the module (its other
    arguments as they are, as FlopCounterMode hands them to a registered formula)."""
    declared = 0
    flops = cell.case.flops
    assert flops is not None
    parameters = tuple(parameter.to(cell.device) for parameter in cell.case.shipped_parameters())

    def spy(*args: Any) -> Any:
        nonlocal declared
        declared += flops(*(tuple(a.shape) if isinstance(a, torch.Tensor) else a for a in args))
        return cell.case.reference(*args, *parameters)  # a shipped module's parameters after the op's arguments

    with torch.no_grad():
        build_model(cell.case, spy).to(cell.device)(*copy_inputs(inputs))
    return declared


def _input_sets(cell: Cell, count: int) -> list[Inputs]:
    """``count`` input sets of the cell's size: the tensors of its seed and the next ones, the other arguments
    (scalars, ``None``) held fixed at the first set's, since one call hands the op one set of scalars for the
    whole batch (a seeded dropout's ``seed`` would otherwise differ between the op's call and each reference)."""
    seed = cell.example[1] if cell.example else 0
    first = cell.inputs()
    return [first] + [
        tuple(b if isinstance(b, torch.Tensor) else a for a, b in zip(first, cell.inputs(seed=seed + k), strict=True))
        for k in range(1, count)
    ]


def _halves(cell: Cell) -> tuple[Inputs, Inputs, Inputs]:
    """Two input sets (``_input_sets``: the scalars fixed at the first's), and each tensor input as a
    ``TwoTensor`` of the two: the wrapper subclass PyTorch's own tests use (every aten op runs once per half)."""
    from torch.testing._internal.two_tensor import TwoTensor

    first, second = _input_sets(cell, 2)
    both = tuple(
        TwoTensor(copy_tensor(a), copy_tensor(b)) if isinstance(a, torch.Tensor) else a
        for a, b in zip(first, second, strict=True)
    )
    return first, second, both


def _run_subclass(cell: Cell, model: Any) -> None:
    """Call ``model`` on ``TwoTensor`` inputs; every output must be a ``TwoTensor`` whose ``.a`` and ``.b`` each
    equal the reference applied to that half's inputs."""
    from torch.testing._internal.two_tensor import TwoTensor

    first, second, both = _halves(cell)
    with torch.no_grad():
        out = model(*both)
    cell.synchronize()
    outs = as_tuple(out)
    for index, one in enumerate(outs):
        if not isinstance(one, TwoTensor):
            cell.stage = "compare"
            what = nth("output", index) if isinstance(out, tuple | list) else "output"
            raise Mismatch(f"{what}: expected a TwoTensor, got {type(one).__name__}")
    several = isinstance(out, tuple | list)
    cell.compare("output .a", tuple(one.a for one in outs) if several else out.a, cell.expected(first))
    cell.compare("output .b", tuple(one.b for one in outs) if several else out.b, cell.expected(second))


@path
def subclass_eager(cell: Cell) -> None:
    """The module called on tensor-subclass inputs (``TwoTensor``: a wrapper holding two tensors; the scalars are
    the first half's for both), eagerly; both halves of the output compared."""
    model = cell.model()
    cell.stage = "run"
    with cell.timed("run_seconds"):
        _run_subclass(cell, model)


@path
def subclass_compile(cell: Cell) -> None:
    """The module under ``torch.compile`` called on ``TwoTensor`` inputs; both halves of the output compared."""
    model = _compiled(cell)
    cell.stage = "trace"  # the backend moves it on to compile, then run
    with cell.timed("compile_seconds"):
        _run_subclass(cell, model)


def stacked(values: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """The tensors stacked along a new dim 0, each item keeping the first one's dim order in memory (a transposed
    input stays transposed, as the cell's other paths give it; ``torch.stack`` makes every item contiguous)."""
    order = sorted(range(values[0].dim()), key=lambda dim: -values[0].stride(dim))
    batch = torch.stack([value.permute(order) for value in values])
    return batch.permute(0, *(order.index(dim) + 1 for dim in range(values[0].dim())))


@path
def vmap(cell: Cell) -> None:
    """``torch.vmap`` over the module, on ``VMAP_BATCH`` input sets of the cell's size (its seed and the next
    ones), each tensor input stacked along a new dim 0 (the other arguments unbatched: every item has the first
    set's scalars); every item of every output compared with the reference of that item."""
    items = _input_sets(cell, VMAP_BATCH)
    batched = tuple(
        stacked(values) if isinstance(values[0], torch.Tensor) else values[0] for values in zip(*items, strict=True)
    )
    in_dims = tuple(0 if isinstance(value, torch.Tensor) else None for value in batched)
    model = cell.model()
    cell.stage = "run"
    with cell.timed("run_seconds"), torch.no_grad():
        out = torch.vmap(model, in_dims=in_dims)(*batched)
    cell.synchronize()
    for one in as_tuple(out):
        if not isinstance(one, torch.Tensor) or one.shape[:1] != (VMAP_BATCH,):
            cell.stage = "compare"
            got = f"shape {tuple(one.shape)}" if isinstance(one, torch.Tensor) else type(one).__name__
            raise Mismatch(f"output: expected {VMAP_BATCH} items along dim 0, got {got}")
    for k, inputs in enumerate(items):
        item = tuple(one[k] for one in out) if isinstance(out, tuple | list) else out[k]
        cell.compare(f"output of item {k}", item, cell.expected(inputs))


@path
def opcheck(cell: Cell) -> None:
    """``torch.library.opcheck`` (schema, autograd registration, fake tensor, AOT dispatch: the check PyTorch's docs
    tell op authors to run) on the op, with the inputs that take a gradient requiring one, after one call of the
    module compared with the reference (opcheck compares the op with itself, never with what it should compute: a
    wrong kernel passes it); that call is the op's first, as a fresh process's is (after opcheck's calls an
    autotuner has its config picked, and a kernel wrong whenever its configs are benchmarked passed). Library ops
    only: a launcher, the control or a shipped op that is no ``torch.library`` op is a skip."""
    assert cell.wrapped is not None
    shipped = cell.style == AS_SHIPPED
    op, extra = (cell.case.shipped, cell.case.shipped_args) if shipped else (cell.wrapped.op, ())
    if not is_library_op(op):
        raise CellSkip(f"not a torch.library op ({cell.wrapped.wrapped_as or type(op).__name__}): opcheck checks ops")
    model = cell.model()
    cell.stage = "run"
    _infer(cell, model, cell.inputs(), calls=1)
    inputs = cell.inputs(requires_grad=cell.wrapped.train_error is None)
    cell.stage = "run"
    with cell.timed("run_seconds"):
        torch.library.opcheck(op, (*inputs, *extra))
