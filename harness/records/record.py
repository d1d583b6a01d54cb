"""One cell's record: built here, and only here, from the cell's spec and outcome, and read as this typed object
by the chart, gate, history, reuse and repro. What a reader asks of a record (its attempts, whether it is
flaky, its rate, its one-line summary) is worked out here, once."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.records.schema import from_json_keeping_extra, to_json
from harness.records.upgrade import from_diagnostics
from harness.spec import FAILURES, OMIT, Capture, CellId, CellSpec, Measurements, Outcome, Stage, Status, Timing


@dataclass(frozen=True)
class Record:
    """One cell's verdict and what came with it: ``capture``, the facts its verdict was read from, and its
    ``measurements``. ``outcomes``: every attempt's status when the cell was run more than once (the first is
    ``status``); ``key``: what its verdict depends on (harness/records/reuse.py); ``reused_from``: the run it was
    copied from (``--reuse``); ``extra``: keys this harness does not know, kept as they were."""

    case: str
    style: str
    path: str
    status: Status
    module: str | None = None
    error_type: str | None = None
    error: str | None = None
    stage: Stage | None = None
    reason: str | None = None
    capture: Capture = field(default_factory=Capture)
    measurements: Measurements = field(default_factory=Measurements)
    seconds: float = 0.0
    key: str | None = None
    traceback: str | None = field(default=None, metadata=OMIT)
    cuda_fault: bool = field(default=False, metadata=OMIT)
    outcomes: tuple[Status, ...] | None = field(default=None, metadata=OMIT)
    reused_from: dict[str, Any] | None = field(default=None, metadata=OMIT)
    # its repro script's run: script, reproduced, line (non-pass cells)
    confirmation: dict[str, Any] | None = field(default=None, metadata=OMIT)
    # how fast its artifact ran, or why it was not timed (a pass on a timed path); older files have none
    timing: Timing | None = field(default=None, metadata=OMIT)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, spec: CellSpec, outcome: Outcome, key: str | None = None) -> Record:
        """The record of a cell that ran: its spec, its outcome and its ``key``."""
        return cls(
            case=spec.case,
            style=spec.style,
            path=spec.path.id,
            status=Status(outcome.status),
            module=spec.module,
            error_type=outcome.error_type,
            error=outcome.error,
            stage=Stage(outcome.stage) if outcome.stage else None,
            reason=outcome.reason,
            capture=outcome.capture,
            measurements=outcome.measurements,
            seconds=outcome.seconds,
            key=key,
            traceback=outcome.traceback,
            cuda_fault=outcome.cuda_fault,
            outcomes=tuple(Status(o) for o in outcome.outcomes) if outcome.outcomes is not None else None,
            timing=outcome.timing,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any], file: Path | str = "(record)", key: str = "record") -> Record:
        """A record from its JSON object, each field checked against its type (``InputError`` naming ``key`` and
        the field); an older record's ``diagnostics`` are read into its capture and measurements."""
        if "diagnostics" in data:
            capture, measurements = from_diagnostics(data["diagnostics"], file, f"{key}.diagnostics")
            data = {**data, "capture": to_json(capture), "measurements": to_json(measurements)}
        return from_json_keeping_extra(cls, data, file, key, ignored={"id", "diagnostics"})

    def invalid(self) -> tuple[str, str] | None:
        """What a record read from a file cannot be (its field, why), beyond each field's type: ``outcomes`` that
        do not begin with its ``status``."""
        if self.outcomes is not None and self.outcomes[:1] != (self.status,):
            shown = ", ".join(map(str, self.outcomes))
            return "outcomes", f"[{shown}] contradicts its status {self.status}: the first attempt's is the record's"
        return None

    def to_dict(self) -> dict[str, Any]:
        """The JSON object: its id, every field (those marked ``OMIT`` only when set), then ``extra``."""
        data = to_json(self)
        extra = data.pop("extra")
        return {"id": self.id, **data, **extra}

    def replace(self, **changes: Any) -> Record:
        return dataclasses.replace(self, **changes)

    @property
    def cell_id(self) -> CellId:
        return CellId(self.case, self.style, self.path)

    @property
    def id(self) -> str:
        return str(self.cell_id)

    @property
    def attempts(self) -> tuple[Status, ...]:
        """The status of every attempt of the cell: ``outcomes`` when it was re-run, else its one status."""
        return self.outcomes or (self.status,)

    @property
    def flaky(self) -> bool:
        """Its attempts disagree."""
        return len(set(self.attempts)) > 1

    @property
    def failed(self) -> bool:
        """Failed on some attempt (a flaky cell counts)."""
        return any(status in FAILURES for status in self.attempts)

    @property
    def reliable_pass(self) -> bool:
        """Passed on every attempt: what a goal's answer needs."""
        return set(self.attempts) == {Status.PASS}

    @property
    def ran(self) -> bool:
        """Not a skip on every attempt."""
        return any(status != Status.SKIP for status in self.attempts)

    @property
    def pass_rate(self) -> float | None:
        """The share of its attempts (skips aside) that passed; None for a skipped cell."""
        ran = [status for status in self.attempts if status != Status.SKIP]
        return sum(status == Status.PASS for status in ran) / len(ran) if ran else None

    def rate(self, status: Status | None = None) -> str:
        """``"2/5"``: how many of its attempts had ``status`` (default: the record's own)."""
        return f"{self.attempts.count(status or self.status)}/{len(self.attempts)}"

    @property
    def status_text(self) -> str:
        """Its status, with its rate when it was re-run: ``wrong 2/5``."""
        return f"{self.status} {self.rate()}" if len(self.attempts) > 1 else str(self.status)

    @property
    def summary(self) -> str:
        """One line: status (with its rate when re-run), stage and the error's first line; a skip's reason. The
        chart's note (harness/report/marks.py ``note_text``) and the gate's column (``gate.outcome``) are other
        views of these parts."""
        if self.status == Status.SKIP:
            return f"skip: {self.reason or ''}"
        first = (self.error or "").strip().splitlines()
        stage = f" at {self.stage}" if self.stage else ""
        return f"{self.status_text}{stage}: {self.error_type or ''}: {first[0] if first else ''}"
