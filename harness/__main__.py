"""Command line: ``python -m harness run|list|report`` (see README.md)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from harness import interrupt
from harness.errors import EXIT_BAD_INPUT, EXIT_BROKEN_PIPE, EXIT_INTERRUPTED, Arguments, InputError, keyword, leave

MATRIX_HELP = "the matrix file (default: ./matrix.toml when there is one, else the one installed with the harness)"


def main(argv: list[str] | None = None) -> int:
    """The command's exit status; ``run`` hands its arguments to pytest (harness/cli/run.py), the others are
    parsed here."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        if argv[:1] == ["run"]:
            from harness.cli.run import run

            return run(argv[1:])
        args = parser().parse_args(argv)
        for key in ("results", "current"):
            if key in args and getattr(args, key) is None:
                setattr(args, key, last_run_results(key))
        if "matrix" in args:
            from harness.matrix.builtin import matrix_file

            file, args.matrix_source = matrix_file(args.matrix)
            args.matrix = str(file)
        code = COMMANDS[args.command](args)
        sys.stdout.flush()  # a reader that stopped early (``| head``): its broken pipe raises here, not at exit
        return code
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit's own flush writes nowhere
        return EXIT_BROKEN_PIPE


def last_run() -> tuple[str, str]:
    """Where a command reading a run's results looks without --results: where ``run`` writes by default, then the
    folder the committed reference run is in."""
    from harness.plugin.options import DEFAULT_REPORT_DIR

    return f"{DEFAULT_REPORT_DIR}/results.json", "reports/results.json"


def results_help() -> str:
    """The help of ``--results`` (``--current``)."""
    return f"a run's results.json or records.jsonl (default: the last run's, {' else '.join(last_run())})"


def parser() -> argparse.ArgumentParser:
    """Every command's arguments but ``run``'s (``run --help`` lists those: the plugin's options)."""
    top = Arguments(prog="python -m harness", description=__doc__)
    subcommands = top.add_subparsers(dest="command", required=True)
    subcommands.add_parser("run", help="run the matrix under pytest; every argument goes to pytest (run --help)")
    listing = subcommands.add_parser("list", help="print every cell id, one per line")
    listing.add_argument("--matrix", type=file_name, default=None, help=MATRIX_HELP)
    select_cells(listing)
    report = subcommands.add_parser("report", help="redraw the chart from a results file")
    report.add_argument("--results", type=file_name, default=None, help=results_help())
    report.add_argument(
        "--out", type=file_name, default=None, help="chart file (default: matrix.md beside the results)"
    )
    select_cells(report)
    which = subcommands.add_parser(
        "which", help="the styles meeting all of some goals in a results file, and near misses"
    )
    which.add_argument("--goals", action="append", required=True, help="goals of the matrix's [goals], comma-separated")
    which.add_argument("--results", type=file_name, default=None, help=results_help())
    which.add_argument(
        "--fastest", action="store_true", help="rank the styles that meet the goals by speed, per path of the goals"
    )
    for axis in ("cases", "styles"):
        which.add_argument(f"--{axis}", action="append", help=f"only these {axis} (comma-separated ids; repeatable)")
    repro = subcommands.add_parser(
        "repro", help="write a standalone script per distinct failure of a results file, or for the cells named"
    )
    repro.add_argument("cells", nargs="*", metavar="CELL", help="these cells' scripts (any status)")
    repro.add_argument("--results", type=file_name, default=None, help=results_help())
    repro.add_argument(
        "--matrix",
        type=file_name,
        default=None,
        help="the tolerances the scripts compare with (default: those the run recorded, else those of the matrix file"
        " found as for the other commands: ./matrix.toml when there is one, else the one installed with the harness)",
    )
    repro.add_argument("--out", type=file_name, default=None, help="folder (default: repros/ beside the results)")
    repro.add_argument(
        "--timed", action="store_true",
        help="also CELL.timed.py: the script's checked artifact timed (CELL.py is then the long script, the "
        "harness's program copied in, which the timed script runs)",
    )
    repro.add_argument(
        "--issue", action="store_true", help="print a bug report of the one CELL named, ready to paste (writes nothing)"
    )
    gate_command(subcommands.add_parser("gate", help="compare a current run with a baseline; exit 1 on regressions"))
    history = subcommands.add_parser("history", help="one chart of several runs (oldest first)")
    history.add_argument("results", nargs="+", type=file_name)
    history.add_argument("--out", type=file_name, default="reports/history.md")
    merging = subcommands.add_parser("merge", help="merge shard results (--shard I/N runs) into one file and chart")
    merging.add_argument("results", nargs="+", type=file_name)
    merging.add_argument("--out", type=file_name, default="reports/results.json")
    return top


