"""The typed values that cross the process boundary: a cell's id, spec (made once, when the matrix loads) and
the outcome its cell process sends back, with the status and stage vocabularies. A record
(harness/records/record.py) is born from exactly these."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, NamedTuple


class Status(enum.StrEnum):
    """A cell's verdict (a plain string in JSON); a new one is one line here, plus its mark in report/marks.py."""

    PASS = "pass"  # ran, and every output (and gradient) matched the reference
    # right numbers, but on a compile-type path the style's kernel ran outside the compiled graph (Dynamo broke
    # the graph around it): neither a pass nor a failure
    GRAPH_BREAK = "graph_break"
    WRONG = "wrong"  # ran without an error, but an output or a gradient differs: silent wrong numbers
    # right numbers, but a PyTorch subsystem did not see the kernel (FlopCounterMode counted 0): deterministic, so
    # never re-run
    BLIND = "blind"
    ERROR = "error"  # raised an exception
    CRASH = "crash"  # a process died
    TIMEOUT = "timeout"  # no result within the path's timeout
    SKIP = "skip"  # cannot run on this machine


class Stage(enum.StrEnum):
    """Where in a path a cell failed (``Cell.stage`` when the exception was raised)."""

    BUILD = "build"
    TRACE = "trace"
    COMPILE = "compile"
    RUN = "run"
    COMPARE = "compare"


STATUSES = tuple(Status)
FAILURES = (Status.WRONG, Status.BLIND, Status.ERROR, Status.CRASH, Status.TIMEOUT)


class CellId(NamedTuple):
    """A cell's id, ``case-style-path``: formatted and parsed here only. Case, style and path ids hold letters,
    digits and ``_`` (matrix.toml is checked for it), never ``-``."""

    case: str
    style: str
    path: str

    def __str__(self) -> str:
        return f"{self.case}-{self.style}-{self.path}"

    @classmethod
    def parse(cls, text: str) -> CellId:
        """``"add-triton_op-eager"`` -> ``CellId("add", "triton_op", "eager")``; ValueError for any other shape."""
        parts = text.split("-")
        if len(parts) != 3 or not all(parts):
            raise ValueError(f"not a cell id (case-style-path): {text!r}")
        return cls(*parts)


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
    tolerance its outputs are compared with."""

    case: str
    module: str
    style: str
    path: PathSpec
    tolerance: Tolerance
    attempt: int = 1  # a cell run again within the run (matrix.toml [run] reruns) is attempt 2, 3...

    @property
    def cell_id(self) -> CellId:
        return CellId(self.case, self.style, self.path.id)

    @property
    def id(self) -> str:
        return str(self.cell_id)


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
