"""The Case API for kernels as users ship them (examples/dropout.py, row_normalize.py, shipped.py) and the library
suites (Liger, fla, FlagGems): ops as shipped, non-float outputs, inputs with no gradient, optional backward and flops,
several kernels per op, in-place ops with a backward, the opcheck path and the interpreter's self-check. In-process
cells on CPU."""

import importlib.util
import sys
from pathlib import Path

import pytest
import torch
import triton

from examples.dropout import CASE as DROPOUT
from examples.row_normalize import CASES as ROW_CASES
from examples.shipped import CASES as SHIPPED
from harness.case import Case
from harness.kernel import interpreter
from harness.kernel.casecheck import check_case
from harness.kernel.compare import Mismatch, assert_match
from harness.kernel.styles import as_shipped
from harness.spec import Tolerance
from tests.conftest import REPO
from tests.fast.test_cells import run

ROW_NORMALIZE, SCALE_INPLACE = ROW_CASES
BF16 = Tolerance(atol=1e-2, rtol=1.6e-2)


def test_shipped_ops_are_labelled_by_how_they_are_wrapped():
    labels = {case.id: as_shipped(case).wrapped_as for case in SHIPPED}
    assert labels == {
        "mul_add_autograd": "autograd.Function MulAddFunction.apply",
        "mul_add_function": "function examples.shipped.mul_add",
        "mul_add_library_op": "torch.library op examples.mul_add",
        "mul_add_module": "nn.Module MulAdd",
    }


def test_shipped_library_op_runs_as_shipped_and_records_it(tmp_path: Path):
    record = run(SHIPPED[2], "as_shipped", "cpu_fallback", tmp_path)
    assert record["status"] == "pass", record
    assert record["measurements"].wrapped_as == "torch.library op examples.mul_add"


@torch.library.custom_op("shippedtest::double", mutates_args=())
def double_op(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@double_op.register_fake
def _(x):
    return torch.empty_like(x)


def double_inputs(size, device, seed):
    return (torch.randn(size, generator=torch.Generator().manual_seed(seed)).to(device),)


DOUBLE = Case(
    id="shipped_double",
    shipped=torch.ops.shippedtest.double,
    reference=lambda x: x * 2,
    make_inputs=double_inputs,
    arg_names=("x",),
    sizes=(37,),
)


def test_a_shipped_library_op_in_a_compiled_graph_is_captured_not_a_graph_break(tmp_path: Path):
    """An op a library ships as a ``torch.library`` op is held whole by the graph, as the custom_op style's is (a
    drawn case was charted 'the kernel ran outside the compiled graph', which its repro did not show)."""
    record = run(DOUBLE, "as_shipped", "cpu_compile", tmp_path)
    assert (record["status"], record["reason"]) == ("pass", None), record
    assert record["capture"].captured == ("shippedtest.double",)


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.full((37,), 3.0))

    def forward(self, x):
        return torch.ops.shippedtest.double(x) * self.weight


SCALED = Case(
    id="scaled_module",
    shipped_module=Scaled,
    reference=lambda x, weight: x * 2 * weight,
    make_inputs=double_inputs,
    arg_names=("x",),
    sizes=(37,),
    flops=lambda shape: shape[0],
)


@pytest.mark.parametrize(("style", "status"), [("control", "pass"), ("as_shipped", "blind")])
def test_flops_of_a_module_with_parameters_are_counted_with_its_reference(style: str, status: str, tmp_path: Path):
    """The declared flops are counted around the reference, which takes the module's parameters too (was: an error,
    the reference called without them); the op has no flop formula: FlopCounterMode is blind to it."""
    record = run(SCALED, style, "flop_counter", tmp_path, device="cpu")
    assert record["status"] == status, record
    assert record["capture"].declared_flops == record["measurements"].example["size"]


def test_styles_a_case_cannot_build_are_skips_saying_why(tmp_path: Path):
    no_kernel = run(SHIPPED[1], "triton_op", "cpu_fallback", tmp_path)
    assert (no_kernel["status"], no_kernel["reason"]) == (
        "skip",
        "case mul_add_function gives no kernel to re-wrap, only its op as shipped (style as_shipped)",
    )
    not_shipped = run(DROPOUT, "as_shipped", "cpu_fallback", tmp_path)
    assert (not_shipped["status"], not_shipped["reason"]) == (
        "skip",
        "case dropout_mask gives no op as shipped (Case.shipped)",
    )
    assert run(SHIPPED[0], "triton_op", "cpu_fallback", tmp_path)["status"] == "pass"  # kernel and shipped op both


