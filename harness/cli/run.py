"""``python -m harness run [ARGS]``: pytest with the harness plugin, ARGS handed over untouched (the harness's
options are pytest's, declared once in harness/plugin/options.py), and ``-n auto`` unless ARGS say ``-n``. The
session itself (harness/plugin/session.py) checks the input, collects the matrix file and sets the exit status,
as it does under plain ``pytest``."""

from __future__ import annotations

import argparse
import os
import time

from harness.errors import InputError
from harness.plugin.options import declare

WORKERS = ("-n", "--numprocesses")
HELP = ("-h", "--help")


def run(args: list[str]) -> int:
    """The ``run`` command: its exit status is the session's (harness/plugin/session.py)."""
    started = time.perf_counter()
    if any(arg in HELP for arg in args):
        print(help_text())
        return 0
    check_workers(args)
    check_switches(args)
    args = negative_values(args)
    import pytest

    from harness.plugin.session import RunCommand

    workers = [] if any(arg.startswith(WORKERS) for arg in args) else ["-n", "auto"]
    # pytest finds its rootdir before it knows the plugin's options, so the folder of --report-dir DIR reads as a
    # file argument: an xdist worker, started once DIR exists, took it for its rootdir (node ids DIR::CELL-ID)
    rootdir = [] if any(arg.startswith("--rootdir") for arg in args) else [f"--rootdir={os.getcwd()}"]
    # -p: the plugin is loaded even for a matrix file outside this repository (no conftest.py beside it);
    # -p no:benchmark: pytest-benchmark, where installed, warns once per xdist worker that it is disabled;
    # -p no:hypothesispytest: Hypothesis's plugin, where installed, imported Hypothesis for its summary (3 s)
    plugins = ["-p", "harness.plugin", "-p", "no:benchmark", "-p", "no:hypothesispytest"]
    # --assert=plain: no test module of a run asserts; rewriting the plugin's modules took seconds in a fresh copy
    plain = [] if any(arg.startswith("--assert") for arg in args) else ["--assert=plain"]
    return int(pytest.main([*plugins, *rootdir, *workers, *plain, *args], plugins=[RunCommand(started)]))


def help_text() -> str:
    """``run --help``: the harness's options, from their one declaration."""
    parser = argparse.ArgumentParser(
        prog="python -m harness run",
        usage="%(prog)s [HARNESS OPTIONS] [PYTEST ARGS]",
        description="Run the matrix under pytest (pytest matrix.toml does the same, without -n auto).",
        epilog="Every other argument goes to pytest untouched: -k EXPR, MATRIX::CELL-ID, -n N, --junitxml FILE ...",
    )
    declare(parser.add_argument)
    return parser.format_help()


def negative_values(args: list[str]) -> list[str]:
    """``--shard -1/2`` as ``--shard=-1/2``: pytest's parser takes a value starting with ``-`` and a digit (but a
    plain negative number) for an option and stops with its usage text and exit 4; joined, the harness's check
    says what is wrong with the value (exit 2), as it does for ``--shard=-1/2``."""
    valued: list[str] = []
    declare(lambda flag, **kwargs: valued.append(flag) if kwargs.get("action") in (None, "append") else None)
    out: list[str] = []
    for arg in args:
        if out and out[-1] in valued and len(arg) > 1 and arg[0] == "-" and (arg[1].isdigit() or arg[1] == "."):
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


def check_switches(args: list[str]) -> None:
    """A harness option that takes no value (``--no-timing``) given one (``--no-timing=yes``): one line, where
    pytest's parser would stop with its usage text and exit 4."""
    switches: list[str] = []
    declare(lambda flag, **kwargs: switches.append(flag) if kwargs.get("action") == "store_true" else None)
    for arg in args:
        flag, given, value = arg.partition("=")
        if given and flag in switches:
            raise InputError("command line", flag, f"takes no value (give {flag} alone), got {value!r}")


def check_workers(args: list[str]) -> None:
    """``-n``/``--numprocesses`` is a number of workers, ``auto`` or ``logical`` (pytest-xdist would refuse another
    with its usage text and exit 4)."""
    for index, arg in enumerate(args):
        for option in WORKERS:
            if arg == option:
                value = args[index + 1] if index + 1 < len(args) else ""
            elif arg.startswith(option + "=") or (option == "-n" and arg.startswith(option) and arg != option):
                value = arg.removeprefix(option).removeprefix("=")
            else:
                continue
            if not (value.isdigit() or value in ("auto", "logical")):
                expected = f"expected a number of workers, auto or logical, got {value!r}"
                raise InputError("command line", option, expected)
