"""Command line: ``python -m harness run|list|report`` (see README.md)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from harness.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_RUN_BROKE, EXIT_SUSPECTS, InputError
from harness.kernel.interpreter import INTERPRET_ENV
from harness.matrix.builtin import matrix_file
from harness.plugin.options import DEFAULT_REPORT_DIR
from harness.report import commands

AXES = ("cases", "styles", "paths")
MATRIX_HELP = "the matrix file (default: ./matrix.toml when there is one, else the one installed with the harness)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness", description=__doc__)
    subcommands = parser.add_subparsers(dest="command", required=True)
    run = subcommands.add_parser("run", help="run the matrix under pytest; extra arguments go to pytest")
    run.add_argument("--matrix", default=None, help=MATRIX_HELP)
    run.add_argument(
        "--report-dir",
        default=DEFAULT_REPORT_DIR,
        help="where the run writes records.jsonl, results.json, the chart matrix.md and repros/ "
        f"(default: {DEFAULT_REPORT_DIR})",
    )
    for axis in ("cases", "styles", "paths"):
        run.add_argument(f"--{axis}", action="append", help=f"only these {axis} (comma-separated ids; repeatable)")
    run.add_argument("--resume", action="store_true", help="keep the records already in --report-dir, run the rest")
    run.add_argument("--shard", default=None, help="I/N: run only the I-th of N interleaved shares (merge them after)")
    run.add_argument("--baseline", default=None, help="re-run the cells whose status differs from this results file")
    run.add_argument("--reuse", default=None, help="keep this results file's records of cells whose key is unchanged")
    run.add_argument("--max-rss-mb", default=None, help="replace a cell process resident above this (MiB; 0: never)")
    run.add_argument(
        "--interpret",
        action="store_true",
        help="run the kernels in Triton's CPU interpreter (TRITON_INTERPRET=1): CUDA paths run on CPU tensors",
    )
    listing = subcommands.add_parser("list", help="print every cell id, one per line")
    listing.add_argument("--matrix", default=None, help=MATRIX_HELP)
    select_cells(listing)
    report = subcommands.add_parser("report", help="redraw the chart from a results file")
    report.add_argument("--results", default="reports/results.json")
    report.add_argument("--out", default=None, help="chart file (default: matrix.md beside the results)")
    select_cells(report)
    which = subcommands.add_parser(
        "which", help="the styles meeting all of some goals in a results file, and near misses"
    )
    which.add_argument("--goals", action="append", required=True, help="goals of the matrix's [goals], comma-separated")
    which.add_argument("--results", default="reports/results.json")
    for axis in ("cases", "styles"):
        which.add_argument(f"--{axis}", action="append", help=f"only these {axis} (comma-separated ids; repeatable)")
    repro = subcommands.add_parser(
        "repro", help="write a standalone script per distinct failure of a results file, or for the cells named"
    )
    repro.add_argument("cells", nargs="*", metavar="CELL", help="these cells' scripts (any status)")
    repro.add_argument("--results", default="reports/results.json")
    repro.add_argument("--matrix", default=None, help="the tolerances the scripts compare with; " + MATRIX_HELP)
    repro.add_argument("--out", default=None, help="folder (default: repros/ beside the results)")
    gate = subcommands.add_parser("gate", help="compare a current run with a baseline; exit 1 on regressions")
    gate.add_argument("--baseline", required=True)
    gate.add_argument("--current", default="reports/results.json")
    gate.add_argument("--known", default=None, help="known failures (toml: [[known]] id, reason, link)")
    gate.add_argument("--strict", action="store_true", help="also fail on fixes and stale known failures")
    gate.add_argument(
        "--allow-flaky",
        action="store_true",
        help="pass cells that err, crash or time out on some attempts only (wrong numbers always fail)",
    )
    gate.add_argument("--rerun", type=int, default=2, help="re-run each regression N times before it counts")
    gate.add_argument("--matrix", default=None, help="the matrix the re-runs use; " + MATRIX_HELP)
    gate.add_argument("--out", default=f"{DEFAULT_REPORT_DIR}/gate.md")
    history = subcommands.add_parser("history", help="one chart of several runs (oldest first)")
    history.add_argument("results", nargs="+")
    history.add_argument("--out", default="reports/history.md")
    merging = subcommands.add_parser("merge", help="merge shard results (--shard I/N runs) into one file and chart")
    merging.add_argument("results", nargs="+")
    merging.add_argument("--out", default="reports/results.json")
    args, rest = parser.parse_known_args(argv)
    if rest and args.command != "run":
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    if "matrix" in args:
        file, args.matrix_source = matrix_file(args.matrix)
        args.matrix = str(file)
    try:
        return COMMANDS[args.command](args, rest)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def select_cells(command: argparse.ArgumentParser) -> None:
    """``--cases``, ``--styles``, ``--paths`` and ``-k`` of a command that reads cells without running them."""
    for axis in ("cases", "styles", "paths"):
        command.add_argument(f"--{axis}", action="append", help=f"only these {axis} (comma-separated ids; repeatable)")
    command.add_argument(
        "-k", dest="keyword", default=None, help="only the cell ids matching this pytest -k expression"
    )


def run_matrix(args: argparse.Namespace, pytest_args: list[str]) -> int:
    """Exit 0 when every selected cell got a record (non-pass cells are measurements, not failures of the
    run; gate them with ``gate``), 2 for bad input, 6 (one line saying why) when the harness failed to measure
    (harness/report/broken.py), pytest's own code when pytest itself failed."""
    import pytest
    import torch

    from harness.matrix.config import load_matrix, select
    from harness.plugin import arguments, reportdir
    from harness.plugin.options import PresetMatrix
    from harness.plugin.values import parse_ids, parse_shard
    from harness.records.results import read_results

    axes = {axis: arguments.joined_ids(f"--{axis}", getattr(args, axis)) for axis in ("cases", "styles", "paths")}
    if args.interpret:  # before the cases are imported (Triton reads it when a kernel is decorated) and the cell
        os.environ[INTERPRET_ENV] = "1"  # processes start: they inherit it, and the results record it
    # bad input: one line and exit 2, before pytest starts
    matrix = select(
        load_matrix(args.matrix),
        **{k: parse_ids(v) if v else None for k, v in axes.items()},
        cuda=torch.cuda.is_available(),
    )
    arguments.check_pytest_args(pytest_args, args.matrix)
    node_ids, pytest_args = arguments.node_ids(pytest_args, args.matrix)
    unknown = sorted(set(node_ids) - set(matrix.cell_ids()))
    if unknown:
        raise InputError("command line", f"{args.matrix}::", f"not a cell of the selection: {', '.join(unknown)}")
    if args.shard:
        parse_shard(args.shard)
    for given in (args.baseline, args.reuse):
        if given:
            read_results(given)
    results = Path(args.report_dir) / "results.json"
    if args.resume:
        arguments.check_resume(results, matrix.cell_ids(), args.shard)
    rss = arguments.max_rss(args.max_rss_mb)
    forwarded = {**axes, "shard": args.shard, "baseline": args.baseline, "reuse": args.reuse, "max-rss-mb": rss}
    pytest_args = [arg for option, value in forwarded.items() if value for arg in (f"--{option}", value)] + pytest_args
    if args.resume:
        pytest_args = ["--resume", *pytest_args]
    if not any(arg.startswith(("-n", "--numprocesses")) for arg in pytest_args):
        pytest_args = ["-n", "auto", *pytest_args]
    targets = [] if node_ids else [args.matrix]  # node ids (MATRIX::CELL-ID) select cells themselves
    # -p: the plugin is loaded even for a matrix file outside this repository (no conftest.py beside it);
    # -p no:benchmark: pytest-benchmark, where installed, warns once per xdist worker that it is disabled
    plugins = ["-p", "harness.plugin", "-p", "no:benchmark"]
    started = time.time()
    collect_only = any(arg in arguments.COLLECT_ONLY for arg in pytest_args)
    locked = not collect_only and reportdir.lock(Path(args.report_dir))  # one run at a time writes there
    print(f"matrix: {args.matrix} ({args.matrix_source})", file=sys.stderr)  # the input is good: say which
    try:
        code = pytest.main(
            [*plugins, *targets, "--matrix", args.matrix, "--report-dir", args.report_dir, *pytest_args],
            plugins=[PresetMatrix(matrix)],  # loaded and its cases checked once, above
        )
    finally:
        if locked:
            reportdir.unlock(Path(args.report_dir))
    failed_write = reportdir.failure()
    if failed_write:
        print(f"error: {failed_write}", file=sys.stderr)
        return EXIT_RUN_BROKE
    if code == pytest.ExitCode.INTERRUPTED:
        return EXIT_INTERRUPTED
    if collect_only and code == pytest.ExitCode.OK:
        return 0
    if code == pytest.ExitCode.NO_TESTS_COLLECTED and _complete(results, since=started):
        return 0  # every selected cell kept (--resume, --reuse): nothing left to run
    if code == pytest.ExitCode.NO_TESTS_COLLECTED:
        print("error: no cell matches the selection", file=sys.stderr)
        return EXIT_BAD_INPUT
    if code in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, EXIT_SUSPECTS):
        from harness.report.broken import run_broke

        broke = run_broke(read_results(results)) if results.exists() else None
        if broke:
            print(f"error: {results}: the run broke: {broke}", file=sys.stderr)
            return EXIT_RUN_BROKE
        if _complete(results):
            return EXIT_SUSPECTS if code == EXIT_SUSPECTS else 0
        print(f"error: {results}: the run did not record every selected cell", file=sys.stderr)
        return 1
    return int(code)


