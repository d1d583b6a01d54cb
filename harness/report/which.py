"""Which style meets all of a user's goals: the styles passing every case on every path of every goal, the near
misses (the styles missing one goal, with the cells they fail), and, when an in-place case makes a goal
unreachable for every style, the answer for the functional cases too. ``python -m harness which`` prints it;
the chart answers the goal sets matrix.toml names (``[goal_sets]``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from harness.records.record import Record
from harness.report.casebugs import BrokenCase, FailingKernel
from harness.report.goals import failing_cells, left_out_note, measured, where
from harness.report.marks import escape, mark, note_text, wrap, wrong_numbers
from harness.report.mismatch import WrongKernel
from harness.report.speed import goal_speed
from harness.spec import CellId

SHOWN = 4  # failing cells named per near miss, at most
NOTE = 200  # characters of a near miss's note ``which`` prints


@dataclass
class SetAnswer:
    goals: list[str]
    cases: list[str]
    passing: list[str]  # styles meeting every goal on every case
    near: dict[str, tuple[str, list[tuple[str, str]]]]  # style -> (the one goal it misses, its failing cells)
    blocked: dict[str, list[str]] = field(default_factory=dict)  # goal -> in-place cases no style meets it on
    functional: SetAnswer | None = None  # the answer without the in-place cases, when they block a goal


def answer_set(
    goal_names: list[str],
    goals: dict[str, list[str]],
    cells: dict[str, Record],
    cases: list[str],
    candidates: list[str],
    in_place: list[str] | tuple[str, ...] = (),
) -> SetAnswer:
    """The styles of ``candidates`` meeting every goal of ``goal_names`` on ``cases``; near misses miss one."""
    missed = {s: {g: failing_cells(s, goals[g], cells, cases) for g in goal_names} for s in candidates}
    missed = {s: {g: bad for g, bad in by_goal.items() if bad} for s, by_goal in missed.items()}
    passing = [s for s in candidates if not missed[s]]
    near = {s: next(iter(by_goal.items())) for s, by_goal in missed.items() if len(by_goal) == 1}
    answer = SetAnswer(goal_names, cases, passing, near)
    functional = [c for c in cases if c not in in_place]
    if functional == cases or not functional:
        return answer
    for goal in goal_names:
        unmet = [s for s in candidates if missed[s].get(goal)]
        if len(unmet) == len(candidates) and any(
            all(case in in_place for case, _ in missed[s][goal]) for s in candidates
        ):
            answer.blocked[goal] = [c for c in in_place if c in cases]
    if answer.blocked:
        answer.functional = answer_set(goal_names, goals, cells, functional, candidates)
    return answer


def near_text(answer: SetAnswer, goals: dict[str, list[str]], cells: dict[str, Record]) -> list[str]:
    """One entry per near miss: ``autotune misses train with compile: add_inplace ❌, sin ❌ (+3 more)``."""
    out = []
    for style, (goal, bad) in answer.near.items():
        several = len(goals[goal]) > 1
        named = [f"{case}/{path}" if several else case for case, path in bad[:SHOWN]]  # the cell's name within the goal
        marks = [
            f"{name} {mark(cells.get(str(CellId(c, style, p))))}" for name, (c, p) in zip(named, bad, strict=False)
        ]
        more = f" (+{len(bad) - SHOWN} more)" if len(bad) > SHOWN else ""
        out.append(f"`{style}` misses {goal}: {', '.join(marks)}{more}")
    return out


def blocked_text(answer: SetAnswer) -> str:
    """Why no style meets a goal: its in-place case(s)."""
    return "; ".join(
        f"no style meets {goal} on the in-place case(s) {', '.join(cases)}"
        + (
            " (an op that writes into its inputs registers no autograd as a torch.library op)"
            if "train" in goal
            else ""
        )
        for goal, cases in answer.blocked.items()
    )


def ordered(answer: SetAnswer, goals: dict[str, list[str]], cells: dict[str, Record]) -> tuple[list[str], str]:
    """The styles meeting the goals, as the chart orders them: fastest first by GPU time on the first timed path of
    the goals (relative to the fastest of them on each case), the untimed after them; and that order in words."""
    paths = list(dict.fromkeys(path for goal in answer.goals for path in goals[goal]))
    speed = goal_speed(list(cells.values()), paths, answer.passing)
    if speed is None:
        return answer.passing, "in the matrix's order: none of them was timed"
    ranks = speed.ranks
    styles = sorted(answer.passing, key=lambda s: (ranks[s].relative, s) if s in ranks else (float("inf"), s))
    shown = [f"{s} {ranks[s].relative:.2f}×" if s in ranks else s for s in styles]
    return shown, (
        f"fastest first: GPU time on {speed.path}, {speed.regime}-bound, over the fastest of them on each case "
        "(geometric mean)"
    )


def warnings(styles: list[str], cells: dict[str, Record], cases: list[str]) -> list[str]:
    """The chart's ⚠️: each style that gives wrong numbers on some other cell of ``cases``, with where (the
    terminal's lines lose the chart's backticks in ``report``)."""
    out = []
    for style in styles:
        wrong = [(r.case, r.path) for r in cells.values() if r.style == style and r.case in cases and wrong_numbers(r)]
        if wrong:
            out.append(f"  ⚠️ {style} gives silently wrong numbers elsewhere: {where(wrong)}")
    return out


def report(
    answer: SetAnswer,
    goals: dict[str, list[str]],
    cells: dict[str, Record],
    left: Sequence[WrongKernel | BrokenCase | FailingKernel] = (),
) -> list[str]:
    """The answer as plain lines, for the terminal, as the chart says it: the styles meeting every goal (⚠️ where
    they give wrong numbers elsewhere in the matrix), in an order it names, then the near misses; ``use: not
    answered, not measured`` when a goal's paths did not run. ``left``: the cases left out of ``answer`` (a kernel
    wrong in itself, a case broken in its own code: named, never a style's miss)."""
    out = [
        "goals: " + "; ".join(f"{g} ({', '.join(goals[g])})" for g in answer.goals),
        f"cases: {', '.join(answer.cases) or 'none'}",
        *([left_out_note(left, answer.cases)] if left else []),
    ]
    if not answer.cases:
        return [*out, "use: not answered, every case is left out"]
    unrun = {g: [p for p in goals[g] if not measured(p, cells)] for g in answer.goals}
    if any(unrun.values()):  # as the chart's "not answered": no style can be said to meet or miss it
        paths = ",".join(dict.fromkeys(p for missing in unrun.values() for p in missing))
        missing = "; ".join(f"{g} needs {', '.join(m)}" for g, m in unrun.items() if m)
        unanswered = f"not run in these results; run them: --paths {paths}"
        return [*out, f"use: not answered, not measured ({missing}: {unanswered})"]
    names, order = ordered(answer, goals, cells)
    warned = {line.split()[1] for line in warnings(answer.passing, cells, answer.cases)}
    names = [name + (" ⚠️" if name.split()[0] in warned else "") for name in names]
    out += [
        "use: " + (", ".join(names) or "none") + " (passed every case on every path of every goal, on every attempt)",
    ]
    if answer.passing:
        out += [f"  order: {order}", *warnings(answer.passing, cells, answer.cases)]
    near = near_text(answer, goals, cells)
    if near:
        out.append("near misses (meet every goal but one; the note of the first cell each misses):")
        for line, (style, (_, bad)) in zip(near, answer.near.items(), strict=True):
            case, path = bad[0]
            record = cells.get(str(CellId(case, style, path)))
            out += [f"  {line}"] + ([f"    note: {escape(note_text(record), NOTE)}"] if record is not None else [])
    if answer.functional is not None:
        functional = answer.functional
        out += [
            f"in-place: {blocked_text(answer)}.",
            f"for the functional cases ({', '.join(functional.cases)}): use: "
            + (", ".join(functional.passing) or "none"),
            *(f"  near miss: {line}" for line in near_text(functional, goals, cells)),
        ]
    return [line.replace("`", "") for line in out]