def test_non_float_outputs_are_compared_exactly():
    indices = torch.tensor([5000, 7, 3])
    assert_match("output", (torch.ones(3), indices.clone()), (torch.ones(3), indices), BF16)
    off_by_one = torch.tensor([5001, 7, 3])  # within bf16's rtol * 5000: a tolerance would pass it
    with pytest.raises(Mismatch, match=r"^output 1: 1 of 3 elements differ \(compared exactly\); first at \(0,\)"):
        assert_match("output", (torch.ones(3), off_by_one), (torch.ones(3), indices), BF16)
    with pytest.raises(Mismatch, match=r"expected torch.bool of shape \(3,\) \(the reference's\), got torch.int64"):
        assert_match("output", indices, indices > 4, BF16)


def test_a_float_output_of_another_dtype_or_shape_says_which_is_the_references():
    """``assert_close`` would say ``torch.float16 != torch.float32``, not which one the reference gave."""
    expected = torch.ones(3)
    with pytest.raises(Mismatch, match=r"^output: expected torch.float32 of shape \(3,\) \(the reference's\), got "
                                       r"torch.float16 of shape \(3,\)$"):  # fmt: skip
        assert_match("output", expected.half(), expected, BF16)
    with pytest.raises(Mismatch, match=r"expected torch.float32 of shape \(3,\) \(the reference's\), got "
                                       r"torch.float32 of shape \(1, 3\)"):  # fmt: skip
        assert_match("output", expected[None], expected, BF16)


@pytest.mark.parametrize("style", ["triton_op", "custom_op"])
def test_bool_output_and_no_grad_input_train_through_autograd_of_the_reference(style: str, tmp_path: Path):
    """dropout_mask gives no backward: its styles train through autograd of the reference; the bool mask is never
    differentiated and the noise (no_grad) gets no gradient, like the reference's."""
    check_case(DROPOUT, Tolerance(1e-5, 1e-5))
    assert run(DROPOUT, style, "train_eager", tmp_path, device="cpu")["status"] == "pass"
    assert run(DROPOUT, style, "cpu_fallback", tmp_path)["status"] == "pass"


def test_a_hand_written_backward_need_not_give_a_no_grad_gradient():
    case = Case(
        id="rope_like",
        reference=lambda x, cos: x * cos,
        make_inputs=lambda size, device, seed: tuple(
            torch.randn(2, size, generator=torch.Generator().manual_seed(seed))
        ),
        backward=lambda inputs, out, grad: (grad * inputs[1], None),
        arg_names=("x", "cos"),
        no_grad=("cos",),
        sizes=(5,),
        shipped=torch.mul,
    )
    check_case(case, Tolerance(1e-5, 1e-5))
    without = Case(**{**vars(case), "no_grad": ()})
    with pytest.raises(Exception, match="backward: no gradient of cos, autograd of the reference has one"):
        check_case(without, Tolerance(1e-5, 1e-5))


def test_flop_counter_without_flops_is_a_skip(tmp_path: Path):
    record = run(DROPOUT, "triton_op", "flop_counter", tmp_path, device="cpu")
    assert (record["status"], record["reason"]) == (
        "skip",
        "the case declares no flops (Case.flops): nothing to compare FlopCounterMode's count with",
    )


def test_opcheck_checks_library_ops_and_skips_the_rest(tmp_path: Path):
    assert run(ROW_NORMALIZE, "custom_op", "opcheck", tmp_path, device="cpu")["status"] == "pass"
    assert run(SCALE_INPLACE, "custom_op", "opcheck", tmp_path, device="cpu")["status"] == "pass"
    launcher = run(ROW_NORMALIZE, "raw_jit", "opcheck", tmp_path, device="cpu")
    assert (launcher["status"], launcher["reason"]) == ("skip", "not a torch.library op (function): opcheck checks ops")
    shipped = run(SHIPPED[0], "as_shipped", "opcheck", tmp_path, device="cpu")
    assert shipped["reason"] == "not a torch.library op (autograd.Function MulAddFunction.apply): opcheck checks ops"


def test_inplace_library_op_cannot_train_and_says_so(tmp_path: Path):
    record = run(SCALE_INPLACE, "custom_op", "train_eager", tmp_path, device="cpu")
    assert record["status"] == "error"
    assert record["error"].startswith(
        "harness::scale_inplace_custom_op writes into x: custom_op cannot train it, a limit of torch.library, not of "
        "the case (no autograd for an op that writes into its inputs; the launcher trains it): Cannot register"
    )
    assert run(SCALE_INPLACE, "custom_op", "cpu_fallback", tmp_path)["status"] == "pass"


