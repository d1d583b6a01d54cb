"""Checks of a TOML file's values that name the file and the key on the first problem (``InputError``)."""

from __future__ import annotations

import math
import re
import tomllib
from difflib import get_close_matches
from pathlib import Path
from typing import Any

from harness.errors import InputError, input_text, unknown_id

ID_PATTERN = re.compile(r"[A-Za-z0-9_.]+")


def no_unknown(
    file: Path,
    prefix: str,
    table: dict[str, Any],
    required: set[str],
    optional: frozenset[str] | set[str] = frozenset(),
) -> None:
    allowed = required | optional
    for key in table:
        if key not in allowed:
            close = get_close_matches(key, sorted(allowed), n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            expected = ", ".join(sorted(allowed))
            raise InputError(file, f"{prefix}{key}", f"unknown key ({hint}expected one of {expected})")
    for key in sorted(required - table.keys()):
        raise InputError(file, f"{prefix}{key}", "missing")


def nonempty_table(file: Path, key: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict) or not value:
        raise InputError(file, key, "expected a non-empty table")
    return value


def id_list(file: Path, key: str, data: dict[str, Any], known: dict[str, Any] | None) -> tuple[str, ...]:
    value = data.get(key)
    if not isinstance(value, list) or not value:
        raise InputError(file, key, "expected a non-empty list of ids")
    seen: set[str] = set()
    for index, item in enumerate(value):
        if not isinstance(item, str) or not item:
            raise InputError(file, f"{key}[{index}]", f"expected an id string, got {item!r}")
        if not ID_PATTERN.fullmatch(item):
            raise InputError(file, f"{key}[{index}]", f"bad id {item!r}: use letters, digits, '_' and '.'")
        if item in seen:
            raise InputError(file, f"{key}[{index}]", f"duplicate id {item!r}")
        if known is not None and item not in known:
            raise InputError(file, f"{key}[{index}]", unknown_id(item, list(known)))  # with "did you mean"
        seen.add(item)
    return tuple(value)


def number(file: Path, key: str, value: Any, minimum: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < minimum:
        raise InputError(file, key, f"expected a number >= {minimum}, got {value!r}")
    return float(value)


def read_toml(file: Path) -> dict[str, Any]:
    """``file`` parsed; an unreadable file or a syntax error is an ``InputError`` naming it. A byte-order mark
    first (an editor's UTF-8 with BOM) is read past."""
    try:
        return tomllib.loads(input_text(file).removeprefix("\ufeff"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise InputError(file, "(syntax)", str(error)) from None
    except RecursionError:
        raise InputError(file, "(syntax)", "nested too deep to read") from None


def environment_of(file: Path) -> dict[str, str]:
    """The [environment] table of the matrix file ``file`` (read alone: no case module imported)."""
    return environment_table(file, read_toml(file).get("environment", {}))


def environment_table(file: Path, value: Any) -> dict[str, str]:
    """The optional [environment] table: variables set for the cell processes (strings only)."""
    if not isinstance(value, dict):
        raise InputError(file, "environment", 'expected a table of NAME = "value"')
    for name, setting in value.items():
        if not name or "=" in name or "\0" in name:
            raise InputError(file, f"environment.{name!r}", "a variable's name must be non-empty, without '=' or NUL")
        if not isinstance(setting, str):
            raise InputError(file, f"environment.{name}", f"expected a string, got {setting!r}")
        if "\0" in setting:
            raise InputError(file, f"environment.{name}", "a value cannot hold a NUL character")
    return dict(value)
