"""Styles as two axes: every decorator stack inside every wrapper, each built around the case's one kernel."""

import dataclasses

import pytest
import torch
from triton import JITFunction
from triton.runtime.autotuner import Autotuner, Heuristics

from harness.case import load_cases
from harness.kernel.decorators import DECORATORS
from harness.kernel.styles import KNOWN_STYLES, build_style, cross, style_id
from harness.kernel.wrappers import WRAPPERS
from harness.matrix.config import load_matrix
from tests.conftest import REPO

MATRIX = load_matrix(REPO / "matrix.toml")
CASES = [case for module in (*MATRIX.modules.values(), "examples.rmsnorm", "examples.activations")
         for case in load_cases(module)]  # fmt: skip
THIRTEEN = (
    "raw_jit",
    "autotune",
    "heuristics_autotune",
    "autotune_heuristics",
    "triton_op",
    "triton_op_autotune",
    "triton_op_heuristics_autotune",
    "triton_op_autotune_heuristics",
    "custom_op",
    "custom_op_autotune",
    "custom_op_heuristics_autotune",
    "custom_op_autotune_heuristics",
    "control",
)
# the decorator stack, outermost first, each decorator's object type
STACKS = {
    "jit": (JITFunction,),
    "autotune": (Autotuner, JITFunction),
    "heuristics_autotune": (Heuristics, Autotuner, JITFunction),
    "autotune_heuristics": (Autotuner, Heuristics, JITFunction),
}


def test_default_matrix_crosses_every_decorator_with_every_wrapper_in_chart_order():
    assert MATRIX.styles == THIRTEEN
    assert tuple(KNOWN_STYLES) == (*THIRTEEN, "as_shipped")  # as_shipped: a matrix lists it under styles
    assert MATRIX.style_axes["raw_jit"] == ("jit", "launcher")
    assert MATRIX.style_axes["triton_op"] == ("jit", "triton_op")
    assert MATRIX.style_axes["custom_op_autotune_heuristics"] == ("autotune_heuristics", "custom_op")
    assert MATRIX.style_axes["control"] == (None, "control")
    assert {axes for style, axes in MATRIX.style_axes.items() if style != "control"} == {
        (decorator, wrapper) for decorator in DECORATORS for wrapper in WRAPPERS
    }


def test_style_ids_keep_their_old_meaning():
    assert [style_id(d, "launcher") for d in DECORATORS] == [
        "raw_jit",
        "autotune",
        "heuristics_autotune",
        "autotune_heuristics",
    ]
    assert style_id("jit", "triton_op") == "triton_op" and style_id("jit", "custom_op") == "custom_op"
    assert list(cross(["autotune", "jit"], ["custom_op"], False)) == ["custom_op_autotune", "custom_op"]


@pytest.mark.parametrize("decorator", list(DECORATORS))
def test_decorator_stacks_over_the_case_kernel(decorator: str):
    for case in CASES:
        kernel, meta = DECORATORS[decorator](case)
        *outer, innermost = STACKS[decorator]
        for kind in outer:
            assert isinstance(kernel, kind), (case.id, decorator, type(kernel))
            kernel = kernel.fn
        assert isinstance(kernel, innermost) and kernel is case.kernel
        computed = {key for config in case.configs for key in config.kwargs} if decorator != "jit" else set()
        if "heuristics" in decorator:
            computed |= set(case.heuristics)
        assert meta == {key: value for key, value in case.meta.items() if key not in computed}, (case.id, decorator)


@pytest.mark.parametrize("wrapper", ["launcher", "triton_op", "custom_op"])
def test_every_wrapper_launches_the_decorated_kernel(wrapper: str):
    """The launch each wrapper hands to PyTorch gets the decorated kernel and the constexprs it still needs
    (the library ops' CPU kernel disabled, so the op runs its own launch on CPU tensors)."""
    (sin,) = load_cases("cases.sin")
    for decorator in DECORATORS:
        seen = []

        def launch(kernel, x, seen=seen, **meta):
            seen.append((kernel, meta))
            return torch.sin(x)

        case = dataclasses.replace(sin, launch=launch)
        kernel, meta = DECORATORS[decorator](case)
        wrapped = WRAPPERS[wrapper](case, kernel, meta, f"harness::probe_{wrapper}_{decorator}")
        if wrapper == "launcher":
            wrapped.op(torch.randn(10))
        elif wrapper == "triton_op" and decorator == "heuristics_autotune":
            with wrapped.op.set_kernel_enabled("cpu", False), pytest.raises(RuntimeError, match="wrap_triton only"):
                wrapped.op(torch.randn(10))  # wrap_triton takes a jit or autotune kernel, not heuristics outermost
            continue
        else:
            with wrapped.op.set_kernel_enabled("cpu", False):
                wrapped.op(torch.randn(10))
        assert len(seen) == 1 and seen[0][0] is kernel and seen[0][1] == meta, (wrapper, decorator)


