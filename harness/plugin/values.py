"""The values of the harness's command-line options, parsed: id lists, ``--shard``, ``--max-rss-mb``,
``--cache-dir``, ``--fail-on``, the files ``--matrix``, ``--baseline`` and ``--reuse`` name."""

from __future__ import annotations

import math
import re
from pathlib import Path

from harness.errors import InputError, unknown_id
from harness.spec import Status

SHARE = re.compile(r"[0-9]+/[0-9]+")


def parse_ids(text: str) -> list[str]:
    """``"a, b"`` -> ``["a", "b"]`` (the command line's comma-separated id lists)."""
    return [item.strip() for item in text.split(",") if item.strip()]


def joined_ids(option: str, given: list[str] | None) -> str | None:
    """Every ``--cases`` (``--styles``, ``--paths``) given, repeated ones joined: ``"a,b"``; None when not given."""
    if given is None:
        return None
    ids = parse_ids(",".join(given))
    if not ids:
        raise InputError("command line", option, f"expected comma-separated ids, got {' '.join(given)!r}")
    return ",".join(dict.fromkeys(ids))


def named_file(option: str, given: str | None) -> Path | None:
    """The file an option names (None: not given); an empty name is no file, not the option left out."""
    if given is None:
        return None
    if not given.strip():
        raise InputError("command line", option, f"expected a file, got {given!r}")
    return Path(given)


def parse_mib(text: str) -> float:
    """``--max-rss-mb``: a number of MiB >= 0 (0: never replace a cell process for its size)."""
    return parse_amount(text, "--max-rss-mb", "MiB")


def parse_amount(text: str, option: str, unit: str) -> float:
    """A finite number >= 0 of ``unit`` given to ``option`` (0: never)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise InputError("command line", option, f"expected a number of {unit} >= 0 (0: never), got {text!r}")
    return value


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/4"`` -> ``(2, 4)``: the second of four shares of the cells (cell k goes to share k mod 4)."""
    index, _, count = text.partition("/")
    if not (SHARE.fullmatch(text) and 1 <= int(index) <= int(count)):  # ASCII digits: int("²") fails
        raise InputError("command line", "--shard", f"expected I/N with 1 <= I <= N, got {text!r}")
    return int(index), int(count)


def check_cache_dir(folder: Path) -> None:
    """``--cache-dir``: a folder, or one that can be made (no file in the way); ``InputError`` otherwise. A file
    there failed every cell's process start ("fork server exited 1") after the whole run."""
    absolute = folder.absolute()
    existing = next(path for path in (absolute, *absolute.parents) if path.exists())  # "/" does
    if not existing.is_dir():
        where = "" if existing == absolute else f" ({existing} is)"
        raise InputError(folder, "--cache-dir", f"a file, not a folder{where}")


FAIL_ON = [str(status) for status in Status if status != Status.PASS]  # what --fail-on may name


def parse_statuses(text: str) -> tuple[Status, ...]:
    """``--fail-on``: ``"wrong,crash"`` -> the statuses, each a cell status but ``pass``."""
    given = parse_ids(text)
    if not given:
        raise InputError("command line", "--fail-on", f"no status given (one or more of: {', '.join(FAIL_ON)})")
    for name in given:
        if name not in FAIL_ON:
            raise InputError("command line", "--fail-on", unknown_id(name, FAIL_ON, "status"))
    return tuple(Status(name) for name in dict.fromkeys(given))
