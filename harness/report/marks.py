"""What one record looks like in the chart: its mark, its attempts' rate, and its footnote's text."""

from __future__ import annotations

import re

from harness.records.record import Record
from harness.spec import SEVERITY, Status

SYMBOLS = {str(status): status.rule.symbol for status in Status}  # each status's mark (harness/spec.py's table)
SUBSYSTEM = SYMBOLS["blind"]  # status blind: only a PyTorch subsystem missed the kernel (FlopCounterMode counted 0)
GRAPH_BREAK = SYMBOLS["graph_break"]  # status graph_break: right numbers, but the kernel ran outside the compiled graph
FLAKY = "🎲"
BROKEN_PATH = "†"
CONTRADICTS = "≠docs"
MISSING = "·"
REUSED = "♻"  # not run: the record was copied from an earlier run (--reuse) whose key for the cell is the same
MAX_NOTE = 1000  # a first sentence longer than this (a tensor dump) is cut at a word
LEGEND = [
    (SYMBOLS["pass"], "pass", "ran, and every output (and gradient) matched the PyTorch reference"),
    (
        SYMBOLS["wrong"],
        "wrong",
        "ran without an error, but an output or a gradient differs from the reference: **silent wrong numbers**",
    ),
    (
        GRAPH_BREAK,
        "graph break",
        "on a compile path: outputs right, but the kernel (or its backward kernel) ran outside the compiled graph, "
        "Dynamo broke the graph around it (the note gives its reasons): the style serves no compilation goal",
    ),
    (
        SUBSYSTEM,
        "subsystem blind",
        "outputs right, but a PyTorch subsystem silently ignored the kernel (FlopCounterMode counted 0 flops for "
        "it): not wrong numbers, but the subsystem is of no use with this style; deterministic, so never re-run",
    ),
    (SYMBOLS["error"], "error", "raised an exception (the note gives stage, type and its first sentence)"),
    (SYMBOLS["crash"], "crash", "a process died (signal)"),
    (SYMBOLS["timeout"], "timeout", "no result within the path's timeout"),
    (SYMBOLS["skip"], "skip", "cannot run on this machine (reason in the note); neither a pass nor a fail"),
    (
        FLAKY,
        "flaky",
        "the cell looked flaky, was run again within the run, and its attempts disagreed; "
        f"`{SYMBOLS['wrong']} 2/5 {FLAKY}` = 2 of 5 attempts wrong (the record's status is the first attempt's; "
        f"one whose first attempt passed leads with its pass rate: `{SYMBOLS['pass']} 3/5, {SYMBOLS['wrong']} 2/5 "
        f"{FLAKY}`). "
        f"A rate without {FLAKY} (`❌ 3/3`): every attempt failed alike. A flaky cell is never a pass",
    ),
    (
        BROKEN_PATH,
        "broken path",
        "the `control` style (pure PyTorch) fails on this path too: the path is broken "
        "on this machine, not the wrapping style",
    ),
    (
        CONTRADICTS,
        "contradicts the docs",
        "the measurement contradicts what the docs claim for this style and "
        "path (the section Contradicts the docs lists the claims, where the run has any)",
    ),
    ("[n]", "note", "the error's first sentence, in [Notes](#notes); the full text is in results.json"),
    (MISSING, "not recorded", "the run ended before this cell, or it was not selected"),
]


def reused_legend(records: list[Record]) -> str | None:
    """The legend's line for reused records, naming the run(s) they come from; None when there are none."""
    sources: dict[tuple[str, str], int] = {}
    for record in records:
        source = record.reused_from
        if isinstance(source, dict):
            run = (str(source.get("timestamp")), str(source.get("commit")))
            sources[run] = sources.get(run, 0) + 1
    if not sources:
        return None
    runs = "; ".join(
        f"the run of {time}, commit {commit} ({count} cell{'s' * (count != 1)})"
        for (time, commit), count in sources.items()
    )
    return (
        f"{REUSED} **reused**: not run this time, the record was copied from {escape(runs, 600)}: its key (torch, "
        "triton, CUDA, GPU, harness and case sources, matrix entry) is unchanged"
    )


