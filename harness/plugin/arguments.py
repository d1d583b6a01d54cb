"""The ``run`` command's own arguments, checked before pytest starts: each bad one is one line naming the option
(``InputError``), never pytest's usage text or a run of something other than what was asked."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.errors import InputError
from harness.plugin.options import resumable
from harness.plugin.values import parse_ids, parse_mib, parse_shard
from harness.records.log import LOG_NAME

COLLECT_ONLY = ("--co", "--collect-only", "--collectonly")


def joined_ids(option: str, given: list[str] | None) -> str | None:
    """Every ``--cases`` (``--styles``, ``--paths``) given, repeated ones joined: ``"a,b"``; None when not given."""
    if given is None:
        return None
    ids = parse_ids(",".join(given))
    if not ids:
        raise InputError("command line", option, f"expected comma-separated ids, got {' '.join(given)!r}")
    return ",".join(dict.fromkeys(ids))


def node_ids(pytest_args: list[str], matrix: str) -> tuple[list[str], list[str]]:
    """The cell ids named as node ids of the matrix file (``matrix.toml::ID``, ``./matrix.toml::ID``, its absolute
    path), and the arguments with each such node id written as ``MATRIX::ID``, the one form pytest selects by."""
    matrix_file = Path(matrix).resolve()
    cells, args = [], []
    for arg in pytest_args:
        file, separator, cell = arg.partition("::")
        if separator and not arg.startswith("-") and Path(file).resolve() == matrix_file:
            cells.append(cell)
            arg = f"{matrix}::{cell}"
        args.append(arg)
    return cells, args


def max_rss(text: str | None) -> str | None:
    """``--max-rss-mb``: a number of MiB >= 0 (0: never replace a cell process for its size), or None."""
    if text is None:
        return None
    try:
        parse_mib(text)
    except argparse.ArgumentTypeError as error:
        raise InputError("command line", "--max-rss-mb", str(error)) from None
    return text


def check_resume(results: Path, selection: list[str], shard: str | None) -> None:
    """``--resume``: the report folder's records (records.jsonl or results.json), if it has any, are whole, were
    measured by this torch, and are of cells of this run's ``selection`` (its ``--shard``'s share of it)."""
    if results.exists() or results.with_name(LOG_NAME).exists():
        index, count = parse_shard(shard) if shard else (1, 1)
        resumable(results, {cell for n, cell in enumerate(selection) if n % count == index - 1})
