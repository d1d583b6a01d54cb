"""The worked examples in examples/: user kernels outside harness/ and cases/, through the CLI, on CPU."""

from pathlib import Path

import pytest
import torch

from examples.activations import CASES
from examples.rmsnorm import CASE
from harness.records import files as records


def read_results(file: Path) -> dict:
    """A results file as JSON, as the reader types and upgrades it."""
    return records.read_results(file).to_data()


@pytest.mark.parametrize("case", [CASE, *CASES], ids=lambda case: case.id)
def test_backward_matches_autograd(case):
    inputs = tuple(t.double().requires_grad_() for t in case.make_inputs(13, "cpu", 0))
    out = case.reference(*inputs)
    grad = torch.randn_like(out)
    out.backward(grad)
    grads = case.backward(tuple(t.detach() for t in inputs), out.detach(), grad)
    for computed, tensor in zip(grads, inputs, strict=True):
        torch.testing.assert_close(computed, tensor.grad)


