"""The fla suite's references against fla's own kernels, in float32 under Triton's interpreter (bfloat16 cases cast
up), fla's autotuners given the harness's wall-clock benchmarker (Triton's asks a driver there is none of): a
reference that is not the op it stands for fails here, not first on a GPU."""

import importlib.util

import pytest

from tests.conftest import run_interpreted

CHECK = """
import torch
import triton.runtime.autotuner as autotuner
from harness.case import load_cases
from harness.kernel.interpreter import once_each_bench

autotuner.Autotuner.do_bench = property(lambda self: once_each_bench)
for module in MODULES:
    case = load_cases(module)[0]
    args = [t.float().requires_grad_() for t in case.make_inputs(case.sizes[0], "cpu", 0)]
    if case.shipped_module is None:
        params, out = [], case.shipped(*args, *case.shipped_args)
    else:
        torch.manual_seed(0)
        shipped = case.shipped_module().float()
        params, out = list(shipped.parameters()), shipped(*args)
    want = case.reference(*args, *params)
    torch.testing.assert_close(out, want, rtol=1e-4, atol=1e-4, msg=lambda m: f"{case.id}: {m}")
    grad = torch.randn(out.shape, generator=torch.Generator().manual_seed(1))
    leaves = args + params
    for got, expected in zip(torch.autograd.grad(out, leaves, grad), torch.autograd.grad(want, leaves, grad)):
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4, msg=lambda m: f"{case.id} gradient: {m}")
    print(case.id, "matches")
"""


@pytest.mark.skipif(importlib.util.find_spec("fla") is None, reason="the fla extra is not installed")
def test_fla_references_match_fla_kernels_under_the_interpreter():
    modules = ["cases.fla_rms_norm", "cases.fla_rms_norm_gated", "cases.fla_l2norm", "cases.fla_swiglu"]
    done = run_interpreted(f"MODULES = {modules!r}\n{CHECK}")
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == [word for module in modules for word in (module.split(".")[1], "matches")]