def escape(text: str, limit: int = MAX_NOTE) -> str:
    """One line of text that cannot break a markdown table or inject HTML (``<`` and an entity's ``&`` are
    backslash-escaped: GitHub shows them as typed, with no ``&lt;`` in the file); longer than ``limit``, it is
    cut at the last word boundary before it (never inside a URL)."""
    flat = cut(text, limit)
    flat = _ENTITY.sub(r"\\&", flat.replace("\\", "\\\\")).replace("<", "\\<")
    return flat.replace("|", "\\|").replace("`", "'").replace("*", "\\*")


def cut(text: str, limit: int) -> str:
    """``text`` on one line; longer than ``limit``, cut at the last word boundary before it (never inside a URL),
    with "…"."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    start = flat[: limit - 1]
    space = start.rfind(" ")
    return (start[:space] if space > limit // 2 else start).rstrip(" ,;:") + "…"


_ENTITY = re.compile(r"&(?=#?\w+;)")
_BLOCK_START = re.compile(
    r"(?:[-+*]|#{1,6}|=+|-+|\d{1,9}[.)])$|>"
)  # a line starting so could open a list, quote or heading
WIDTH = 200  # a chart line (outside tables) is wrapped at a space before this


def wrap(line: str, indent: str = "  ", width: int = WIDTH) -> list[str]:
    """A markdown line (a list item, a paragraph) as several lines no wider than ``width`` where it has spaces
    outside code spans to break at: markdown joins them back. A word or code span is never split."""
    words, start, code = [], 0, False
    for index, char in enumerate(line):
        code ^= char == "`"
        if char == " " and not code:
            words.append(line[start:index])
            start = index + 1
    words.append(line[start:])
    out, current = [], words[0]
    for word in words[1:]:
        if len(current) + 1 + len(word) > width and current.strip() and not _BLOCK_START.match(word):
            out.append(current)
            current = indent + word
        else:
            current = f"{current} {word}"
    return [*out, current]


def prose(text: str, limit: int = MAX_NOTE) -> str:
    """``escape`` for a line of a list (definitions from the matrix): one line, no HTML, backticks kept."""
    flat = " ".join(text.split())
    return escape(flat, limit) if flat.count("`") % 2 else escape(flat.replace("`", "\0"), limit).replace("\0", "`")


def is_subsystem(record: Record) -> bool:
    """A PyTorch subsystem ignored the kernel (status ``blind``; an older file's ``wrong`` with
    ``SubsystemMismatch`` is upgraded to it when read): not wrong numbers."""
    return Status.BLIND in record.attempts


def wrong_numbers(record: Record) -> bool:
    """Silently wrong outputs or gradients, on any attempt (a subsystem blind on another attempt does not make
    them right: an older file's subsystem ``wrong`` is read as ``blind``, its outcomes too)."""
    return Status.WRONG in record.attempts


def symbol(status: str, record: Record) -> str:
    return SUBSYSTEM if status in (Status.WRONG, Status.BLIND) and is_subsystem(record) else SYMBOLS[status]


def mark(record: Record | None) -> str:
    """The cell's mark without its note number: ``✅``, ``❌``, ``🔇``, ``❗WRONG 2/5 🎲``; a flaky cell whose
    record is a pass (its first attempt passed) leads with its pass rate: ``✅ 2/3, ❗WRONG 1/3 🎲``."""
    if record is None:
        return MISSING
    runs = record.attempts
    if len(runs) == 1:
        return symbol(record.status, record)
    bad = [status for status in SEVERITY if status in runs]
    if not bad:
        return f"{SYMBOLS['pass']} {record.rate(Status.PASS)}"
    shown = [Status.PASS, *bad] if record.status == Status.PASS else bad
    rates = ", ".join(f"{symbol(status, record)} {record.rate(Status(status))}" for status in shown)
    return rates + (f" {FLAKY}" if record.flaky else "")


CONFIRMATION_LINE = 100  # characters of a repro script's error line a note shows


def note_text(record: Record) -> str:
    """A footnote: status, stage, error type and the error's whole first sentence (for an error without a
    message, where the traceback says it was raised); a skip's reason; then whether its repro confirmed it, and by
    which script: a verdict too long for ``MAX_NOTE`` with it (a graph break's many reasons) is cut, not the script."""
    confirmed = confirmed_text(record)
    return cut(_verdict_text(record), MAX_NOTE - len(confirmed)) + confirmed


def confirmed_text(record: Record) -> str:
    """`` — reproduced by `repros/x.py`: <its error line>``, `` — NOT reproduced by ...: harness suspect``,
    `` — not confirmed: ...`` (its script stopped with the run, or ran out of time), or nothing (a pass, a skip, a
    run that confirmed nothing)."""
    found = record.confirmation
    if not found:
        return ""
    if found.get("reproduced"):
        return f" — reproduced by `{found.get('script')}`: {shortened(found.get('line', ''))}"
    if found.get("reproduced", False) is None:
        return f" — not confirmed: `{found.get('script')}` {shortened(found.get('line', ''))}"
    return f" — NOT reproduced by `{found.get('script')}` ({shortened(found.get('line', ''))}): harness suspect"


def shortened(line: str, most: int = CONFIRMATION_LINE) -> str:
    """A script's error line cut at ``most`` characters, on a word."""
    return line if len(line) <= most else line[:most].rsplit(" ", 1)[0] + " …"


def _verdict_text(record: Record) -> str:
    if record.status == Status.SKIP and not record.flaky:
        return record.summary
    runs = f" (attempts: {', '.join(record.attempts)})" if record.flaky else ""
    if record.status == Status.PASS:  # a flaky cell whose first attempt passed: its record holds no error
        return f"flaky{runs}"
    if record.status == Status.GRAPH_BREAK:
        return f"graph break: {record.reason or ''}{runs}"
    stage = f" at {record.stage}" if record.stage else ""
    kind = "subsystem blind" if is_subsystem(record) else record.status
    head = f"{kind}{stage}: {record.error_type or ''}: "
    sentence = first_sentence(record.error or "")
    if not _message(sentence):
        sentence = " ".join(part for part in (sentence, "(no message)", raised_at(record.traceback)) if part)
    return head + sentence + runs


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"'`])")
_ABBREVIATION = re.compile(r"\b(e\.g|i\.e|etc|vs|cf)\.$", re.IGNORECASE)
_TYPE_PREFIX = re.compile(r"^\s*([\w.]+(Error|Exception|Warning|Interrupt)\s*:\s*)+")


