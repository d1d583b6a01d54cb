"""The compile group: the module called eagerly and through ``torch.compile`` in its modes."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from harness.case import Inputs, copy_inputs
from harness.cell.paths.common import _compiled, _infer, path
from harness.spec import CUDAGRAPH_CALLS

if TYPE_CHECKING:
    from harness.cell.context import Cell

GROUP = "compile"


def _first_call(cell: Cell, model: Callable[..., Any], inputs: Inputs) -> None:
    cell.stage = "trace"  # the backend moves it on to compile, then run
    with cell.timed("compile_seconds"):
        _infer(cell, model, inputs)


@path
def eager(cell: Cell) -> None:
    """The style called directly, as in a plain PyTorch program."""
    model = cell.model()
    cell.stage = "run"
    with cell.timed("run_seconds"):
        _infer(cell, model, cell.inputs())


@path
def compile_(cell: Cell) -> None:
    """Default ``torch.compile`` (graph breaks allowed)."""
    _first_call(cell, _compiled(cell), cell.inputs())


@path
def fullgraph(cell: Cell) -> None:
    """``torch.compile(fullgraph=True)``: any graph break fails."""
    _first_call(cell, _compiled(cell, fullgraph=True), cell.inputs())


@path
def dynamic(cell: Cell) -> None:
    """``torch.compile(dynamic=True)`` over every size the case declares; recompiles are counted."""
    model = _compiled(cell, dynamic=True)
    first, *rest = cell.case.sizes
    _first_call(cell, model, cell.inputs(first))
    graphs = cell.capture.graphs
    for size in rest:
        cell.stage = "run"
        _infer(cell, model, cell.inputs(size), what=f"output at size {size}")
    cell.saw(recompiles=cell.capture.graphs - graphs)


@path
def cudagraphs(cell: Cell) -> None:
    """``mode="reduce-overhead"``: several calls with fresh inputs, each compared."""
    model = _compiled(cell, mode="reduce-overhead")
    cell.stage = "trace"
    for seed in range(CUDAGRAPH_CALLS):
        inputs = cell.inputs(seed=seed)
        with torch.no_grad():
            out = model(*copy_inputs(inputs))
            out = _own(out)  # the next replay overwrites it
        cell.compare(f"output of call {seed + 1}", out, cell.expected(inputs))
        cell.keep_call(model, inputs)  # the first call's inputs: a replay copies them into the graph's own
    skips = torch._dynamo.utils.counters["inductor"].get("cudagraph_skips", 0)
    cell.saw(cudagraph_skips=skips)


def _own(out: Any) -> Any:
    """A copy of a CUDA graph's output (a tensor, or each of a tuple's), which its next replay overwrites."""
    if isinstance(out, tuple | list):
        return type(out)(_own(one) for one in out)
    return out.clone() if isinstance(out, torch.Tensor) else out
