"""Whether a repro script, run outside the harness, showed the failure its cell recorded: a ``wrong`` script raised
"wrong numbers", a ``graph_break`` one "graph break", a ``blind`` one FlopCounterMode's count, a ``timeout`` one ran
past its limit, a ``crash`` (or a CUDA fault) one died or met the fault, and an ``error`` one raised the cell's
exception, by the script's own exception line: the same type where the type names the failure, else the same message
line (op names, paths, addresses and numbers set aside). A failure its script did not show is a harness suspect: the
harness's own scaffolding may have caused it. A script stopped with the run, killed at its path's timeout while its
cell did not time out, or out of GPU memory where its cell was not (the run's other processes held it), confirms
nothing either way: its failure is "not confirmed" (``reproduced`` null), never a suspect."""

from __future__ import annotations

import builtins
import dataclasses
import re
from typing import Any

from harness.records.record import Record
from harness.spec import CASE_BUG, CASE_BUG_CAUSE, CUDA_FAULT_MARKERS, Status, says_out_of_gpu_memory

MARKERS = {
    Status.WRONG: "wrong numbers:",
    Status.GRAPH_BREAK: "graph break:",
    Status.BLIND: "FlopCounterMode counted",
}
# ``torch._dynamo.exc.UserError: Constraints violated``, or the bare type of an exception raised without a message
# (a launcher's ``assert x.is_contiguous()``)
RAISED = re.compile(r"^([A-Za-z_][\w.]*)(?::(?:\s(.*))?)?$")
SPECIFIC = (
    (re.compile(r"torch\.ops\.\w+\.\w+|\w+::\w+"), "OP"),  # an op's name, as a message may spell it
    (re.compile(r"\S*/\S*"), "PATH"),
    (re.compile(r"0x[0-9a-fA-F]+"), "ADDR"),
    (re.compile(r"\d+(\.\d+)?(e[-+]?\d+)?"), "N"),
)
COMPARED = 60  # characters of the message lines compared
CONTAINED = 20  # ... the fewest found inside the other message (shorter: only at its start)
BUILTIN_ERRORS = frozenset(
    name for name, value in vars(builtins).items() if isinstance(value, type) and issubclass(value, BaseException)
)


def reproduced(record: Record, returncode: int | None, output: str, line: str) -> bool | None:
    """Whether a script that exited ``returncode`` (None: killed at its limit) printing ``output``, whose error
    line is ``line`` (its last traceback's ``Type: message`` line), showed the failure of ``record``; None when it
    ran out of time on a cell that did not (not confirmed)."""
    if returncode == 0:
        return False
    if returncode is None:
        return True if record.status == Status.TIMEOUT else None
    if record.status == Status.TIMEOUT:
        return False
    if crowded_out(record, output):
        return None
    if record.cuda_fault or record.status == Status.CRASH:
        return returncode < 0 or any(marker in output for marker in CUDA_FAULT_MARKERS)
    marker = MARKERS.get(record.status)
    if marker is not None:
        return marker in line
    return same_exception(record, line)


def crowded_out(record: Record, output: str) -> bool:
    """Whether a script printing ``output`` ran out of GPU memory where the cell of ``record`` did not: the run's
    other processes held it, which says nothing of the failure."""
    return says_out_of_gpu_memory(output) and not says_out_of_gpu_memory(record.error or "")


def same_exception(record: Record, line: str) -> bool:
    """Whether ``line`` (``Type: message``) is the exception ``record`` holds: the same type (its module aside)
    where the type names what went wrong, or else the same message: the first ``COMPARED`` characters of one's
    first line, case-specific names set aside, begin or lie in the other's (a cell may see an exception wrapped
    where its script sees it bare, or the reverse). A builtin type (``RuntimeError``, ``AssertionError``: what a
    driver, a kernel's launch and a wrapper all raise) needs the message too, or, raised without one (a bare
    ``assert``), none on either side."""
    said = RAISED.match(line.strip())
    if said is None:
        return False
    kind, message = said.group(1).rpartition(".")[2], (said.group(2) or "").strip()
    lines = (record.error or "").strip().splitlines()
    first = lines[0] if lines and lines[0] != f"{record.error_type}()" else ""  # the repr of one without a message
    recorded, shown = _plain(first, record), _plain(message, record)
    unsaid = not recorded and not shown
    if record.error_type and kind == record.error_type and (kind not in BUILTIN_ERRORS or unsaid):
        return True
    if _holds(recorded, shown) or _holds(shown, recorded):
        return True
    cause = _case_bug_cause(record)
    return cause is not None and same_exception(cause, line)


def _case_bug_cause(record: Record) -> Record | None:
    """The exception a ``CaseBug`` wraps (``the case's make_inputs failed at size 17 ...: ValueError: too big``), as
    the record of that exception: the case's code raises it bare in the cell's script, whose line is then compared
    with it, a short message or a bare ``assert`` included."""
    if record.error_type != CASE_BUG:
        return None
    first = (record.error or "").strip().splitlines()[:1]
    problem = first[0].partition(CASE_BUG_CAUSE)[2] if first else ""
    said = RAISED.match(problem)
    if said is None or not said.group(2):
        return None
    return dataclasses.replace(record, error_type=said.group(1), error=said.group(2))


def _holds(outer: str, inner: str) -> bool:
    """``inner``'s first ``COMPARED`` characters begin ``outer``, or lie in it where they are ``CONTAINED`` or more."""
    start = inner[:COMPARED]
    return bool(start) and (outer[:COMPARED] == start or (len(start) >= CONTAINED and start in outer))


def _plain(message: str, record: Record) -> str:
    for name in (record.case, record.style, record.path):
        message = re.sub(rf"\b{re.escape(name)}\b", "ID", message)
    for pattern, replacement in SPECIFIC:
        message = pattern.sub(replacement, message)
    return " ".join(message.split())


def confirmation(
    record: Record,
    script: str,
    returncode: int | None,
    output: str,
    line: str,
    stopped: bool = False,
    written_for: str | None = None,
) -> dict[str, Any]:
    """The record's ``confirmation``: the script, the cell it was ``written_for`` (the first of the cells failing
    the same way: this one, or another case's), whether it reproduced the failure (None: not confirmed, as when the
    run ``stopped`` it), and its last line."""
    found = None if stopped else reproduced(record, returncode, output, line)
    return {"script": script, "cell": written_for or record.id, "reproduced": found, "line": line[:300]}


def is_suspect(record: Record) -> bool:
    """A failure whose repro script ran and did not show it."""
    return record.confirmation is not None and record.confirmation.get("reproduced", False) is False


def not_confirmed(record: Record) -> bool:
    """A failure whose repro script was stopped, or ran out of time, before it showed anything."""
    return record.confirmation is not None and record.confirmation.get("reproduced", False) is None


def needs_confirmation(record: Record) -> bool:
    """A failure with no confirmation yet, or one that confirmed nothing (a later run tries again)."""
    return record.confirmation is None or not_confirmed(record)
