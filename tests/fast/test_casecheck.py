"""A case is checked when it loads: a mistake in a case module is one line naming the module and the field, exit 2,
before any cell runs (never a style's failure)."""

import dataclasses
from pathlib import Path

import pytest
import torch

from harness.case import Case, load_cases
from harness.errors import InputError
from harness.kernel.casecheck import CaseProblem, check_case
from harness.kernel.compare import Tolerance, dtype_name
from harness.matrix.config import load_matrix
from tests.conftest import REPO, harness_main

TOLERANCE = Tolerance(atol=1e-5, rtol=1e-5)
BROKEN = [
    ("broken_heuristic", "heuristics['EVEN']: KeyError: 'n'"),
    ("broken_make_inputs", "make_inputs: AssertionError: make_inputs cannot make this size"),
    ("broken_reference", "reference: RuntimeError: the reference is broken"),
    ("broken_backward", "backward: gradient of x differs from autograd of the reference: "),
    ("broken_arg_count", "make_inputs: gives 1 inputs, arg_names names 2"),
    ("broken_arg_types", "make_inputs: input 1 (eps): expected float, got Tensor"),
]


@pytest.mark.parametrize(("module", "problem"), BROKEN)
def test_broken_case_names_module_and_field(module: str, problem: str, write_matrix):
    file = write_matrix(["sin", f"tests.fixtures.{module}"], ["control"], {"cpu_fallback": ("cpu", 10)})
    with pytest.raises(InputError) as raised:
        load_matrix(file)
    message = str(raised.value)
    assert message.startswith(f"{file}: cases[1]: tests.fixtures.{module}: {problem}"), message
    assert "\n" not in message


@pytest.mark.parametrize(("module", "problem"), BROKEN[:2])
def test_cli_broken_case_is_one_line_exit_2(module: str, problem: str, tmp_path: Path):
    done = harness_main(
        "run", "--cases", f"tests.fixtures.{module}", "--paths", "cpu_fallback", "--report-dir", str(tmp_path)
    )
    assert done.returncode == 2, done.stdout[-1000:]
    assert done.stderr == f"error: command line: --cases[0]: tests.fixtures.{module}: {problem}\n"
    assert not (tmp_path / "results.json").exists()  # no cell ran


def test_every_case_of_the_matrix_and_the_examples_passes_its_check():
    matrix = load_matrix(REPO / "matrix.toml")
    checked = []
    for module in [*matrix.modules.values(), "examples.rmsnorm", "examples.activations"]:
        for case in load_cases(module):
            check_case(case, matrix.tolerances[dtype_name(case.dtype)])  # raises CaseProblem on a problem
            checked.append(case.id)
    assert checked == [*matrix.cases, "simple_rmsnorm", "gelu_mul", "silu_mul"]


def problem(case, **fields) -> str:
    with pytest.raises(CaseProblem) as raised:
        check_case(dataclasses.replace(case, **fields), TOLERANCE)
    return str(raised.value)


def test_heuristics_outermost_must_not_read_the_config():
    """``heuristics`` also run over the autotuner, before a config is picked: one reading BLOCK_SIZE (a config value
    of sin) belongs in ``config_heuristics``."""
    (sin,) = load_cases("cases.sin")
    reads_config = {"EVEN": lambda args: args["n_elements"] % args["BLOCK_SIZE"] == 0}
    assert problem(sin, heuristics=reads_config, config_heuristics={}) == (
        "heuristics['EVEN']: KeyError: 'BLOCK_SIZE' ('BLOCK_SIZE' is set by the autotune configs: a heuristic "
        "reading it goes in config_heuristics; heuristics also run outermost, before a config is picked)"
    )
    misnamed = {"EVEN": lambda args: args["n_elements"] % args["BLOCK"] == 0}
    assert problem(sin, config_heuristics=misnamed) == "config_heuristics['EVEN']: KeyError: 'BLOCK'"


def test_make_inputs_must_give_the_same_values_at_the_same_size_and_seed():
    """A cell calls it once for the op and once for the reference: unseeded, the op would look wrong."""
    (sin,) = load_cases("cases.sin")
    unseeded = problem(sin, make_inputs=lambda n, device, seed: (torch.randn(n, device=device),))
    assert unseeded.startswith("make_inputs: input 0 (x) differs between two calls at size "), unseeded
    calls = iter(range(2))
    tensor_then_float = lambda n, device, seed: (torch.ones(n) if next(calls) == 0 else 1.0,)  # noqa: E731
    assert problem(sin, make_inputs=tensor_then_float).startswith("make_inputs: input 0 (x) differs")


