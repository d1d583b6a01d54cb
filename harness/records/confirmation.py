"""Whether a repro script, run outside the harness, showed the failure its cell recorded: a ``wrong`` script raised
"wrong numbers", a ``graph_break`` one "graph break", a ``blind`` one FlopCounterMode's count, a ``timeout`` one ran
past its limit, a ``crash`` (or a CUDA fault) one died or met the fault, and an ``error`` one raised the cell's
error type or message. A failure its script did not show is a harness suspect: the harness's own scaffolding may
have caused it."""

from __future__ import annotations

import re
from typing import Any

from harness.records.record import Record
from harness.spec import CUDA_FAULT_MARKERS, Status

MARKERS = {
    Status.WRONG: "wrong numbers:",
    Status.GRAPH_BREAK: "graph break:",
    Status.BLIND: "FlopCounterMode counted",
}


def reproduced(record: Record, returncode: int | None, output: str) -> bool:
    """Whether a script that exited ``returncode`` (None: killed at its limit) printing ``output`` showed the
    failure of ``record``."""
    if returncode == 0:
        return False
    if record.status == Status.TIMEOUT:
        return returncode is None
    if returncode is None:
        return False
    if record.cuda_fault or record.status == Status.CRASH:
        return returncode < 0 or any(marker in output for marker in CUDA_FAULT_MARKERS)
    marker = MARKERS.get(record.status)
    if marker is not None:
        return marker in output
    first = (record.error or "").strip().splitlines()
    message = " ".join(first[0].split())[:60] if first else ""
    typed = bool(record.error_type) and re.search(rf"\b{re.escape(str(record.error_type))}\b", output) is not None
    return typed or (bool(message) and message in " ".join(output.split()))


def confirmation(record: Record, script: str, returncode: int | None, output: str, last_line: str) -> dict[str, Any]:
    """The record's ``confirmation``: the script, whether it reproduced the failure, and its last line."""
    return {"script": script, "reproduced": reproduced(record, returncode, output), "line": last_line[:300]}


def is_suspect(record: Record) -> bool:
    """A failure whose repro script ran and did not show it."""
    return record.confirmation is not None and not record.confirmation.get("reproduced")
