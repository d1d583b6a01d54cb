"""In-place ops (``Case.mutates``) in training: the backward gets what an ``autograd.Function`` author would save,
the input as it was before the call (``save_mutated``) and the input as the call left it (``output``); the case check
at load runs the backward as the styles do. examples/scale_clamp.py, a non-linear in-place op, trains through the
launcher styles; the library styles say they cannot (torch.library registers no autograd for a mutating op)."""

import dataclasses
import importlib.util
import itertools
import sys
from pathlib import Path

import pytest
import torch

from harness.case import Case
from harness.kernel.casecheck import CaseProblem, check_case
from harness.spec import Tolerance
from tests.conftest import REPO
from tests.fast.test_cells import run

FLOAT32 = Tolerance(atol=1e-5, rtol=1e-5)
NUMBER = itertools.count()


@pytest.fixture
def scale_clamp(monkeypatch: pytest.MonkeyPatch) -> Case:
    """examples/scale_clamp.py's case, its kernel decorated under Triton's CPU interpreter (read at decoration)."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    name = f"scale_clamp_interpreted_{next(NUMBER)}"
    spec = importlib.util.spec_from_file_location(name, REPO / "examples" / "scale_clamp.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # triton reads a kernel's source through its module
    spec.loader.exec_module(module)
    return dataclasses.replace(module.CASE, id=name)


@pytest.mark.parametrize("style", ["raw_jit", "autotune", "heuristics_autotune", "autotune_heuristics"])
def test_a_non_linear_in_place_op_trains_through_the_launcher(style: str, scale_clamp: Case, tmp_path: Path):
    check_case(scale_clamp, FLOAT32)
    record = run(scale_clamp, style, "train_eager", tmp_path, device="cpu")
    assert (record["status"], record["error"]) == ("pass", None)


def test_without_the_input_before_the_call_its_backward_is_refused_at_load_saying_why(scale_clamp: Case):
    with pytest.raises(CaseProblem) as raised:
        check_case(dataclasses.replace(scale_clamp, save_mutated=False), FLOAT32)
    assert str(raised.value) == (
        "backward: TypeError: unsupported operand type(s) for *: 'NoneType' and 'float' (it gets x as None, "
        "overwritten by the op; output is x as the call left it; save_mutated=True gives x as it was before the call)"
    )


def from_output(inputs, output, grad):
    """The clamp's gradient read off the output (inside the bounds: the scale passed through), with no copy."""
    _, scale, lo, hi = inputs  # x arrives as None: it was overwritten
    return grad * scale * ((output > lo) & (output < hi)), None, None, None


def test_its_backward_gets_the_input_as_the_call_left_it_as_output(scale_clamp: Case, tmp_path: Path):
    case = dataclasses.replace(scale_clamp, save_mutated=False, backward=from_output)
    check_case(case, FLOAT32)
    assert run(case, "raw_jit", "train_eager", tmp_path, device="cpu")["status"] == "pass"


def test_a_wrong_in_place_backward_is_refused_at_load(scale_clamp: Case):
    """Checked against autograd of the reference writing into a copy, as the control trains it."""
    linear = dataclasses.replace(scale_clamp, backward=lambda inputs, out, grad: (grad * inputs[1], None, None, None))
    with pytest.raises(CaseProblem, match=r"^backward: gradient of x differs from autograd of the reference: "):
        check_case(linear, FLOAT32)


@pytest.mark.parametrize("style", ["triton_op", "custom_op"])
def test_the_library_styles_say_they_cannot_train_it(style: str, scale_clamp: Case, tmp_path: Path):
    record = run(scale_clamp, style, "train_eager", tmp_path, device="cpu")
    assert record["status"] == "error"
    assert record["error"].startswith(
        f"harness::{scale_clamp.id}_{style} writes into x: {style} cannot train it, a limit of torch.library, not of "
        "the case (no autograd for an op that writes into its inputs; the launcher trains it): "
    )


def test_save_mutated_names_nothing_without_mutates():
    with pytest.raises(ValueError, match="save_mutated keeps the inputs an op writes into: name them in mutates"):
        Case(id="c", shipped=abs, reference=abs, make_inputs=lambda *a: (), arg_names=(), sizes=(1,), save_mutated=True)


def _int_inputs(size, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(-9, 9, (size,), generator=gen, dtype=torch.int32).to(device), 3


@pytest.mark.parametrize("path", ["train_eager", "train_compile"])
def test_an_op_with_no_argument_taking_a_gradient_skips_training_and_blames_no_reference(path: str, tmp_path: Path):
    """An integer-only op (found by a probe: ``x * k + y`` on int32): nothing takes a gradient, so a training cell
    is a skip saying so, not the control's ``CaseBug`` ("the case's reference failed ... fix the case first") and
    an error in every style."""
    case = Case(id="int_scale", reference=lambda x, k: x * k, make_inputs=_int_inputs, arg_names=("x", "k"),
                arg_types={"k": int}, sizes=(17,), shipped=lambda x, k: x * k)  # fmt: skip
    for style in ("control", "as_shipped"):
        record = run(case, style, path, tmp_path, device="cpu")
        assert (record["status"], record["reason"]) == (
            "skip", "no argument takes a gradient (no float tensor, none outside no_grad): nothing to train"
        ), record
