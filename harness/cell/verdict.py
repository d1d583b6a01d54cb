"""The verdict of a cell that ran to its end: pass, graph_break, blind or wrong, from typed facts alone."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from harness.kernel.launches import user_kernels
from harness.spec import Capture, Status

SUBSYSTEM_MISMATCH = "SubsystemMismatch"  # a blind record's error_type
MISMATCH = "Mismatch"  # a wrong record's error_type


class Kernel(enum.Enum):
    """What of the style a compiled graph must hold for the kernel to count as compiled."""

    NONE = "none"  # the control: no kernel of its own
    OP = "op"  # the style's op (a library op is captured whole)
    KERNELS = "kernels"  # the op as shipped, no library op: every user kernel it launched


@dataclass(frozen=True)
class Facts:
    """What a verdict reads: the capture, what kernel the style has, whether the case has a backward kernel, and
    the first output or gradient unlike the reference (None: every number matched)."""

    capture: Capture
    kernel: Kernel
    backward_kernel: bool = False
    mismatch: str | None = None


def verdict(facts: Facts) -> tuple[Status, str | None]:
    """The status and what it says: wrong (the mismatch), blind (the counts), graph_break (what ran outside the
    compiled graph, with Dynamo's break reasons), else pass (None)."""
    capture = facts.capture
    if facts.mismatch is not None:
        return Status.WRONG, facts.mismatch
    if facts.kernel is not Kernel.NONE and capture.declared_flops is not None:
        if capture.flops != capture.declared_flops:
            counted, declared = capture.flops, capture.declared_flops
            return Status.BLIND, f"flops: FlopCounterMode counted {counted} for the op, the case declares {declared}"
    missed = outside(facts)
    if not missed:
        return Status.PASS, None
    reasons = "; ".join(capture.graph_break_reasons or ["no graph held it"])
    return Status.GRAPH_BREAK, f"{' and '.join(missed)} ({capture.graph_breaks} graph break(s): {reasons})"


def outside(facts: Facts) -> list[str]:
    """On a compile-type path, what of the style's kernel ran outside the compiled graphs (nothing for the
    control, which has no kernel of its own, or off a compile-type path)."""
    capture = facts.capture
    if not capture.compiled or facts.kernel is Kernel.NONE:
        return []
    missed = [] if capture.captured else ["the kernel ran outside the compiled graph"]
    if capture.trained and facts.backward_kernel and not capture.captured_backward:  # it ran eagerly
        missed.append("the backward kernel ran outside the compiled graph")
    if facts.kernel is Kernel.KERNELS:
        uncaptured = sorted(set(user_kernels(list(capture.kernels_launched))) - set(capture.kernels_captured))
        missed += [f"kernel(s) {', '.join(uncaptured)} ran outside the compiled graph"] if uncaptured else []
    return missed
