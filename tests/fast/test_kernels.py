"""What real ops take and return (issue 14), in cells run in this process on CPU: float arguments in the op's schema
and through export, several outputs (each compared, each with its gradient), an optional tensor given as None,
strided inputs, and backward kernels run by every style's backward."""

import dataclasses
from pathlib import Path

import pytest
import torch
import torch._functorch.config
import torch._inductor.config
from torch.utils._python_dispatch import TorchDispatchMode

from cases.layernorm import ROW_STRIDE
from harness.case import copy_inputs, load_cases
from harness.cell.runner import build
from harness.kernel.casecheck import check_case
from harness.kernel.compare import Mismatch, Tolerance, assert_match
from harness.kernel.model import build_model
from tests.fast.test_cells import BUILT, run

RMSNORM, LAYERNORM, SIN_BACKWARD = (
    load_cases(f"cases.{name}")[0] for name in ("rmsnorm", "layernorm", "sin_triton_backward")
)
TOLERANCE = Tolerance(atol=1e-5, rtol=1e-5)


def schema(op_name: str) -> str:
    return str(getattr(torch.ops.harness, op_name).default._schema)


@pytest.mark.parametrize("style", ["triton_op", "custom_op"])
def test_scalars_optional_tensors_and_outputs_are_in_the_schema(style: str):
    for case in (RMSNORM, LAYERNORM, SIN_BACKWARD):
        build(case, style, BUILT)
    assert (
        schema(f"rmsnorm_{style}")
        == f"harness::rmsnorm_{style}(Tensor x, Tensor weight, float eps) -> (Tensor, Tensor)"
    )
    assert schema(f"layernorm_{style}") == (
        f"harness::layernorm_{style}(Tensor x, Tensor weight, Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)"
    )
    # the backward kernel as an op of its own: the arguments, every output and its grad -> a grad per tensor argument
    assert schema(f"rmsnorm_{style}_backward") == (
        f"harness::rmsnorm_{style}_backward(Tensor x, Tensor weight, float eps, Tensor output_0, Tensor output_1, "
        "Tensor grad_0, Tensor grad_1) -> (Tensor, Tensor)"
    )
    assert schema(f"sin_triton_backward_{style}_backward") == (
        f"harness::sin_triton_backward_{style}_backward(Tensor x, Tensor output_0, Tensor grad_0) -> Tensor"
    )
    assert not hasattr(torch.ops.harness, f"layernorm_{style}_backward")  # its backward is torch ops


@pytest.mark.parametrize("case", ["rmsnorm", "layernorm", "sin_triton_backward"])
@pytest.mark.parametrize("style", ["triton_op", "custom_op", "control"])
def test_new_cases_run_and_train_on_cpu(case: str, style: str, tmp_path: Path):
    """The library ops' CPU kernels (and their backward ops' CPU kernels: the case's torch backward), every output
    and the gradients through every output checked."""
    for path in ("cpu_fallback", "train_eager"):
        record = run(case, style, path, tmp_path, device="cpu")
        assert record["status"] == "pass", (path, record["error"])


@pytest.mark.parametrize("style", ["control", "custom_op"])
def test_export_takes_a_float_argument(style: str, tmp_path: Path):
    for path in ("export_strict", "export_dynamic_strict", "export_dynamic_nonstrict"):
        record = run("rmsnorm", style, path, tmp_path, device="cpu")
        assert record["status"] == "pass", (path, record["error"])


def test_export_specializes_the_float_to_its_traced_value():
    """eps stays an input of the exported program, guarded to the value it was traced with: another is refused."""
    x, weight, eps = RMSNORM.make_inputs(13, "cpu", 0)
    model = build_model(RMSNORM, build(RMSNORM, "custom_op", BUILT).op)
    program = torch.export.export(model, (x, weight, eps), strict=True)
    assert [node.op for node in program.graph.nodes].count("placeholder") == 3
    with pytest.raises(AssertionError, match=r"Guard failed: .* == 1e-06"):
        program.module()(x, weight, 0.5)


@pytest.mark.parametrize("style", ["triton_op", "custom_op"])
def test_a_wrong_second_output_is_wrong(style: str, tmp_path: Path):
    record = run("tests.fixtures.wrong_second_output", style, "cpu_fallback", tmp_path)
    assert (record["status"], record["stage"], record["error_type"]) == ("wrong", "compare", "Mismatch"), record
    assert record["error"].startswith("output 1: ") and "Mismatched elements: 67 / 67" in record["error"]


def test_outputs_are_compared_one_by_one_and_their_number_counts():
    one = torch.ones(3)
    assert_match("output", (one, one), (one, one), TOLERANCE)
    assert_match("output", [one, one], (one, one), TOLERANCE)  # AOTInductor hands back a list
    cases = [
        ("output", (one, one + 1), (one, one), "^output 1: Tensor-likes are not close"),
        ("output at size 7", (one + 1, one), (one, one), "^output 0 at size 7: "),
        ("output of call 2", (one, one), one, "^output of call 2: expected a tensor, got tuple$"),
        ("output", one, (one, one), "^output: expected a tuple of 2 tensors, got Tensor$"),
        ("output", (one, one, one), (one, one), "^output: expected 2 outputs, got 3$"),
        ("output", (one, None), (one, one), "^output 1: expected a tensor, got NoneType$"),
    ]
    for what, actual, expected, message in cases:
        with pytest.raises(Mismatch, match=message):
            assert_match(what, actual, expected, TOLERANCE)


