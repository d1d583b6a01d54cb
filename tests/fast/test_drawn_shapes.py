"""Every case shape the Case API allows is one the harness accepts: hundreds of drawn cases (tests/drawn.py) load
and pass the harness's own check of a case (its inputs, outputs, heuristics, and a backward in torch ops against
autograd of the reference), so no drawn case is charted as broken (exit 2) when the case is right. The slow tier
runs a list of them through every style and CPU path (tests/slow/test_drawn_cases.py)."""

import importlib.util
import itertools
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings

from harness.kernel.casecheck import CaseProblem, check_case
from harness.spec import Tolerance
from tests.drawn import FOUND, Shape, module_source, shapes

FLOAT32 = Tolerance(atol=1e-5, rtol=1e-5)
NUMBER = itertools.count()
BIAS_AFTER_SCALE, MODULE = FOUND


def load(folder: Path, source: str) -> list:
    """The module's ``CASES``, imported from a file of its own under a name no other example uses."""
    name = f"drawn_shapes_{next(NUMBER)}"
    file = folder / f"{name}.py"
    file.write_text(source)
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # triton reads a kernel's source through its module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module.CASES


@given(shape=shapes())
@example(shape=BIAS_AFTER_SCALE)
@example(shape=MODULE)
@settings(
    max_examples=300,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
def test_a_drawn_case_passes_the_harness_check(shape: Shape, tmp_path: Path):
    (case,) = load(tmp_path, module_source([shape], namespace=f"drawn{next(NUMBER)}"))
    check_case(case, FLOAT32)


def test_a_case_with_a_wrong_backward_fails_the_check(tmp_path: Path):
    """The check the property relies on can fail: the generator's old bias gradient, scaled by alpha."""
    source = module_source([BIAS_AFTER_SCALE], namespace=f"drawn{next(NUMBER)}")
    broken = source.replace("None if bias is None else g_bias", "None if bias is None else g")
    assert broken != source
    (case,) = load(tmp_path, broken)
    with pytest.raises(CaseProblem, match="gradient of bias differs"):
        check_case(case, FLOAT32)


def test_a_module_with_parameters_beside_a_kernel_is_a_broken_case(tmp_path: Path):
    """The kernel's op stands in for the reference (fake, autograd formula) without the module's parameters, so
    every kernel style would be charted with the case's own mistake: the case is refused at load instead."""
    source = module_source([MODULE], namespace=f"drawn{next(NUMBER)}")
    both = source.replace(
        "    reference=drawn1_reference,",
        "    kernel=drawn1_kernel,\n    launch=drawn1_launch,\n    reference=drawn1_reference,",
    )
    assert both != source
    (case,) = load(tmp_path, both)
    with pytest.raises(CaseProblem, match="shipped_module: a module with parameters and a kernel in one case"):
        check_case(case, FLOAT32)
