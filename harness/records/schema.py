"""A typed dataclass (a record, its capture and measurements) as its JSON object and back, each field read by its
type hint: a badly typed one is an ``InputError`` naming the file and the key, never a traceback downstream. A
field marked ``OMIT`` (harness/spec.py) is left out of the JSON while it holds its default. Every number read is
finite, at most ``LARGEST`` and (unless its field is marked ``SIGNED``) not negative: no time, size or count a run
records is otherwise; a dataclass with an ``invalid`` method is refused where it names a field."""

from __future__ import annotations

import dataclasses
import enum
import math
import types
import typing
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from harness.errors import InputError

T = TypeVar("T")
LARGEST = 1e18  # no time (µs, s since the epoch), size or count a run records comes near it


def to_json(value: Any) -> Any:
    """Plain JSON values: a dataclass as an object of its fields (``OMIT`` ones only when set), an enum as its
    value, a tuple as a list."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            field.name: to_json(getattr(value, field.name))
            for field in dataclasses.fields(value)
            if not (field.metadata.get("omit") and getattr(value, field.name) == _default(field))
        }
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [to_json(item) for item in value]
    if isinstance(value, dict):
        return {name: to_json(item) for name, item in value.items()}
    return value


def from_json(cls: type[T], data: Any, file: Path | str, key: str) -> T:
    """``cls`` from its JSON object ``data`` (at ``key`` of ``file``); keys it has no field for are not read."""
    if not isinstance(data, dict):
        raise InputError(file, key, f"expected a table, got {data!r:.80}")
    values = {}
    for field in dataclasses.fields(cls):  # type: ignore[arg-type]
        if field.name in data:
            signed = bool(field.metadata.get("signed"))
            values[field.name] = read(_hints(cls)[field.name], data[field.name], file, f"{key}.{field.name}", signed)
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise InputError(file, f"{key}.{field.name}", "missing")
    value = cls(**values)
    wrong = value.invalid() if hasattr(value, "invalid") else None
    if wrong is not None:
        raise InputError(file, f"{key}.{wrong[0]}", wrong[1])
    return value


def from_json_keeping_extra(cls: type[T], data: dict[str, Any], file: Path | str, key: str, ignored: set[str]) -> T:
    """``from_json``, the keys ``cls`` has no field for (``ignored`` aside) kept as they were in its ``extra``
    field: a file of a newer harness loses nothing when this one reads and writes it again."""
    known = {field.name for field in dataclasses.fields(cls)} - {"extra"}  # type: ignore[arg-type]
    value = from_json(cls, {name: item for name, item in data.items() if name in known}, file, key)
    extra = {name: item for name, item in data.items() if name not in known | ignored}
    return dataclasses.replace(value, extra=extra) if extra else value  # type: ignore[type-var]


def read(hint: Any, value: Any, file: Path | str, key: str, signed: bool = False) -> Any:
    """``value`` as type ``hint`` (``X | None``, ``str``, ``int``, ``float``, ``bool``, a string enum,
    ``tuple[X, ...]``, ``list[X]``, ``dict[str, X]``, a dataclass, ``Any``, a union of these); ``InputError`` when
    it is not one, or when a number in it is negative (unless ``signed``), not finite or past ``LARGEST``."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [arg for arg in args if arg is not type(None)]
        if len(inner) > 1:  # ``bool | Claim``: a table is read as the dataclass, any other value as the rest
            tables = [arg for arg in inner if dataclasses.is_dataclass(arg) or typing.get_origin(arg) is dict]
            inner = (tables if isinstance(value, dict) else [arg for arg in inner if arg not in tables]) or inner
        return read(inner[0], value, file, key, signed)
    if hint is Any:
        return value
    if dataclasses.is_dataclass(hint):
        return from_json(hint, value, file, key)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        if value not in {member.value for member in hint}:
            raise InputError(file, key, f"unknown {hint.__name__.lower()} {value!r:.80}")
        return hint(value)
    if origin in (tuple, list):
        if not isinstance(value, list):
            raise InputError(file, key, f"expected a list, got {value!r:.80}")
        items = [read(args[0], item, file, f"{key}[{index}]", signed) for index, item in enumerate(value)]
        return origin(items)
    if origin is dict:
        if not isinstance(value, dict):
            raise InputError(file, key, f"expected a table, got {value!r:.80}")
        return {name: read(args[1], item, file, f"{key}.{name}", signed) for name, item in value.items()}
    if not _is(hint, value):
        raise InputError(file, key, f"expected {hint.__name__} (or null), got {value!r:.80}")
    if hint in (int, float):
        _check_number(value, file, key, signed)
    return value


def _check_number(value: float, file: Path | str, key: str, signed: bool) -> None:
    """A number of a results file: finite (JSON's NaN and Infinity are no time or size), at most ``LARGEST``
    either way (a 400-digit integer overflows every float it meets) and, unless ``signed``, not negative."""
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(file, key, f"expected a finite number, got {value!r}")
    if abs(value) > LARGEST:
        shown = f"a {len(str(abs(value)))}-digit integer" if isinstance(value, int) else repr(value)
        raise InputError(file, key, f"expected a number of at most {LARGEST:g}, got {shown}")
    if value < 0 and not signed:
        raise InputError(file, key, f"expected a number >= 0 (no time, size or count is negative), got {value!r}")


def _is(hint: type, value: Any) -> bool:
    """A bool is an int to Python, but not a count or a number of seconds; an int is a number of seconds."""
    if isinstance(value, bool):
        return hint is bool
    return isinstance(value, int | float) if hint is float else isinstance(value, hint)


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _default(field: dataclasses.Field[Any]) -> Any:
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return field.default