def last_run_results(key: str) -> str:
    """The results a command reads without ``--results`` (``--current``): the first of ``last_run`` there is (its
    results.json, or the records.jsonl of a run cut short); ``InputError`` naming the files looked for."""
    from harness.plugin.options import DEFAULT_REPORT_DIR
    from harness.records.log import LOG_NAME

    names = last_run()
    for name in names:
        if Path(name).is_file() or Path(name).with_name(LOG_NAME).is_file():
            whose = "the last run's" if name == names[0] else f"no run in {DEFAULT_REPORT_DIR}/"
            print(f"results: {name} ({whose}: give --{key} FILE for another)", file=sys.stderr)
            return name
    looked = ", ".join(f"{name} (or {Path(name).with_name(LOG_NAME)})" for name in names)
    raise InputError(
        "command line",
        f"--{key}",
        f"no results found: looked for {looked}; run `python -m harness run` first, or give --{key} "
        "DIR/results.json for a run with --report-dir DIR",
    )


def file_name(text: str) -> str:
    """A file or folder named on the command line: an empty name is no file (never the option left out, nor
    the working directory)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"expected a file, got {text!r}")
    return text


def count(text: str) -> int:
    """A number of re-runs: a whole number >= 0."""
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return int(text)


def fraction(text: str) -> float:
    """A gate limit: a non-negative finite fraction (0.05: 5%)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a fraction such as 0.05, got {text!r}")
    return value


def gate_command(gate: argparse.ArgumentParser) -> None:
    from harness.plugin.options import DEFAULT_REPORT_DIR

    gate.add_argument("--baseline", type=file_name, required=True)
    gate.add_argument("--current", type=file_name, default=None, help=results_help())
    gate.add_argument("--known", type=file_name, default=None, help="known failures (toml: [[known]] id, reason, link)")
    gate.add_argument("--strict", action="store_true", help="also fail on fixes and stale known failures")
    gate.add_argument(
        "--allow-flaky",
        action="store_true",
        help="pass cells that err, crash or time out on some attempts only (wrong numbers always fail)",
    )
    gate.add_argument(
        "--rerun",
        type=count,
        default=2,
        help="re-run each regression N times, and time each slower cell again up to N times (0: neither), before it "
        "counts",
    )
    gate.add_argument(
        "--matrix",
        type=file_name,
        default=None,
        help="the matrix the re-runs use (default: the current run's own, where its file still holds the text the "
        "run read; else ./matrix.toml when there is one, else the one installed with the harness)",
    )
    gate.add_argument("--out", type=file_name, default=f"{DEFAULT_REPORT_DIR}/gate.md")
    gate.add_argument(
        "--speed",
        action="store_true",
        help="also fail on slower cells (off by default: two runs of one commit on one H100 differed past the "
        "measured dispersion in 328 of 1,433 timed cells; docs/speed.md)",
    )
    limits = (
        ("--max-slowdown", 0.05, "a passing cell's bandwidth-bound median time (beyond both runs' dispersions)"),
        ("--max-memory-growth", 0.20, "the peak GPU memory of one warm call"),
    )
    for flag, default, what in limits:
        gate.add_argument(flag, type=fraction, default=default, help=f"fail when {what} grows more (default {default})")
    gate.add_argument(
        "--max-compile-slowdown",
        type=fraction,
        default=None,
        help="fail when a cell's compile or export time grows more (default: reported past 0.15, never failing: "
        "the run's cells share the compile caches, so it depends on the order they ran in; docs/speed.md)",
    )
    gate.add_argument(
        "--max-launch-slowdown",
        type=fraction,
        default=None,
        help="fail when a cell's launch-bound median time (at its own size) grows more, beyond both dispersions "
        "(default: reported, never failing: a launch-bound call's cost is mostly its host launch; docs/speed.md)",
    )


