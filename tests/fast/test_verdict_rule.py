"""The verdict rule (harness/cell/verdict.py) on typed facts alone: every status it gives, each way it gets there."""

import pytest

from harness.cell.verdict import Facts, Kernel, verdict
from harness.spec import Capture, Status

COMPILED = Capture(compiled=True, captured=("harness.op_triton_op",), graphs=1)
BROKE = Capture(compiled=True, graphs=2, graph_breaks=2, graph_break_reasons=("call to torch.compiler.disable",))
TRAINED = Capture(compiled=True, trained=True, captured=("triton_kernel_wrapper_mutation",), graph_breaks=1)
SHIPPED = Capture(
    compiled=True,
    captured=("triton_kernel_wrapper_mutation",),
    kernels_launched=("_bwd", "_fwd", "triton_poi_fused_clone_0"),  # Inductor's own kernel is no user kernel
    kernels_captured=("_fwd",),
)
FLOPS = Capture(flops=0, declared_flops=3001)


@pytest.mark.parametrize(
    ("facts", "status", "said"),
    [
        (Facts(Capture(), Kernel.OP), Status.PASS, None),  # eager: nothing to capture
        (Facts(COMPILED, Kernel.OP), Status.PASS, None),
        (Facts(BROKE, Kernel.NONE), Status.PASS, None),  # the control has no kernel of its own
        (Facts(BROKE, Kernel.OP), Status.GRAPH_BREAK, "the kernel ran outside the compiled graph (2 graph break(s): "),
        (Facts(Capture(compiled=True), Kernel.OP), Status.GRAPH_BREAK, "the kernel ran outside the compiled graph (0 "),
        # the forward kernel compiled, the backward ran eagerly: no backward graph held it
        (Facts(TRAINED, Kernel.OP, backward_kernel=True), Status.GRAPH_BREAK, "the backward kernel ran outside"),
        (Facts(TRAINED, Kernel.OP), Status.PASS, None),  # no backward kernel of its own: autograd's backward
        (Facts(Capture(**{**vars(TRAINED), "captured_backward": ("x",)}), Kernel.OP, True), Status.PASS, None),
        (Facts(SHIPPED, Kernel.KERNELS), Status.GRAPH_BREAK, "kernel(s) _bwd ran outside the compiled graph (0 "),
        (Facts(SHIPPED, Kernel.OP), Status.PASS, None),  # a library op is captured whole
        (Facts(Capture(**{**vars(SHIPPED), "kernels_captured": ("_bwd", "_fwd")}), Kernel.KERNELS), Status.PASS, None),
        (Facts(FLOPS, Kernel.OP), Status.BLIND, "flops: FlopCounterMode counted 0 for the op, the case declares 3001"),
        (Facts(FLOPS, Kernel.NONE), Status.PASS, None),  # the control's count is not checked
        (Facts(Capture(flops=3001, declared_flops=3001), Kernel.OP), Status.PASS, None),
        (Facts(FLOPS, Kernel.OP, mismatch="output: max abs diff 0.5"), Status.WRONG, "output: max abs diff 0.5"),
        (Facts(BROKE, Kernel.OP, mismatch="output 1: differs"), Status.WRONG, "output 1: differs"),  # wrong first
    ],
)
def test_the_verdict_of_typed_facts(facts: Facts, status: Status, said: str | None):
    got, text = verdict(facts)
    assert got == status
    assert text == said if said is None else text.startswith(said), text


def test_every_verdict_status_is_reachable():
    reached = {
        verdict(facts)[0]
        for facts in (
            Facts(COMPILED, Kernel.OP),
            Facts(BROKE, Kernel.OP),
            Facts(FLOPS, Kernel.OP),
            Facts(Capture(), Kernel.OP, mismatch="output: differs"),
        )
    }
    assert reached == {Status.PASS, Status.GRAPH_BREAK, Status.BLIND, Status.WRONG}


def test_a_graph_break_says_dynamos_reasons():
    _, text = verdict(Facts(BROKE, Kernel.OP))
    assert text.endswith("(2 graph break(s): call to torch.compiler.disable)")