def section(
    sets: dict[str, list[str]],
    goals: dict[str, list[str]],
    cells: dict[str, Record],
    cases: list[str],
    candidates: list[str],
    in_place: list[str],
    from_results: bool = True,
    left: Sequence[WrongKernel | BrokenCase | FailingKernel] = (),
) -> list[str]:
    """``## Which style for a set of goals``: one item per goal set of the matrix whose paths all ran, over
    ``cases`` (``left``: the cases left out, named once)."""
    ran = {r.path for r in cells.values() if r.ran}
    answerable = {name: members for name, members in sets.items() if all(set(goals[g]) <= ran for g in members)}
    if not answerable:
        return []
    out = ["## Which style for a set of goals", ""]
    if left:
        out += [*wrap(left_out_note(left, cases), ""), ""]
    if not cases:
        return out
    for name, members in answerable.items():
        answer = answer_set(members, goals, cells, cases, candidates, in_place)
        out += wrap(f"- **{name}** ({' + '.join(members)}): use " + _names(answer.passing))
        out += [line for entry in near_text(answer, goals, cells) for line in wrap(f"  - near miss: {entry}", "    ")]
        if answer.functional is not None:
            functional = answer.functional
            text = f"  - in-place: {blocked_text(answer)}; for the functional cases: use {_names(functional.passing)}"
            out += wrap(text, "    ")
    note = (
        "A style answers a set when it passes every case on every path of every goal of the set, on every attempt; "
        'a near miss meets every goal but one. `python -m harness which --goals "GOAL,GOAL"` answers any set.'
    )
    return [*out, "", *wrap(note, ""), ""]


def _names(styles: list[str]) -> str:
    return ", ".join(f"**{s}**" for s in styles) or "none"