def test_interpreter_self_check_flags_what_it_computes_wrong(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    interpreter.interpreter_fault.cache_clear()
    try:
        assert interpreter.interpreter_fault("float32") is None
        if triton.__version__ == "3.7.1":  # its interpreter's bf16 products are wrong (measured: 7e32 for 0.68)
            fault = interpreter.interpreter_fault("bfloat16")
            assert fault and fault.startswith("Triton's interpreter computes bfloat16 wrong here (self-check a*b+a")
            bf16 = Case(**{**vars(SHIPPED[0]), "id": "mul_add_bf16", "dtype": torch.bfloat16})
            record = run(bf16, "raw_jit", "eager", tmp_path)
            assert (record["status"], record["reason"]) == ("skip", fault)
    finally:
        interpreter.interpreter_fault.cache_clear()


@pytest.mark.skipif(importlib.util.find_spec("liger_kernel") is None, reason="the liger extra is not installed")
def test_liger_suite_lists_and_its_references_load():
    from harness.matrix.config import load_matrix

    matrix = load_matrix(REPO / "matrix-liger.toml")  # imports each case and runs its load check on CPU
    assert len(matrix.cases) >= 6 and matrix.styles == ("as_shipped", "control")
    assert "opcheck" in [path.id for path in matrix.paths]
    assert len(matrix.cells) == len(matrix.cases) * 2 * len(matrix.paths)
    from harness.case import load_case

    labels = {case: as_shipped(load_case(matrix.modules[case], case)).wrapped_as for case in matrix.cases}
    assert labels["liger_rms_norm"] == "autograd.Function LigerRMSNormFunction.apply"
    assert labels["liger_cross_entropy"] == "autograd.Function LigerCrossEntropyFunction.apply"


@pytest.mark.skipif(importlib.util.find_spec("fla") is None, reason="the fla extra is not installed")
def test_fla_suite_lists_and_its_references_run_on_cpu(tmp_path: Path):
    labels = library_suite("matrix-fla.toml", tmp_path)
    assert labels["fla_rms_norm"] == "nn.Module RMSNorm"
    assert labels["fla_swiglu"] == "autograd.Function SwiGLUFunction.apply"
    assert labels["fla_simple_gla"] == "function fla.ops.simple_gla.chunk.chunk_simple_gla"


def test_flaggems_suite_lists_and_its_references_run_on_cpu_without_importing_flag_gems(tmp_path: Path):
    labels = library_suite("matrix-flaggems.toml", tmp_path)
    assert labels["flaggems_softmax"] == "function flag_gems.ops.softmax"
    assert "flag_gems" not in sys.modules  # importing it needs a GPU: each case imports it at its op's first call


def library_suite(matrix_file: str, tmp_path: Path) -> dict[str, str]:
    """Load a library suite (each case imported and checked on CPU), run each case's control on cpu_fallback in
    this process, and return how each op as shipped is labelled."""
    from harness.case import load_case
    from harness.matrix.config import load_matrix

    matrix = load_matrix(REPO / matrix_file)
    assert len(matrix.cases) >= 3 and matrix.styles == ("as_shipped", "control")
    assert len(matrix.cells) == len(matrix.cases) * 2 * len(matrix.paths)
    for case in matrix.cases:
        assert run(matrix.modules[case], "control", "cpu_fallback", tmp_path)["status"] == "pass", case
    return {case: as_shipped(load_case(matrix.modules[case], case)).wrapped_as for case in matrix.cases}


def test_captured_kernels_are_named_from_the_graph(tmp_path: Path):
    """record_graph names the Triton kernels a captured graph holds (through the kernel side table), under their
    decorators: the kernels_captured diagnostic."""
    from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table, triton_kernel_wrapper_mutation

    from harness.cell.context import Cell

    autotuned = triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 256})], key=["n_elements"])(SHIPPED[0].kernel)
    graph = torch.fx.Graph()
    for kernel in (autotuned, ROW_NORMALIZE.kernels["scale"]):
        graph.call_function(triton_kernel_wrapper_mutation, kwargs={"kernel_idx": kernel_side_table.add_kernel(kernel)})
    graph.output(None)
    cell = Cell(case=SHIPPED[0], style="triton_op", device="cpu", tolerance=BF16, workdir=tmp_path)
    cell.record_graph(torch.fx.GraphModule(torch.nn.Module(), graph))
    assert cell.capture.kernels_captured == ("mul_add_kernel", "scale_rows_kernel")
    assert cell.capture.captured == ("triton_kernel_wrapper_mutation",)