def select_cells(command: argparse.ArgumentParser) -> None:
    """``--cases``, ``--styles``, ``--paths`` and ``-k`` of a command that reads cells without running them."""
    from harness.plugin.options import AXES

    for axis in AXES:
        command.add_argument(f"--{axis}", action="append", help=f"only these {axis} (comma-separated ids; repeatable)")
    command.add_argument(
        "-k", dest="keyword", default=None, help="only the cell ids matching this pytest -k expression"
    )


def list_cells(args: argparse.Namespace) -> int:
    from harness.matrix.config import load_matrix, select
    from harness.plugin.options import AXES
    from harness.plugin.values import joined_ids

    joined = {axis: joined_ids(f"--{axis}", getattr(args, axis)) for axis in AXES}  # "": one line, not every cell
    axes = {axis: text.split(",") if text else None for axis, text in joined.items()}
    matches = keyword(args.keyword)
    ids = [cell for cell in select(load_matrix(args.matrix), **axes).cell_ids() if matches(cell)]
    if not ids:  # as ``run`` and ``report`` of the same selection say
        raise InputError(str(args.matrix), "cells", "no cell matches the selection")
    print(f"matrix: {args.matrix} ({args.matrix_source})", file=sys.stderr)
    print("\n".join(ids))
    return 0


def gate(args: argparse.Namespace) -> int:
    """``gate``, its regressions re-run here (harness/cli/rerun.py) with the matrix named."""
    from harness.cli.rerun import Rerun
    from harness.matrix.catalogue import Registries
    from harness.report import commands

    given = args.matrix_source == "--matrix"
    if given:  # the re-runs' matrix: a missing or mistyped one is found now, not on the day a cell needs a re-run
        from harness.matrix.config import load_matrix

        load_matrix(args.matrix)
    rerun = Rerun(args.matrix, args.rerun, args.current, given=given)
    return commands.gate(args, rerun, Registries(), rerun.retime)


def write_repro_scripts(args: argparse.Namespace) -> int:
    """``repro`` (harness/cli/repro.py: it imports torch and the kernel layer)."""
    from harness.cli.repro import write_repro_scripts

    return write_repro_scripts(args)


def described(name: str) -> Callable[[argparse.Namespace], int]:
    """The command ``name`` of harness/report/commands.py, reading results files: an older file's styles and paths
    described from this harness's own."""

    def command(args: argparse.Namespace) -> int:
        from harness.matrix.catalogue import Registries
        from harness.report import commands

        return getattr(commands, name)(args, Registries())

    return command


COMMANDS = {
    "list": list_cells,
    "report": described("report"),
    "which": described("which"),
    "repro": write_repro_scripts,
    "gate": gate,
    "history": described("draw_history"),
    "merge": described("merge_shards"),
}


def program() -> NoReturn:
    """``python -m harness``: ``main``, a signal at any stage exiting 130 (harness/interrupt.py). This module
    imports little, and each command what it needs once it runs: SIGINT and SIGTERM are set first."""
    leave(interrupt.run(main))


def console() -> NoReturn:
    """The ``triton-torch-matrix`` command: ``python -m harness``, with the working directory importable (for
    ``--cases mykernels`` and the modules a matrix file names) as it is under ``python -m``."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    program()


if __name__ == "__main__":
    program()
