"""What AOTInductor would compile, as a digest: two exports share a package only where it is the same."""

import torch

from harness.cell.paths.export import program_digest


class Scaled(torch.nn.Module):
    def __init__(self, weight: torch.Tensor) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x * self.weight).sin()


def digest(model: torch.nn.Module, x: torch.Tensor, strict: bool) -> str:
    return program_digest(torch.export.export(model, (x,), strict=strict), (x,))


def test_strict_and_nonstrict_exports_of_one_model_have_one_digest():
    model, x = Scaled(torch.ones(7, 5)), torch.randn(7, 5)
    assert digest(model, x, strict=True) == digest(model, x, strict=False)


def test_other_weights_or_input_strides_give_another_digest():
    x = torch.randn(7, 5)
    plain = digest(Scaled(torch.ones(7, 5)), x, strict=False)
    assert digest(Scaled(torch.full((7, 5), 2.0)), x, strict=False) != plain
    assert digest(Scaled(torch.ones(7, 5)), torch.randn(5, 7).t(), strict=False) != plain


class Printed:
    """An exported program as ``program_digest`` reads it: its text, weights and constants."""

    def __init__(self, text: str) -> None:
        self.text, self.state_dict, self.constants = text, {}, {}

    def __str__(self) -> str:
        return self.text


GRAPH = "out = triton_kernel_wrapper_functional(kernel_idx = {}, constant_args_idx = {}, grid = [(4, 1, 1)])"


def test_a_program_traced_after_other_kernels_keeps_its_digest(monkeypatch):
    """The side table numbers kernels in the order the process traced them: the same program traced later in a
    cell process that ran other cells (its kernel 5, its constants 7) digests as where it came first (0, 0)."""
    from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table

    def silu_kernel():
        pass

    def other_kernel():
        pass

    kernels = {0: silu_kernel, 5: silu_kernel, 6: other_kernel}
    constants = {0: {"n_elements": 37}, 7: {"n_elements": 37}, 8: {"n_elements": 61}}
    monkeypatch.setattr(kernel_side_table, "id_to_kernel", kernels)
    monkeypatch.setattr(kernel_side_table, "constant_args", constants)
    x = torch.randn(7, 5)
    first = program_digest(Printed(GRAPH.format(0, 0)), (x,))
    assert program_digest(Printed(GRAPH.format(5, 7)), (x,)) == first
    assert program_digest(Printed(GRAPH.format(6, 7)), (x,)) != first  # another kernel
    assert program_digest(Printed(GRAPH.format(5, 8)), (x,)) != first  # other constant arguments
