"""The chart's first answer: for each goal (a set of paths), the styles that pass every case on every one of
its paths, and the near misses with the cells they fail. Drawn from the records only."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harness.records.confirmation import is_suspect
from harness.records.record import Record
from harness.report.casebugs import BrokenCase, FailingKernel
from harness.report.marks import BROKEN_PATH, GRAPH_BREAK, mark, wrap, wrong_numbers
from harness.report.mismatch import WrongKernel
from harness.spec import CellId, Status


@dataclass
class Answer:
    goal: str
    paths: list[str]
    passing: list[str]  # styles passing every (case, path) of the goal on every attempt
    near: dict[str, list[tuple[str, str]]]  # style -> its failing (case, path) cells
    control: list[tuple[str, str]]  # the control's failing cells: the path is broken there, not a style
    wrong_elsewhere: dict[str, list[tuple[str, str]]]  # answering style -> (case, path) of the matrix it gets wrong


FROM_CHECKOUT = "this checkout's matrix.toml (this results file has no environment.goals)"


def excused(record: Record | None) -> bool:
    """A cell the style misses that does not count against it (a near miss at worst, however many): every
    attempt alike with a status that counts against no style (``against_style`` in harness/spec.py: a graph
    break), or a failure its repro did not show."""
    if record is None:
        return False
    return (not record.flaky and not record.status.rule.against_style) or is_suspect(record)


def near_limit(cells: int) -> int:
    """A near miss fails at most a third of the goal's cells (at least one, never all)."""
    return max(1, cells // 3)


def answer(
    goal: str,
    paths: list[str],
    cells: dict[str, Record],
    cases: list[str],
    candidates: list[str],
    controls: list[str],
) -> Answer:
    """One goal's answer. A cell counts only when it was recorded, not skipped, and passed on every attempt: a
    style that skipped or missed a cell of the goal does not answer it. A style whose only misses are graph
    breaks (right numbers, the kernel outside the compiled graph) is a near miss however many there are."""

    def failing(style: str) -> list[tuple[str, str]]:
        return failing_cells(style, paths, cells, cases)

    passing, near = [], {}
    total = len(paths) * len(cases)
    for style in candidates:
        bad = failing(style)
        if not bad:
            passing.append(style)
        elif (len(bad) <= near_limit(total) and len(bad) < total) or all(
            excused(cells.get(str(CellId(c, style, p)))) for c, p in bad
        ):
            near[style] = bad
    broken = [  # the control failed there (not a skip or a cell not recorded: nothing measured breaks no path)
        (case, path) for style in controls for case, path in failing(style)
        if (record := cells.get(str(CellId(case, style, path)))) is not None and record.status != Status.SKIP
    ]  # fmt: skip
    elsewhere = {
        style: [(r.case, r.path) for r in cells.values() if r.style == style and r.case in cases and wrong_numbers(r)]
        for style in passing
    }
    return Answer(goal, paths, passing, near, broken, {s: cells for s, cells in elsewhere.items() if cells})


def left_out_note(left: Sequence[WrongKernel | BrokenCase | FailingKernel], others: list[str]) -> str:
    """Why the goals leave out the cases ``left`` (a kernel wrong in itself, a case broken in its own code): their
    cells measure nothing of the styles; ``others``: the cases the goals are answered over."""
    reasons = "; ".join(f"{one.case}: {one.reason()}" for one in left)
    over = f"the goals are answered over the other cases ({', '.join(others)})" if others else "no other case is left"
    return f"Left out of the goals, their cells measure nothing of the styles: {reasons}. {over[0].upper()}{over[1:]}."


def failing_cells(style: str, paths: list[str], cells: dict[str, Record], cases: list[str]) -> list[tuple[str, str]]:
    """The (case, path) cells of ``style`` on ``paths`` that did not pass on every attempt (or are missing)."""
    return [(c, p) for p in paths for c in cases if not _passes(cells.get(str(CellId(c, style, p))))]


def _passes(record: Record | None) -> bool:
    return record is not None and record.reliable_pass


def measured(path: str, cells: dict[str, Record]) -> bool:
    """Some cell of the path ran (recorded, not skipped)."""
    return any(r.path == path and r.status != Status.SKIP for r in cells.values())


def section(
    goals: dict[str, list[str]],
    from_results: bool,
    cells: dict[str, Record],
    cases: list[str],
    style_groups: list[tuple[str, list[str]]],
    note: Callable[[Record], int],
    unrecorded: set[str] | frozenset[str] = frozenset(),
    left: Sequence[WrongKernel | BrokenCase | FailingKernel] = (),
) -> list[str]:
    """``## Which style for which goal``: one row per goal whose every path ran in this run (and, in an incomplete
    run, has a record of every selected cell: ``unrecorded`` names the paths that do not), over ``cases`` (the
    cases whose cells measure the styles: ``left`` are the others, named once)."""
    candidates = [s for wrapper, styles in style_groups if wrapper != "control" for s in styles]
    controls = [s for wrapper, styles in style_groups if wrapper == "control" for s in styles]
    group_of = {s: wrapper for wrapper, styles in style_groups for s in styles}
    answers, unmeasured, partial = [], {}, {}
    for goal, paths in goals.items():
        missing = [p for p in paths if not measured(p, cells)]
        if missing:
            unmeasured[goal] = missing
        elif set(paths) & unrecorded:
            partial[goal] = [p for p in paths if p in unrecorded]
        elif cases:
            answers.append(answer(goal, paths, cells, cases, candidates, controls))
    out = ["## Which style for which goal", ""]
    for a in answers:
        head = f"- **{a.goal}** ({', '.join(f'`{p}`' for p in a.paths)}): use " + (
            _styles(a.passing, group_of, a.wrong_elsewhere) or "none"
        )
        out += wrap(head)
        out += [line for entry in _near(a, cells, note) for line in wrap(f"  - {entry}", "    ")]
    if not answers:
        out.append(
            "No goal's paths ran in this run." if cases else "No goal is answered: every case is left out (below)."
        )
    if left:
        out += ["", *wrap(left_out_note(left, cases))]
    wrong = {style: found for a in answers for style, found in a.wrong_elsewhere.items()}
    if wrong:
        out += ["", "⚠️ gives silently wrong numbers elsewhere in the matrix (other paths than the goal's):", ""]
        out += [line for style, cells in wrong.items() for line in wrap(f"- **{style}**: {where(cells)}")]
    out += _rule(cases, from_results) if cases else []
    if partial:
        out += [
            "",
            *wrap(
                "Not answered, the run is incomplete: cells of their paths have no record: "
                + "; ".join(f"{goal} ({', '.join(f'`{p}`' for p in part)})" for goal, part in partial.items())
                + "."
            ),
        ]
    if unmeasured:
        out += [
            "",
            *wrap(
                "Not answered, their paths did not run here: "
                + "; ".join(f"{goal} ({', '.join(f'`{p}`' for p in missing)})" for goal, missing in unmeasured.items())
                + "."
            ),
        ]
    return [*out, ""]


def _rule(cases: list[str], from_results: bool) -> list[str]:
    """What answering a goal means, over ``cases``."""
    return [
        "",
        *wrap(
            f"A style answers a goal (use) when it ran and passes all {len(cases)} case(s) ({', '.join(cases)}) on "
            "every path of the goal, on every attempt: a flaky, skipped or unrecorded cell is not a pass. Styles are "
            "listed by wrapper (` · ` between wrappers); `control` (pure PyTorch) is not a candidate. A near miss "
            "fails at most a third of the goal's cells, named as case (or case/path) with its mark and note; a "
            f"style whose kernel ran outside the compiled graph ({GRAPH_BREAK}) never answers a goal and is always a "
            "near miss." + ("" if from_results else f" Goals: {FROM_CHECKOUT}.")
        ),
    ]


def _styles(styles: list[str], group_of: dict[str, str], wrong: dict[str, list[tuple[str, str]]]) -> str:
    """``**raw_jit**, **autotune** ⚠️ · **triton_op**``: by wrapper; ⚠️ where the style is wrong elsewhere."""
    groups: dict[str, list[str]] = {}
    for style in styles:
        groups.setdefault(group_of[style], []).append(f"**{style}**" + (" ⚠️" if wrong.get(style) else ""))
    return " · ".join(", ".join(names) for names in groups.values())


def where(cells: list[tuple[str, str]]) -> str:
    """``add_inplace on `compile`, `fullgraph`; sin on `eager```: the cells, by case."""
    by_case: dict[str, list[str]] = {}
    for case, path in cells:
        by_case.setdefault(case, []).append(path)
    return "; ".join(f"{case} on {', '.join(f'`{p}`' for p in paths)}" for case, paths in by_case.items())


def _near(a: Answer, cells: dict[str, Record], note: Callable[[Record], int]) -> list[str]:
    """Styles failing the same cells the same way share an entry: ``raw_jit, autotune: add_inplace ❌ [13]``."""

    def label(style: str, cell: tuple[str, str]) -> str:
        case, path = cell
        name = case if len(a.paths) == 1 else f"{case}/{path}"
        record = cells.get(str(CellId(case, style, path)))
        return f"{name} {mark(record)}" + (f" [{note(record)}]" if record is not None else "")

    entries: dict[str, list[str]] = {}
    for style, bad in a.near.items():
        entries.setdefault(", ".join(label(style, cell) for cell in bad), []).append(style)
    parts = [f"near miss: {', '.join(styles)}: {failures}" for failures, styles in entries.items()]
    if a.control:
        control = ", ".join(f"{c}/{p}" for c, p in a.control)
        parts.append(f"{BROKEN_PATH} `control` (pure PyTorch) fails too on {control}: the path is broken here")
    return parts