def test_optional_tensor_is_given_as_none_and_its_branch_is_right():
    assert LAYERNORM.make_inputs(13, "cpu", 0)[2] is None

    def with_bias(rows, device, seed):
        x, weight, _, eps = LAYERNORM.make_inputs(rows, device, seed)
        return x, weight, torch.randn(weight.shape, generator=torch.Generator().manual_seed(seed)), eps

    check_case(dataclasses.replace(LAYERNORM, make_inputs=with_bias), TOLERANCE)  # its backward's bias gradient too


def test_strided_inputs_reach_the_op_as_views(tmp_path: Path):
    """layernorm's x is a view whose rows are ROW_STRIDE apart: the harness's copies keep its strides."""
    seen = []

    def cpu_kernel(x, weight, bias, eps):
        seen.append(x.stride())
        return LAYERNORM.reference(x, weight, bias, eps)

    case = dataclasses.replace(LAYERNORM, id="layernorm_strides", cpu_kernel=cpu_kernel)
    for style in ("triton_op", "custom_op"):
        for path in ("cpu_fallback", "train_eager"):
            assert run(case, style, path, tmp_path, device="cpu")["status"] == "pass", (style, path)
    assert seen and set(seen) == {(ROW_STRIDE, 1)}


def test_copies_keep_strides_and_pass_scalars():
    base = torch.randn(4, 10)
    sliced, transposed, expanded = base[:, :7], base.t(), torch.randn(1, 5).expand(3, 5)
    copies = copy_inputs((sliced, transposed, expanded, 1e-6, None, True))
    assert [c.stride() for c in copies[:2]] == [sliced.stride(), transposed.stride()]
    assert copies[2].shape == (3, 5) and copies[3:] == (1e-6, None, True)
    assert all(
        torch.equal(c, t) and c.data_ptr() != t.data_ptr()
        for c, t in zip(copies[:3], (sliced, transposed, expanded), strict=True)
    )


class DispatchedOps(TorchDispatchMode):
    """Records the name of every op dispatched while it is active."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.seen.add(str(func))
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("style", ["triton_op", "custom_op"])
def test_library_backward_calls_the_backward_op(style: str):
    """On CPU the backward op runs its CPU kernel (the case's torch backward); on the GPU, the backward kernel."""
    op = build(SIN_BACKWARD, style, BUILT).trainable()
    x = torch.randn(100, requires_grad=True)
    with DispatchedOps() as dispatched:
        op(x).backward(torch.ones(100))
    assert f"harness.sin_triton_backward_{style}_backward.default" in dispatched.seen
    torch.testing.assert_close(x.grad, x.detach().cos())


@pytest.mark.parametrize("style", ["raw_jit", "autotune"])
def test_launcher_backward_launches_the_plain_backward_kernel(style: str, tmp_path: Path):
    """The launcher's autograd.Function launches the backward kernel as the case declares it: the forward kernel's
    decorators (autotune here) do not apply to it. Launches faked with torch ops, so that it runs on CPU."""
    launched = []

    def launch(kernel, x, **meta):
        return torch.sin(x)

    def launch_backward(kernel, inputs, out, grad):
        launched.append(kernel)
        return (grad * inputs[0].cos(),)

    case = dataclasses.replace(SIN_BACKWARD, id="sin_fake_launches", launch=launch, launch_backward=launch_backward)
    record = run(case, style, "train_eager", tmp_path, device="cpu")
    assert record["status"] == "pass", record["error"]
    assert launched and all(kernel is SIN_BACKWARD.backward_kernel for kernel in launched)


def test_a_warm_cache_does_not_hide_the_backward_graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The same train_compile cell twice, the second with AOTAutograd's cache warm (its disk cache on): the backward
    graph is compiled, so seen, both times. AOTAutograd's cache once handed the second cell a compiled backward
    without compiling it, and the backward kernel was charted as run outside the graph (graph_break)."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))

    def launch(kernel, x, **meta):
        return torch.sin(x)

    def launch_backward(kernel, inputs, out, grad):
        return (grad * inputs[0].cos(),)

    case = dataclasses.replace(SIN_BACKWARD, id="sin_warm_cache", launch=launch, launch_backward=launch_backward)
    # torch's config modules are patched with their own context managers (monkeypatch's undo deletes the option)
    with torch._functorch.config.patch(enable_autograd_cache=True), torch._inductor.config.patch(fx_graph_cache=True):
        first, second = (run(case, "custom_op", "train_compile", tmp_path, device="cpu") for _ in range(2))
    assert first["status"] == second["status"] == "pass", (first.get("reason"), second.get("reason"))
    assert first["capture"].backward_graphs and second["capture"].backward_graphs