def test_launch_observer_is_undone_after_the_cell():
    from triton import knobs

    from harness.kernel.compat import interpreter_launches
    from harness.kernel.launches import observed_launches

    owner, method, _ = interpreter_launches()
    before, hooks = getattr(owner, method), list(getattr(knobs.runtime.launch_enter_hook, "calls", []))
    with observed_launches() as launched:
        assert getattr(owner, method) is not before
    assert getattr(owner, method) is before and launched == set()
    assert list(getattr(knobs.runtime.launch_enter_hook, "calls", [])) == hooks


def test_load_check_takes_a_backward_beside_an_integer_output():
    """An argmax output beside the values: the load check draws no grad for the integer output (a random int64 grad
    crashed it) and compares the backward of the float one."""
    case = Case(
        id="max_and_argmax",
        reference=lambda x: (x.max(-1).values, x.argmax(-1)),
        make_inputs=lambda size, device, seed: (torch.randn(size, 7, generator=torch.Generator().manual_seed(seed)),),
        backward=lambda inputs, out, grad: (
            torch.zeros_like(inputs[0]).scatter(-1, out[1][:, None], grad[0][:, None]),
        ),
        arg_names=("x",),
        outputs=2,
        sizes=(5,),
        shipped=lambda x: (x.max(-1).values, x.argmax(-1)),
    )
    check_case(case, Tolerance(1e-5, 1e-5))
    wrong = Case(**{**vars(case), "backward": lambda inputs, out, grad: (torch.zeros_like(inputs[0]),)})
    with pytest.raises(Exception, match="backward: gradient of x differs from autograd of the reference"):
        check_case(wrong, Tolerance(1e-5, 1e-5))


def test_the_launch_observer_reads_the_name_and_never_breaks_a_launch():
    """Triton hands the launch hook lazy metadata; evaluating it runs the kernel's ``launch_metadata``
    function, which is None for a kernel launched from Dynamo's graph-broken frame (on the H200 every
    autotune-over-heuristics launcher on ``dynamic`` raised TypeError inside Triton's launch, charged to the
    style). The observer takes the name without evaluating it."""
    from triton import knobs
    from triton.compiler.compiler import LazyDict

    from harness.kernel.launches import observed_launches

    metadata = LazyDict({"name": "add_kernel", "function": None, "stream": 0})
    metadata.add(None, ())  # what Triton left for that launch: metadata.get() raises
    with pytest.raises(TypeError):
        metadata.get()
    metadata = LazyDict({"name": "add_kernel", "function": None, "stream": 0})
    metadata.add(None, ())
    with observed_launches() as launched:
        knobs.runtime.launch_enter_hook(metadata)
    assert launched == {"add_kernel"}


@torch.library.custom_op("shippedtest::mm", mutates_args=())
def _shipped_mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a @ b


_shipped_mm.register_fake(lambda a, b: a.new_empty(a.shape[0], b.shape[1]))


def _mm_inputs(size, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(size, 8, generator=gen).to(device), torch.randn(8, 5, generator=gen).to(device)


MM_FLOPS = Case(
    id="shipped_mm",
    shipped=torch.ops.shippedtest.mm.default,
    reference=torch.mm,
    make_inputs=_mm_inputs,
    arg_names=("a", "b"),
    sizes=(7,),
    flops=lambda a, b: 2 * a[0] * a[1] * b[1],
)


def test_flops_counted_are_the_ops_alone_not_the_references_beside_it(tmp_path: Path):
    """A library op with a flop formula, as shipped: FlopCounterMode counts every op under it, and the reference the
    path compares with ran inside the counter too (its ``aten.mm`` added as many flops again: ``blind``, a verdict
    the harness's own comparison caused). Now the reference runs before the count."""
    from torch.utils.flop_counter import register_flop_formula

    register_flop_formula(torch.ops.shippedtest.mm)(lambda a, b, *args, out_shape=None, **kw: 2 * a[0] * a[1] * b[1])
    record = run(MM_FLOPS, "as_shipped", "flop_counter", tmp_path, device="cpu")
    assert record["status"] == "pass", record
    rows = (record["measurements"].example or {"size": 7})["size"]
    assert record["capture"].flops == record["capture"].declared_flops == 2 * rows * 8 * 5


def test_the_launch_observer_leaves_what_dynamo_traces_alone():
    """Kernels launched from Python are seen by Triton's launch hook, called from the launcher: ``JITFunction.run``,
    which Dynamo traces into where a launch falls back to Python, stays Triton's own (a wrapper's ``set.add`` was the
    most frequent graph-break reason of every autotune-over-heuristics cell on ``dynamic``)."""
    from triton.runtime.jit import JITFunction

    from harness.kernel.launches import observed_launches

    run = JITFunction.run
    with observed_launches():
        assert JITFunction.run is run
