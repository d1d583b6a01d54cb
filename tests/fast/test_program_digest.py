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
