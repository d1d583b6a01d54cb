"""What the chart knows about the axes, read from results.json's environment: each style's wrapper, each path's
group and definition, the goals, the docs' claims (an older file has them filled in when read:
harness/records/upgrade.py)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from harness.records.record import Record
from harness.records.upgrade import matrix_goals

# Row groups in this order; what each wrapper is.
WRAPPERS = {
    "launcher": "a Python function launches the `@triton.jit` kernel; no `torch.library` op",
    "triton_op": "`torch.library.triton_op` + `wrap_triton`: PyTorch traces into the kernel",
    "custom_op": "`torch.library.custom_op`: an opaque op that launches the kernel",
    "as_shipped": "the case's op as its library ships it, called unchanged; how it is wrapped is listed per case below",
    "control": "the case's pure-PyTorch reference, no Triton: when it fails too, the path is broken, not the style",
}
OTHER_GROUP = "other"


def style_info(env: dict[str, Any], styles: list[str]) -> dict[str, dict[str, Any]]:
    """style -> {"wrapper", "decorator"} from environment.styles (a style it lacks: wrapper "other")."""
    given = env.get("styles") if isinstance(env.get("styles"), dict) else {}
    info = {}
    for style in styles:
        entry = given.get(style) if isinstance(given.get(style), dict) else {}
        info[style] = {
            "wrapper": entry.get("wrapper") or OTHER_GROUP,
            "decorator": entry.get("decorator"),
        }
    return info


def by_wrapper(styles: list[str], info: dict[str, dict[str, Any]]) -> list[tuple[str, list[str]]]:
    """Styles grouped by wrapper: WRAPPERS' order, then others as they come; matrix order within a group."""
    wrappers = [w for w in WRAPPERS if any(info[s]["wrapper"] == w for s in styles)]
    wrappers += [w for w in dict.fromkeys(info[s]["wrapper"] for s in styles) if w not in wrappers]
    return [(w, [s for s in styles if info[s]["wrapper"] == w]) for w in wrappers]


def path_info(env: dict[str, Any], paths: list[str]) -> dict[str, dict[str, str]]:
    """path -> {"group", "doc"} from environment.paths (a path it lacks: group "other", no definition)."""
    given = env.get("paths") if isinstance(env.get("paths"), dict) else {}
    info = {}
    for path in paths:
        entry = given.get(path) if isinstance(given.get(path), dict) else {}
        info[path] = {"group": entry.get("group") or OTHER_GROUP, "doc": entry.get("doc") or ""}
    return info


def by_group(paths: list[str], info: dict[str, dict[str, str]]) -> list[tuple[str, list[str]]]:
    """Paths grouped, groups in the order of their first path."""
    groups = dict.fromkeys(info[p]["group"] for p in paths)
    return [(g, [p for p in paths if info[p]["group"] == g]) for g in groups]


def goals(env: dict[str, Any]) -> dict[str, list[str]]:
    """goal -> its paths, from environment.goals."""
    given = env.get("goals") if isinstance(env.get("goals"), dict) else {}
    return {str(goal): [str(p) for p in paths] for goal, paths in given.items() if isinstance(paths, list)}


def goal_sets(env: dict[str, Any]) -> dict[str, list[str]]:
    """name -> the goals a user wants together, from environment.goal_sets, or for a file without them (older
    than goal sets) this checkout's matrix.toml; only sets of goals the run declares."""
    given = env.get("goal_sets") if isinstance(env.get("goal_sets"), dict) else matrix_goals("goal_sets")
    declared = goals(env)
    return {
        str(name): [str(g) for g in members]
        for name, members in given.items()
        if isinstance(members, list) and members and all(g in declared for g in members)
    }


CANNOT_TRAIN = re.compile(r"writes into .*cannot train it")  # harness/kernel/wrappers.py's build error


def in_place(env: dict[str, Any], cells: Iterable[Record]) -> list[str]:
    """The cases whose op writes into its inputs: environment.in_place, or (an older file) a record whose
    library style could not register autograd for it."""
    given = env.get("in_place") if isinstance(env.get("in_place"), dict) else {}
    found = dict.fromkeys(str(case) for case in given)
    found.update(dict.fromkeys(c.case for c in cells if c.error and CANNOT_TRAIN.search(c.error)))
    return list(found)


@dataclass
class Docs:
    """What documentation claims: source name -> its description; (style, path) -> (supported, source)."""

    sources: dict[str, str] = field(default_factory=dict)
    claims: dict[tuple[str, str], tuple[bool, str]] = field(default_factory=dict)


def read_docs(docs: Any) -> Docs:
    """environment.docs: {"sources": {name: text}, "claims": {style: {path: {"supported": bool, "source": name}}}}."""
    if not isinstance(docs, dict):
        return Docs()
    sources = {str(k): str(v) for k, v in (docs.get("sources") or {}).items()}
    claims = {}
    for style, by_path in (docs.get("claims") or {}).items():
        for path, claim in (by_path or {}).items():
            if isinstance(claim, bool):  # lenient: a bare bool claims without naming a source
                claim = {"supported": claim, "source": ""}
            if isinstance(claim, dict) and isinstance(claim.get("supported"), bool):
                claims[(style, path)] = (claim["supported"], str(claim.get("source") or ""))
    return Docs(sources, claims)
