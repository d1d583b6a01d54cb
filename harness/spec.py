"""The typed values that cross the process boundary: a cell's spec (made once, when the matrix loads) and the
outcome its cell process sends back. A record (records.py) is born from exactly these two."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# graph_break: right numbers, but on a compile-type path the style's kernel ran outside the compiled graph (Dynamo
# broke the graph around it): neither a pass nor a failure. blind: right numbers, but a PyTorch subsystem did not
# see the kernel (FlopCounterMode counted 0): deterministic, so never re-run.
STATUSES = ("pass", "graph_break", "wrong", "blind", "error", "crash", "timeout", "skip")
FAILURES = ("wrong", "blind", "error", "crash", "timeout")


@dataclass(frozen=True)
class Tolerance:
    """How far an output may be from the reference (``torch.testing.assert_close``'s atol and rtol)."""

    atol: float
    rtol: float


@dataclass(frozen=True)
class PathSpec:
    """A path as matrix.toml declares it."""

    id: str
    device: str
    timeout: float
    examples: int = 1  # inputs per cell: the case's first size, then sizes hypothesis draws


@dataclass(frozen=True)
class CellSpec:
    """One cell of the matrix: which case (and the module defining it), which style, which path, and the
    tolerance its outputs are compared with. ``id`` is the one place a cell id is formatted."""

    case: str
    module: str
    style: str
    path: PathSpec
    tolerance: Tolerance
    attempt: int = 1  # a cell run again within the run (matrix.toml [run] reruns) is attempt 2, 3...

    @property
    def id(self) -> str:
        return f"{self.case}-{self.style}-{self.path.id}"


@dataclass
class Outcome:
    """What running a cell gave: its status, the failure if any, what the path observed, how long it took.
    ``outcomes`` holds the status of every attempt when the cell was run more than once (the first is
    ``status``)."""

    status: str = "pass"
    error_type: str | None = None
    error: str | None = None
    stage: str | None = None
    reason: str | None = None
    traceback: str | None = None
    cuda_fault: bool = False
    diagnostics: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    outcomes: list[str] | None = None

    @property
    def failed(self) -> bool:
        return self.status in FAILURES
