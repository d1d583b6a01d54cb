"""[docs] of matrix.toml: what documents claim about the cells, resolved per style and path.

Per source (``[docs.NAME]``: its ``source`` text and ``expect``), a claim is ``path = true`` (documented as
supported) or ``false`` (as unsupported), made for a wrapper (every style with that wrapper) or for a style
id, which overrides its wrapper's claim path by path. A key that is both (``triton_op``, ``custom_op``: the
``@triton.jit`` style is named after its wrapper) is the wrapper's claim. Two sources claiming the same style
and path must agree; the claim then names both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.errors import InputError
from harness.matrix.tomlcheck import ID_PATTERN, no_unknown, nonempty_table

SOURCE_KEYS = {"source", "expect"}


def resolve_docs(
    file: Path, value: Any, style_axes: dict[str, tuple[str | None, str]], path_ids: list[str]
) -> dict[str, Any]:
    """``{"sources": {name: text}, "claims": {style: {path: {"supported": bool, "source": "name[, name]"}}}}``,
    styles and paths in matrix order; raises ``InputError`` for a bad key or two sources that disagree."""
    sources: dict[str, str] = {}
    claims: dict[str, dict[str, dict[str, Any]]] = {}
    made_by: dict[tuple[str, str], str] = {}  # (style, path) -> the key of its first claim
    for name, table in nonempty_table(file, "docs", value).items():
        expect = _source(file, name, table, style_axes, path_ids)
        sources[name] = table["source"]
        for style, (_, wrapper) in style_axes.items():
            own: dict[str, tuple[bool, str]] = {}
            for key in dict.fromkeys((wrapper, style)):  # the wrapper's claims, then the style's own over them
                for path_id, claim in expect.get(key, {}).items():
                    own[path_id] = (claim, f"docs.{name}.expect.{key}.{path_id}")
            for path_id, (claim, key) in own.items():
                known = claims.setdefault(style, {}).get(path_id)
                if known is None:
                    claims[style][path_id] = {"supported": claim, "source": name}
                    made_by[(style, path_id)] = key
                elif known["supported"] != claim:
                    other = made_by[(style, path_id)]
                    raise InputError(file, key, f"{style}-{path_id}: {claim} contradicts {other} = {not claim}")
                else:
                    known["source"] += f", {name}"
    ordered = {
        style: {path_id: claims[style][path_id] for path_id in path_ids if path_id in claims[style]}
        for style in style_axes
        if claims.get(style)
    }
    return {"sources": sources, "claims": ordered}


def _source(
    file: Path, name: str, table: Any, style_axes: dict[str, tuple[str | None, str]], path_ids: list[str]
) -> dict[str, dict[str, bool]]:
    """Check one ``[docs.NAME]`` table; return its ``expect``: wrapper or style -> path -> claim."""
    prefix = f"docs.{name}"
    if not isinstance(table, dict) or not ID_PATTERN.fullmatch(name) or "." in name:
        raise InputError(file, prefix, "expected a table [docs.NAME] of source and expect (NAME: letters, digits, _)")
    no_unknown(file, prefix + ".", table, SOURCE_KEYS)
    if not isinstance(table["source"], str) or not table["source"]:
        raise InputError(file, f"{prefix}.source", "expected a string (where the claims come from)")
    wrappers = list(dict.fromkeys(wrapper for decorator, wrapper in style_axes.values() if decorator is not None))
    expect = nonempty_table(file, f"{prefix}.expect", table["expect"])
    for key, paths in expect.items():
        if key not in wrappers and key not in style_axes:
            raise InputError(
                file,
                f"{prefix}.expect.{key}",
                f"not a wrapper ({', '.join(wrappers)}) or style ({', '.join(style_axes)}) of this matrix",
            )
        for path_id, claim in nonempty_table(file, f"{prefix}.expect.{key}", paths).items():
            if path_id not in path_ids:
                raise InputError(file, f"{prefix}.expect.{key}.{path_id}", "not a path of this matrix")
            if not isinstance(claim, bool):
                raise InputError(file, f"{prefix}.expect.{key}.{path_id}", f"expected true or false, got {claim!r}")
    return expect