def first_sentence(text: str) -> str:
    """The message's first sentence, whole: its first line (continued while a line ends with ``:`` or holds only
    an exception type, never past a blank line), up to the first ``. `` before a capital (not ``e.g. ``)."""
    paragraph = text.strip().split("\n\n", 1)[0].splitlines() or [""]
    lines = [paragraph[0]]
    for line in paragraph[1:]:
        if not (lines[-1].rstrip().endswith(":") or not _message(lines[-1])):
            break
        lines.append(line)
    flat = " ".join(" ".join(lines).split())
    for match in _SENTENCE_END.finditer(flat):
        if not _ABBREVIATION.search(flat[: match.start()]):
            return flat[: match.start()]
    return flat


def _message(sentence: str) -> str:
    """What is left of a message once exception-type prefixes (``AssertionError:``) are taken off."""
    return _TYPE_PREFIX.sub("", sentence).strip()


_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<fn>.+?)\s*$')
_EXCEPTION_LINE = re.compile(r"^[\w.]+:(\s|$)")


def raised_at(traceback: str | None) -> str:
    """``raised at torch/_inductor/pattern_matcher.py:316 in replace_by_example: assert len(...`` from the last
    frame of a traceback (its source line when the traceback shows it); empty without a traceback."""
    lines = (traceback or "").splitlines()
    for index in range(len(lines) - 1, -1, -1):
        frame = _FRAME.match(lines[index])
        if not frame:
            continue
        file = frame["file"].split("site-packages/")[-1]
        if file == frame["file"]:
            file = "/".join(file.split("/")[-2:])
        where = f"raised at {file}:{frame['line']} in {frame['fn']}"
        following = lines[index + 1].strip() if index + 1 < len(lines) else ""
        if following and not _EXCEPTION_LINE.match(following) and not set(following) <= set("^~ "):
            where += f": {following}"
        return where
    return ""
