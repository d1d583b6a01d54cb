"""The commands that read results files (``report``, ``which``, ``gate``, ``history``, ``merge``): what
each does once harness/__main__.py has parsed its arguments."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.errors import EXIT_INCOMPLETE, EXIT_RUN_BROKE, InputError, keyword, unknown_id
from harness.records.files import RESULTS_NAME
from harness.records.log import LOG_NAME
from harness.records.results import Results
from harness.records.upgrade import Catalogue
from harness.report.gate import Change
from harness.report.speedgate import Limits, Slowdown
from harness.spec import CellId


def narrowed(results: Results, args: argparse.Namespace) -> Results:
    """``results`` with only the cells ``--cases``, ``--styles``, ``--paths`` and ``-k`` select."""
    chosen = selection(args, results, ("cases", "styles", "paths"))
    matches = keyword(args.keyword)

    def kept(cell_id: str) -> bool:
        case, style, path = CellId.parse(cell_id)
        picked = zip(("cases", "styles", "paths"), (case, style, path), strict=True)
        return all(not chosen[axis] or value in chosen[axis] for axis, value in picked) and matches(cell_id)

    if not any(chosen.values()) and not args.keyword:
        return results
    cells = [cell for cell in results.cells if kept(cell.id)]
    if not cells:
        raise InputError(args.results, "cells", "no cell matches the selection")
    expected = [cell for cell in results.environment.get("expected_cells") or [] if kept(cell)]
    return Results({**results.environment, "expected_cells": expected}, cells, results.from_log)


def report(args: argparse.Namespace, catalogue: Catalogue) -> int:
    """The chart of a results file; from a run's records.jsonl (given, or newer than the results file beside
    it), results.json is derived first."""
    from harness.records.files import read_results
    from harness.records.results import write_results
    from harness.report.chart import write_chart

    file = Path(args.results)
    out = Path(args.out) if args.out else file.with_name("matrix.md")
    refuse_over(out, {"--results": file})
    results = read_results(file, catalogue)
    foreign = file.suffix == ".jsonl" and file.name != LOG_NAME  # records of the user's naming: no run's folder
    if results.from_log and foreign:
        print(f"results: none derived ({file.name} is no run's {LOG_NAME}: nothing beside it is written)")
    elif results.from_log:
        derived = file.with_name("results.json")
        try:  # as in a run whose results.json cannot be written: one line, exit 6 (records.jsonl is kept)
            write_results(derived, results)
        except OSError as error:
            print(f"error: {derived}: (write): {error.strerror or error}: not derived from {file}", file=sys.stderr)
            return EXIT_RUN_BROKE
        print(f"results: {derived}")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        drawn = write_chart(narrowed(results, args), out)
    except OSError as error:
        raise InputError(error.filename or out, "--out", f"cannot write it: {error.strerror or error}") from None
    print(f"chart: {out}" + (f" (and {len(drawn)} pictures in {out.parent / 'pictures'})" if drawn else ""))
    return 0


def gate(
    args: argparse.Namespace,
    rerun: Callable[[list[Change], Results], list[Change]],
    catalogue: Catalogue,
    retime: Callable[[list[Slowdown], Results, Results, Limits], list[Slowdown]] | None = None,
) -> int:
    """Exit 1 when a cell regressed, went missing, gave wrong numbers on any attempt, got slower (--max-slowdown
    and the others: harness/report/speedgate.py), or (unless --allow-flaky) fails on some attempts only; with
    --strict also on fixes and stale known failures. ``retime``: the slower cells with their time measured again
    here (harness/cli/rerun.py). ``rerun``: the diff with
    its regressions judged again by re-runs on this machine (the command line's)."""
    from harness.records.files import read_results
    from harness.report import gate as gating
    from harness.report import speedgate

    inputs = {"--baseline": Path(args.baseline), "--current": Path(args.current)}
    inputs |= {option: Path(file) for option, file in (("--known", args.known), ("--matrix", args.matrix)) if file}
    refuse_over(Path(args.out), inputs)
    baseline, current = read_results(args.baseline, catalogue), read_results(args.current, catalogue)
    gating.check_comparable(baseline, current, args.baseline, args.current)
    ids = set(baseline.by_id()) | set(current.by_id())
    known = gating.load_known(args.known, ids) if args.known else {}
    changes = rerun(gating.diff(baseline, current, known), current)
    limits = speedgate.Limits(
        args.max_slowdown, args.max_compile_slowdown, args.max_memory_growth, args.max_launch_slowdown
    )
    apart = speedgate.not_comparable(baseline, current) if args.speed else "not asked for (gate --speed)"
    slow = [] if apart else speedgate.slowdowns(baseline, current, limits)
    slow = retime(slow, baseline, current, limits) if retime and slow else slow
    shown = (
        [f"Speed not compared: {apart}.", ""]
        if apart
        else [*speedgate.rules(limits, baseline, current), *speedgate.render(slow, limits)]
    )
    slower = (len(speedgate.failing(slow)), shown)
    text = gating.render(changes, baseline, current, args.strict, known, args.allow_flaky, slower, args.current)
    write_text(Path(args.out), text)
    print(text)
    return 1 if gating.failing(changes, args.strict, args.allow_flaky) or slower[0] else 0


def refuse_over(out: Path, inputs: dict[str, Path], charts: bool = False) -> None:
    """Bad input where ``out`` is one of the command's ``inputs`` (option -> file) or the other records file of
    that run (its records.jsonl beside its results.json, or the reverse), or with ``charts`` the chart beside it
    (matrix.md): it would be written over, and the run's results read wrong after."""
    for option, file in inputs.items():
        kept = [file]
        if file.name in (RESULTS_NAME, LOG_NAME):
            kept += [file.with_name(RESULTS_NAME), file.with_name(LOG_NAME)]
        if charts:
            kept.append(file.with_name("matrix.md"))
        for one in kept:
            if one.exists() and (out.resolve() == one.resolve() or _same_file(out, one)):
                what = f"the {option} file" if one == file else f"{one.name} of the {option} file's run"
                raise InputError(out, "--out", f"is {what}: the command would write over it (give another --out)")


def _same_file(out: Path, file: Path) -> bool:
    """Whether ``out`` is ``file`` by another name (a hard link): writing it writes over ``file``."""
    try:
        return out.exists() and os.path.samefile(out, file)
    except OSError:
        return False


def write_text(file: Path, text: str) -> None:
    """Write an output file named on the command line; one that cannot be written is bad input (``--out``)."""
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(text)
    except OSError as error:
        raise InputError(file, "--out", f"cannot write it: {error.strerror or error}") from None


def draw_history(args: argparse.Namespace, catalogue: Catalogue) -> int:
    from harness.records.files import read_results
    from harness.report.history import render

    for index, file in enumerate(args.results):
        refuse_over(Path(args.out), {f"results[{index}]": Path(file)})
    runs = [read_results(file, catalogue) for file in args.results]
    write_text(Path(args.out), render(runs))
    print(f"history: {args.out}")
    return 0


def merge_shards(args: argparse.Namespace, catalogue: Catalogue) -> int:
    from harness.records.files import read_results
    from harness.records.results import merge, write_results
    from harness.report.chart import write_chart

    out = Path(args.out)
    for index, file in enumerate(args.results):
        for written in (out, out.with_name("matrix.md")):  # the merged results and their chart
            refuse_over(written, {f"share {index + 1}": Path(file)}, charts=True)
    merged = merge([(file, read_results(file, catalogue)) for file in args.results])
    try:
        write_results(out, merged)
    except OSError as error:
        raise InputError(out, "--out", f"cannot write it: {error.strerror or error}") from None
    try:
        write_chart(merged, out.with_name("matrix.md"))
    except OSError as error:
        raise InputError(out.with_name("matrix.md"), "--out", f"cannot write it: {error.strerror or error}") from None
    print(f"merged {len(args.results)} files, {len(merged.cells)} cells: {out}")
    if merged.environment["complete"]:
        return 0
    expected, missing = merged.environment["expected_cells"], merged.environment.get("missing_shares")
    absent = f"share(s) {', '.join(missing)} not given; " if missing else ""
    print(
        f"incomplete: {absent}{len(merged.cells)} of {len(expected)} selected cells recorded (the chart lists the "
        "missing ones and answers no goal on their paths)",
        file=sys.stderr,
    )
    return EXIT_INCOMPLETE


def which(args: argparse.Namespace, catalogue: Catalogue) -> int:
    """The styles meeting every goal of ``--goals`` in a results file (and the near misses), printed."""
    from harness.records.files import read_results
    from harness.report import which as query
    from harness.report.chart import answers_from_part, chart_of
    from harness.report.meta import goals, in_place

    results = read_results(args.results, catalogue)
    declared = goals(results.environment)
    wanted = ids(args.goals)
    if not wanted:
        raise InputError("command line", "--goals", f"no goal given (the goals: {', '.join(declared) or 'none'})")
    if not declared:
        raise InputError(args.results, "environment.goals", "the run's matrix declares no goals ([goals]) to meet")
    for goal in wanted:
        if goal not in declared:
            raise InputError("command line", "--goals", unknown_id(goal, list(declared), "goal"))
        if not declared[goal]:
            raise InputError(args.results, f"environment.goals.{goal}", "the goal names no paths: nothing to answer")
    chart = chart_of(results, **selection(args, results))
    partial = answers_from_part(chart, wanted, declared)
    if partial:  # an incomplete run (a merge missing a share): no answer from part of a goal's cells
        print(
            f"not answered: {args.results} is an incomplete run: cells of the paths of {', '.join(partial)} have no "
            "record (complete the run, or merge every share)",
            file=sys.stderr,
        )
        return EXIT_INCOMPLETE
    cells, cases = chart.cells, chart.answered_cases
    answer = query.answer_set(wanted, declared, cells, cases, chart.candidates, in_place(chart.env, cells.values()))
    print("\n".join(query.report(answer, declared, cells, chart.left_out)))
    if args.fastest:
        from harness.report.speed import fastest_lines

        paths = dict.fromkeys(path for goal in wanted for path in declared[goal])
        print("\n".join(fastest_lines(list(cells.values()), list(paths), answer.passing)))
    return 0


def ids(given: list[str] | None) -> list[str]:
    """Comma-separated ids given once or more (``--cases a,b --cases c``), in order."""
    return [item.strip() for text in given or [] for item in text.split(",") if item.strip()]


def selection(args: argparse.Namespace, results: Results, axes: tuple[str, ...] = ("cases", "styles")) -> Any:
    """``--cases`` and ``--styles`` (and ``axes``) of ``args`` checked against the ids of ``results`` (an unknown
    one: one line, with the nearest id); an axis not given is None."""
    known = {axis: [getattr(c, axis[:-1]) for c in results.cells] for axis in axes}
    chosen: dict[str, list[str] | None] = {}
    for axis, names in known.items():
        given = getattr(args, axis, None)
        wanted = ids(given)
        if given is not None and not wanted:
            raise InputError("command line", f"--{axis}", f"no {axis[:-1]} given (an empty selection selects nothing)")
        if axis == "cases":  # a module's name stands for its cases, as in run's --cases
            modules = case_modules(results)
            wanted, names = [case for item in wanted for case in modules.get(item, [item])], [*names, *modules]
        for item in wanted:
            if item not in names:
                raise InputError(args.results, f"--{axis}", unknown_id(item, list(dict.fromkeys(names)), axis[:-1]))
        chosen[axis] = wanted or None
    return chosen


def case_modules(results: Results) -> dict[str, list[str]]:
    """The case modules of the records but those named after their one case (a built-in's ``cases.sin``), each
    with its case ids: ``--cases mygelu`` selects ``gelu_alpha``, as run's --cases does."""
    modules: dict[str, list[str]] = {}
    for cell in results.cells:
        if cell.module and cell.case not in modules.setdefault(cell.module, []):
            modules[cell.module].append(cell.case)
    return {module: cases for module, cases in modules.items() if cases != [module.rpartition(".")[2]]}