def test_outputs_and_dynamic_dims_must_match_what_the_case_gives():
    (rmsnorm,) = load_cases("cases.rmsnorm")
    assert problem(rmsnorm, outputs=3) == "reference: returns 2 values, expected a tuple of 3 tensors (outputs)"
    assert problem(rmsnorm, outputs=1) == "reference: returns tuple, expected a tensor (outputs = 1)"
    assert problem(rmsnorm, dynamic_dims=((0,), ())) == "dynamic_dims: names 2 inputs, make_inputs gives 3"
    assert problem(rmsnorm, dynamic_dims=((0,), (), (0,))) == "dynamic_dims[2]: dims (0,) of eps, a float"


def test_backward_must_give_a_gradient_per_argument():
    (rmsnorm,) = load_cases("cases.rmsnorm")
    two = problem(rmsnorm, backward=lambda inputs, outputs, grads: rmsnorm.backward(inputs, outputs, grads)[:2])
    assert two == "backward: gives 2 gradients, arg_names names 3"
    ignores_rstd = problem(
        rmsnorm,
        backward=lambda inputs, outputs, grads: rmsnorm.backward(
            inputs, outputs, (grads[0], torch.zeros_like(grads[1]))
        ),
    )
    assert ignores_rstd.startswith("backward: gradient of x differs from autograd of the reference")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"arg_types": {"epsilon": float}}, r"arg_types \['epsilon'\] are not in arg_names"),
        ({"arg_types": {"eps": str}}, r"arg_types\['eps'\] is <class 'str'>"),
        ({"outputs": 0}, "outputs must be 1 or more"),
        ({"launch_backward": None}, "give both backward_kernel and launch_backward, or neither"),
        ({"arg_types": {"eps": float, "weight": torch.Tensor | None}}, "a backward_kernel needs every tensor argument"),
    ],
)
def test_case_fields_are_checked_when_it_is_made(fields: dict, message: str):
    (rmsnorm,) = load_cases("cases.rmsnorm")
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(rmsnorm, **fields)


def test_a_check_that_waits_says_so_within_seconds_and_on_what(monkeypatch, capsys):
    """Issue 36: a make_inputs that hangs was reported only at the check's limit (63 s into a run); a notice now
    names the case and the field within NOTICE_SECONDS, and the limit still ends the check with one line."""
    import time

    from harness.kernel import casecheck
    from tests.fixtures.broken import broken
    from tests.fixtures.cases import hang

    monkeypatch.setattr(casecheck, "NOTICE_SECONDS", 0.3)
    started = time.monotonic()
    with pytest.raises(CaseProblem, match=r"^make_inputs: still running after 1.5 s"):
        check_case(broken("stuck", make_inputs=hang), TOLERANCE, seconds=1.5)
    assert 1.4 < time.monotonic() - started < 10  # the notice did not move the limit
    err = capsys.readouterr().err.splitlines()
    assert err == ["harness: checking case 'stuck': waiting on make_inputs for 0.3 s (the check gives up at 1.5 s)"]
    assert casecheck.NOTICE_SECONDS < casecheck.CHECK_SECONDS / 10  # a few seconds, not the limit
    check_case(broken("quick"), TOLERANCE, seconds=1.5)  # a check done before the notice says nothing
    assert capsys.readouterr().err == ""


class Norm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(4))

    def forward(self, x):
        return x * self.weight


def rms_ref(x):
    return x


def test_a_reference_without_the_modules_parameters_is_told_the_convention():
    """Issue 61: a case module written before a shipped_module's reference took its parameters exited 2 with only
    Python's TypeError; the line now says what the reference takes."""
    case = Case(
        id="norm",
        shipped_module=Norm,
        reference=rms_ref,
        make_inputs=lambda size, device, seed: (torch.randn(size, 4),),
        arg_names=("x",),
        sizes=(3,),
    )
    assert problem(case) == (
        "reference: TypeError: rms_ref() takes 1 positional argument but 2 were given (the reference of a "
        "shipped_module takes the module's parameters after the op's arguments, in parameters() order: "
        "reference(x, weight))"
    )
    raising = problem(case, reference=lambda x, weight: x + "a")  # a TypeError of its own: no convention to tell
    assert raising.startswith("reference: TypeError: unsupported operand type(s) for +")
    assert "parameters() order" not in raising