class Probe(dict):
    """Call arguments for a heuristic: every value 1024; records the names it reads."""

    def __init__(self) -> None:
        super().__init__()
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> int:
        self.read.add(key)
        return 1024


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_heuristics_outermost_read_arguments_and_under_autotune_read_the_config(case):
    config_keys = {key for config in case.configs for key in config.kwargs}
    outer, _ = DECORATORS["heuristics_autotune"](case)
    for heuristic in outer.values.values():
        probe = Probe()
        heuristic(probe)
        assert not probe.read & config_keys, f"{case.id}: outermost heuristics see no config value"
    inner, _ = DECORATORS["autotune_heuristics"](case)
    assert inner.fn.values == {**case.heuristics, **case.config_heuristics}
    for name in case.config_heuristics:
        probe = Probe()
        inner.fn.values[name](probe)
        assert probe.read & config_keys, f"{case.id}: config heuristic {name} reads no config value"


def test_which_cases_have_a_heuristic_reading_the_config():
    with_config = {case.id: sorted(case.config_heuristics) for case in CASES if case.config_heuristics}
    assert with_config == {
        "add": ["EVEN"],
        "sin": ["EVEN"],
        "silu": ["EVEN"],
        "matmul": ["EVEN_K"],
        "add_inplace": ["EVEN"],
        "gelu_mul": ["EVEN"],
        "silu_mul": ["EVEN"],
        "layernorm": ["EVEN"],
        "sin_triton_backward": ["EVEN"],
    }  # softmax and rmsnorm: BLOCK_SIZE is a launch argument, their configs set num_warps only
    (add,) = load_cases("cases.add")
    even = DECORATORS["autotune_heuristics"](add)[0].fn.values["EVEN"]
    assert even({"n_elements": 1280, "BLOCK_SIZE": 256}) is True
    assert even({"n_elements": 1280, "BLOCK_SIZE": 1024}) is False
    assert DECORATORS["heuristics_autotune"](add)[0].values["EVEN"]({"n_elements": 1280}) is False


def test_config_heuristic_must_name_a_heuristic():
    (add,) = load_cases("cases.add")
    with pytest.raises(ValueError, match=r"config_heuristics \['ODD'\]"):
        dataclasses.replace(add, config_heuristics={"ODD": lambda args: True})


def test_control_and_unknown_ids():
    (sin,) = load_cases("cases.sin")
    assert build_style("control", sin).op is sin.reference
    with pytest.raises(KeyError):
        build_style("jit", sin)


INTERPRETED = """
import dataclasses, torch
from harness.case import load_cases
from harness.kernel.decorators import DECORATORS
from harness.kernel.wrappers import WRAPPERS

# sizes that a config's BLOCK_SIZE divides or not: 1280 elements, 32 rows of 1000, rows of 768 columns
for module, size in (("cases.add", 1280), ("cases.sin", 1280), ("examples.activations", 32), ("cases.layernorm", 5)):
    case = load_cases(module)[0]
    (name, heuristic), = case.config_heuristics.items()
    seen = []
    def recording(args, heuristic=heuristic, seen=seen):
        seen.append((args["BLOCK_SIZE"], heuristic(args)))
        return seen[-1][1]
    case = dataclasses.replace(case, config_heuristics={name: recording})
    kernel, meta = DECORATORS["autotune_heuristics"](case)
    kernel.__dict__["do_bench"] = lambda call, quantiles: (call(), [1.0, 1.0, 1.0])[1]  # no GPU to time on
    inputs = case.make_inputs(size, "cpu", 0)
    torch.testing.assert_close(WRAPPERS["launcher"](case, kernel, meta, "").op(*inputs), case.reference(*inputs))
    print(case.id, sorted(set(seen)))
"""


