"""matrix.toml's [goals] and [goal_sets]: what users come to the chart for, checked on load."""

from __future__ import annotations

from difflib import get_close_matches
from pathlib import Path
from typing import Any

from harness.errors import InputError
from harness.matrix.tomlcheck import id_list


def check_goals(file: Path, value: Any, declared: dict[str, Any]) -> dict[str, list[str]]:
    """The optional [goals] table: ``"a user's goal" = ["path", ...]``, the paths (of those ``declared`` in
    [paths]) a style must pass (on every case) to serve that goal; the chart's "Which style for which goal"
    answers each from the results."""
    if not isinstance(value, dict):
        raise InputError(file, "goals", "expected a table of goal = [path ids]")
    for goal, paths in value.items():
        if not goal.strip() or "," in goal or goal != goal.strip():
            problem = "holds a comma: `which --goals` could never ask for it" if "," in goal else "a blank name"
            raise InputError(file, f"goals.{goal!r}", f"bad goal name: {problem} (or spaces at either end)")
        id_list(file, f"goals.{goal}", {f"goals.{goal}": paths}, declared)
    return {goal: list(paths) for goal, paths in value.items()}


def check_goal_sets(file: Path, value: Any, goals: dict[str, list[str]]) -> dict[str, list[str]]:
    """The optional [goal_sets] table: ``"a name" = ["goal", ...]``, goals of [goals] a user wants together;
    the chart answers each with the styles meeting all of them (``python -m harness which`` answers any)."""
    if not isinstance(value, dict):
        raise InputError(file, "goal_sets", "expected a table of name = [goals of [goals]]")
    for name, members in value.items():
        key = f"goal_sets.{name}"
        if not isinstance(members, list) or not members:
            raise InputError(file, key, "expected a non-empty list of goals")
        for index, goal in enumerate(members):
            if goal not in goals:
                known = ", ".join(repr(g) for g in goals) or "none: declare [goals] first"
                close = get_close_matches(goal, list(goals), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise InputError(file, f"{key}[{index}]", f"unknown goal {goal!r}{hint} (the goals: {known})")
        if len(set(members)) != len(members):
            raise InputError(file, key, "a goal is listed twice")
    return {name: list(members) for name, members in value.items()}
