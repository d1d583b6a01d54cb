"""Comparison against the PyTorch reference, with per-dtype tolerances."""

from __future__ import annotations

import torch

from harness.spec import Tolerance


class Mismatch(AssertionError):
    """The cell ran, but a number it produced differs from the reference: status ``wrong``."""


class SubsystemMismatch(Mismatch):
    """The op's numbers are right, but a PyTorch subsystem observing it saw something else (FlopCounterMode
    counting other flops than the op declares): status ``blind``, deterministic, never re-run."""


def assert_match(what: str, actual: object, expected: object, tolerance: Tolerance) -> None:
    """Raise ``Mismatch`` naming ``what`` unless ``actual`` equals ``expected`` within tolerance. An op with several
    outputs gives a tuple: each is compared, named by its position (``output 0``, ``output 1 at size 7``)."""
    if not isinstance(expected, tuple | list):
        _assert_tensor(what, actual, expected, tolerance)  # type: ignore[arg-type]
        return
    if not isinstance(actual, tuple | list):
        raise Mismatch(f"{what}: expected a tuple of {len(expected)} tensors, got {type(actual).__name__}")
    if len(actual) != len(expected):
        raise Mismatch(f"{what}: expected {len(expected)} outputs, got {len(actual)}")
    for index, (one, one_expected) in enumerate(zip(actual, expected, strict=True)):
        _assert_tensor(nth(what, index), one, one_expected, tolerance)


def nth(what: str, index: int) -> str:
    """``what`` naming output ``index`` of several: ``output of call 2`` -> ``output 1 of call 2``."""
    head, found, tail = what.partition("output")
    return f"{head}output {index}{tail}" if found else f"{what} {index}"


def _assert_tensor(what: str, actual: object, expected: torch.Tensor, tolerance: Tolerance) -> None:
    """Within tolerance for a floating (or complex) output; exactly, dtype included, for any other (a mask,
    indices), where a tolerance would pass a wrong index."""
    if not isinstance(actual, torch.Tensor):
        raise Mismatch(f"{what}: expected a tensor, got {type(actual).__name__}")
    actual, expected = on_one_device(actual, expected)
    if not (expected.is_floating_point() or expected.is_complex()):
        _assert_exact(what, actual, expected)
        return
    _assert_same_kind(what, actual, expected)
    try:
        torch.testing.assert_close(actual, expected, atol=tolerance.atol, rtol=tolerance.rtol)
    except AssertionError as error:
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        raise Mismatch(f"{what}: " + "; ".join(lines)) from None


def on_one_device(actual: torch.Tensor, expected: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Both, detached, where they are compared: on their device where they share one (a GPU compares a
    bandwidth-size output in milliseconds, where copying it to the host and comparing there took a second), else
    on the CPU. Element-wise IEEE arithmetic rounds alike on either, so the verdict is the same."""
    actual, expected = actual.detach(), expected.detach()
    if actual.device == expected.device:
        return actual, expected
    return actual.cpu(), expected.cpu()


def _assert_same_kind(what: str, actual: torch.Tensor, expected: torch.Tensor) -> None:
    """The same dtype and shape as the reference's, said as which is which (``assert_close`` says
    ``torch.float16 != torch.float32``, not which is the reference's)."""
    if actual.dtype != expected.dtype or actual.shape != expected.shape:
        got, want = (f"{t.dtype} of shape {tuple(t.shape)}" for t in (actual, expected))
        raise Mismatch(f"{what}: expected {want} (the reference's), got {got}")


def _assert_exact(what: str, actual: torch.Tensor, expected: torch.Tensor) -> None:
    _assert_same_kind(what, actual, expected)
    differ = actual != expected
    if differ.any():
        first = tuple(int(i) for i in differ.nonzero()[0])
        raise Mismatch(
            f"{what}: {int(differ.sum())} of {differ.numel()} elements differ (compared exactly); "
            f"first at {first}: {actual[first].item()} != {expected[first].item()}"
        )


LOW_PRECISION = (torch.float16, torch.bfloat16)
FLOATING = (*LOW_PRECISION, torch.float32)
AS_CLOSE_AS = 3.0  # torch._dynamo.utils.same's multiplier for half-precision results against a float64 reference
AS_CLOSE_AS_FLOAT32 = 2.0  # ... and for a float32 result of 1000 elements or more (3.0 below: noise dominates)


def within_reference_error(
    actual: torch.Tensor, expected: torch.Tensor, exact: torch.Tensor, atol: float, dtypes: tuple = LOW_PRECISION
) -> str | None:
    """For a result of one of ``dtypes`` outside the tolerance of the reference run in the same dtype: whether it is
    about as close to the reference run in float64 (``exact``) as that same-dtype reference is, PyTorch's own
    accuracy check for compiled code (``torch._dynamo.utils.same`` with a float64 reference: a reduction fused and
    accumulated in another order differs from eager by more than a fixed tolerance, and need not be further from
    the exact numbers). A note saying so, or None: the numbers are wrong."""
    if actual.dtype not in dtypes or exact.dtype != torch.float64 or actual.shape != exact.shape:
        return None
    exact = exact.detach().cpu()
    error, reference_error = (
        float((tensor.detach().cpu().double() - exact).square().mean().sqrt()) for tensor in (actual, expected)
    )
    multiplier = AS_CLOSE_AS if actual.dtype in LOW_PRECISION or actual.numel() < 1000 else AS_CLOSE_AS_FLOAT32
    if not error <= multiplier * reference_error + atol / 10:
        return None
    return f"rmse {error:.3g} against float64, the {actual.dtype} reference's {reference_error:.3g}"


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")
