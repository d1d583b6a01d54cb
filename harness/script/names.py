"""The script's own names kept apart from the case's: where the case's code defines a name the script's style or
path also defines at the top level (``check``, ``SIZE``, ``Model``, ``main``...), the script's is renamed, so the
case's functions still find their own globals and the script's calls reach its own helpers."""

from __future__ import annotations

import ast
import io
import keyword
import re
import tokenize

from harness.script.usercode import defined

OPENING, CLOSING = "([{", ")]}"


def defined_at_top(text: str) -> set[str]:
    """The names ``text``'s top-level statements bind (not its imports)."""
    nodes = [node for node in ast.parse(text).body if not isinstance(node, ast.Import | ast.ImportFrom)]
    return {name for node in nodes for name in defined(node)}


def kept_apart(own: list[str], taken: set[str]) -> list[str]:
    """``own`` (the script's own parts, each complete statements) with every name they define at the top level that
    ``taken`` (the case's code) defines too renamed in all of them: ``check`` to ``check_``."""
    renames = apart(own, taken)
    return [renamed(part, renames) for part in own] if renames else own


def apart(own: list[str], taken: set[str]) -> dict[str, str]:
    """The new name of each name ``own``'s parts define at the top level that ``taken`` defines too."""
    mine = set().union(*(defined_at_top(part) for part in own))
    used = mine | taken
    renames = {}
    for name in sorted(mine & taken):
        new = f"{name}_"
        while new in used or keyword.iskeyword(new):
            new += "_"
        renames[name] = new
        used.add(new)
    return renames


def renamed(text: str, renames: dict[str, str]) -> str:
    """``text`` with each name of ``renames`` replaced where it is a variable (not an attribute, nor a keyword
    argument's name), inside f-strings too."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    edits: list[tuple[int, int, str]] = []
    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    depth = 0
    for index, token in enumerate(tokens):
        if token.type == tokenize.OP:
            depth += (token.string in OPENING) - (token.string in CLOSING)
        start = starts[token.start[0] - 1] + token.start[1]
        end = starts[token.end[0] - 1] + token.end[1]
        if token.type == tokenize.NAME and token.string in renames:
            before = tokens[index - 1].string if index else ""
            after = tokens[index + 1].string if index + 1 < len(tokens) else ""
            if before != "." and not (depth and after == "=" and before in "(,"):
                edits.append((start, end, renames[token.string]))
        elif token.type == tokenize.STRING and re.match(r"[rRbB]?[fF]", token.string):  # Python < 3.12
            edits.append((start, end, _in_braces(token.string, renames)))
    for start, end, new in reversed(edits):
        text = text[:start] + new + text[end:]
    return text


def _in_braces(literal: str, renames: dict[str, str]) -> str:
    pattern = re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, renames)) + r")\b")
    return re.sub(r"\{[^{}]*\}", lambda field: pattern.sub(lambda m: renames[m.group(1)], field.group(0)), literal)
