"""The module every path runs calls its op the way a user's model does: ``forward``'s own code names the op
(``Fn.apply(x)``, ``torch.ops.ns.op(x)``), and no module the harness builds holds a callable as an attribute (torch
2.11's Dynamo fails on ``self.op = Fn.apply``, where ``Fn.apply(x)`` in forward compiles)."""

from __future__ import annotations

import inspect
import linecache
from pathlib import Path

import pytest
import torch

from harness.case import load_cases
from harness.cell.context import Cell
from harness.cell.runner import build
from harness.kernel.model import build_model, model_source, op_call
from harness.kernel.styles import KNOWN_STYLES, NotApplicable
from harness.matrix.config import load_matrix
from harness.spec import Tolerance

MATRIX = load_matrix(Path(__file__).resolve().parents[2] / "matrix.toml")

BUILT: dict = {}
MODULES = sorted({module for case, module in MATRIX.modules.items() if not case.startswith("liger")})
CASES = [case for module in [*MODULES, "examples.shipped"] for case in load_cases(module)]


def models(case, style):
    cell = Cell(case=case, style=style, device="cpu", tolerance=Tolerance(1e-5, 1e-5), workdir=Path("."))
    cell.wrapped = build(case, style, BUILT)
    yield cell.model(), cell.wrapped.op
    if cell.wrapped.train_error is None:
        yield cell.model(train=True), cell.wrapped.train_op


def forward_source(module: torch.nn.Module) -> str:
    code = type(module).forward.__code__
    return "".join(linecache.getlines(code.co_filename)) or inspect.getsource(type(module).forward)


@pytest.mark.parametrize("style", sorted(KNOWN_STYLES))
def test_no_module_holds_its_op_and_forward_names_it(style: str):
    checked = 0
    for case in CASES:
        try:
            built = list(models(case, style))
        except NotApplicable:
            continue
        for model, op in built:
            checked += 1
            for module in model.modules():
                held = {name: value for name, value in vars(module).items() if not name.startswith("_")}
                callables = {name: value for name, value in held.items() if callable(value)}
                if case.module is None:
                    assert not callables, (case.id, style, callables)
                else:  # the case's own module gets a plain function written like user code, never the op itself
                    assert all(getattr(v, "__module__", "").startswith("user_model_") for v in callables.values())
            if case.module is None and not isinstance(op, torch.nn.Module):
                assert f"{op_call(op).expression}(" in forward_source(model), (case.id, style)
    assert checked > 0


class Cos(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.cos()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return -grad * x.sin()


def test_a_function_apply_is_called_through_its_class():
    """The launcher's training op, an autograd.Function's apply, is written ``Fn.apply(x)`` in forward; a model
    so made trains (and compiles whole, the form torch 2.11 compiles too)."""
    case = next(case for case in CASES if case.id == "sin_triton_backward")
    source = forward_source(build_model(case, build(case, "raw_jit", BUILT).train_op))
    assert "return sin_triton_backward_kernel_function.apply(x)" in source
    model = build_model(case, Cos.apply)
    assert "return Cos.apply(x)" in forward_source(model) and not vars(model).get("op")
    x = torch.randn(7, requires_grad=True)
    torch.compile(model, fullgraph=True, backend="eager")(x).sum().backward()
    torch.testing.assert_close(x.grad, -x.detach().sin())


def test_the_template_copies_what_an_op_writes_into():
    assert model_source("add_", ["x", "y"], [0]).splitlines()[2:] == [
        "        x = x.clone()",
        "        add_(x, y)",
        "        return x",
    ]
