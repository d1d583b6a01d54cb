"""One cell's record: built here, and only here, from the cell's spec and outcome, and read as this typed object
by the chart, gate, history, reuse and repro. What a reader asks of a record (its attempts, whether it is
flaky, its rate, its one-line summary) is worked out here, once."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from harness.spec import FAILURES, CellId, CellSpec, Outcome, Stage, Status

# The keys every record has in JSON, in this order; OPTIONAL only where the record has them.
KEYS = ("id", "case", "style", "path", "module", "status", "error_type", "error", "stage", "reason")
KEYS += ("diagnostics", "seconds", "key")
OPTIONAL = ("traceback", "cuda_fault", "outcomes", "reused_from", "confirmation")


@dataclass(frozen=True)
class Record:
    """One cell's verdict and what came with it. ``outcomes``: every attempt's status when the cell was run more
    than once (the first is ``status``); ``key``: what its verdict depends on (harness/records/reuse.py);
    ``reused_from``: the run it was copied from (``--reuse``); ``extra``: keys this harness does not know,
    kept as they were."""

    case: str
    style: str
    path: str
    status: Status
    module: str | None = None
    error_type: str | None = None
    error: str | None = None
    stage: Stage | None = None
    reason: str | None = None
    diagnostics: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    key: str | None = None
    traceback: str | None = None
    cuda_fault: bool = False
    outcomes: tuple[Status, ...] | None = None
    reused_from: dict[str, Any] | None = None
    confirmation: dict[str, Any] | None = None  # its repro script's run: script, reproduced, line (non-pass cells)
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
            diagnostics=outcome.diagnostics,
            seconds=outcome.seconds,
            key=key,
            traceback=outcome.traceback,
            cuda_fault=outcome.cuda_fault,
            outcomes=tuple(Status(o) for o in outcome.outcomes) if outcome.outcomes is not None else None,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Record:
        """A record from its JSON object (checked by harness/records/results.py first; ValueError on a bad
        status or stage)."""
        known = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        outcomes = data.get("outcomes")
        typed = {
            "status": Status(data["status"]),
            "stage": Stage(data["stage"]) if data.get("stage") else None,
            "outcomes": tuple(Status(o) for o in outcomes) if outcomes else None,
            "cuda_fault": bool(data.get("cuda_fault")),
            "diagnostics": data.get("diagnostics") or {},
        }
        plain = {name: value for name, value in data.items() if name in known and name not in typed}
        extra = {name: value for name, value in data.items() if name not in known and name != "id"}
        return cls(**plain, **typed, extra=extra)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object: every key of ``KEYS``, then those of ``OPTIONAL`` the record has, then ``extra``."""
        data: dict[str, Any] = {"id": self.id}
        data.update({name: getattr(self, name) for name in KEYS[1:]})
        data.update(status=str(self.status), stage=str(self.stage) if self.stage else None)  # plain JSON strings
        if self.outcomes is not None:
            data["outcomes"] = [str(status) for status in self.outcomes]
        data.update({name: getattr(self, name) for name in OPTIONAL if getattr(self, name) and name != "outcomes"})
        return {**data, **self.extra}

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
