"""The values of the harness's command-line options, parsed: id lists, ``--shard``, ``--max-rss-mb``."""

from __future__ import annotations

import argparse
import math

from harness.errors import InputError


def parse_ids(text: str) -> list[str]:
    """``"a, b"`` -> ``["a", "b"]`` (the command line's comma-separated id lists)."""
    return [item.strip() for item in text.split(",") if item.strip()]


def parse_mib(text: str) -> float:
    """``--max-rss-mb``: a number of MiB >= 0 (0: never replace a cell process for its size)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a number of MiB >= 0 (0: never), got {text!r}")
    return value


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/4"`` -> ``(2, 4)``: the second of four shares of the cells (cell k goes to share k mod 4)."""
    index, _, count = text.partition("/")
    if not (index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count)):
        raise InputError("command line", "--shard", f"expected I/N with 1 <= I <= N, got {text!r}")
    return int(index), int(count)