def _complete(results: Path, since: float | None = None) -> bool:
    """Whether ``results`` records every selected cell (and, with ``since``, was written after that time)."""
    from harness.records.results import read_results

    if not results.exists() or (since is not None and results.stat().st_mtime < since):
        return False
    return bool(read_results(results).environment.get("complete"))


def list_cells(args: argparse.Namespace, _: list[str]) -> int:
    from harness.matrix.config import load_matrix, select
    from harness.plugin.values import parse_ids

    axes = {axis: parse_ids(",".join(getattr(args, axis))) if getattr(args, axis) else None for axis in AXES}
    matches = commands.keyword(args.keyword)
    ids = [cell for cell in select(load_matrix(args.matrix), **axes).cell_ids() if matches(cell)]
    print(f"matrix: {args.matrix} ({args.matrix_source})", file=sys.stderr)
    print("\n".join(ids))
    return 0


COMMANDS = {
    "run": run_matrix,
    "list": list_cells,
    "report": commands.report,
    "which": commands.which,
    "repro": commands.write_repro_scripts,
    "gate": commands.gate,
    "history": commands.draw_history,
    "merge": commands.merge_shards,
}


def console() -> None:
    """The ``triton-torch-matrix`` command: ``python -m harness``, with the working directory importable (for
    ``--cases mykernels`` and the modules a matrix file names) as it is under ``python -m``."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    sys.exit(main())


if __name__ == "__main__":
    sys.exit(main())
