"""The ``run`` command's own arguments, checked before pytest starts: each bad one is one line naming the option
(``InputError``), never pytest's usage text or a run of something other than what was asked."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.errors import InputError
from harness.plugin.options import DEFAULT_CACHE_DIR, resumable
from harness.plugin.values import check_cache_dir, parse_ids, parse_mib, parse_shard
from harness.records.log import LOG_NAME

COLLECT_ONLY = ("--co", "--collect-only", "--collectonly")
# pytest options whose value may hold "::" (a warning filter, a node id to deselect, an expression): not node ids
VALUE_OPTIONS = ("-k", "-m", "-W", "--pythonwarnings", "--deselect", "-o", "--override-ini", "-p")
WORKERS = ("-n", "--numprocesses")


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


def check_pytest_args(pytest_args: list[str], matrix: str) -> None:
    """What ``run`` passes on to pytest that pytest would refuse with its own usage text and exit 4, or that would
    fail every cell: a node id of a file other than the matrix (another, or a misspelled one), a ``-n`` that is not
    a number of workers, a ``--cache-dir`` where a file is in the way."""
    matrix_file = Path(matrix).resolve()
    for before, arg in zip(["", *pytest_args], pytest_args, strict=False):
        file, separator, _ = arg.partition("::")
        if separator and not arg.startswith("-") and before not in VALUE_OPTIONS:
            if Path(file).resolve() != matrix_file:
                raise InputError(
                    "command line", arg, f"not a node id of the matrix file {matrix}: name cells as {matrix}::CELL-ID"
                )
    for option, value in _values(pytest_args, WORKERS):
        if not (value.isdigit() or value in ("auto", "logical")):
            raise InputError("command line", option, f"expected a number of workers, auto or logical, got {value!r}")
    cache = [value for _, value in _values(pytest_args, ("--cache-dir",))]
    check_cache_dir(Path(cache[-1] if cache else DEFAULT_CACHE_DIR))


def _values(args: list[str], options: tuple[str, ...]) -> list[tuple[str, str]]:
    """(option, value) for each of ``options`` given in ``args`` (``-n 4``, ``-n4``, ``--numprocesses=4``)."""
    found = []
    for index, arg in enumerate(args):
        for option in options:
            if arg == option:
                found.append((option, args[index + 1] if index + 1 < len(args) else ""))
            elif arg.startswith(option + "=") or (len(option) == 2 and arg.startswith(option) and arg != option):
                found.append((option, arg.removeprefix(option).removeprefix("=")))
    return found
