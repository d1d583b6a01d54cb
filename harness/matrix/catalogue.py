"""Every style and path this harness knows, described from the kernel and cell registries (the ``Catalogue`` a
results file is read with: harness/records/upgrade.py). The registries are imported on first use, so reading a
file that describes its own styles and paths imports no torch."""

from __future__ import annotations

import functools
from typing import Any


class Registries:
    """The live registries as a ``Catalogue``."""

    def style_axes(self, style: str) -> tuple[str | None, str] | None:
        return _styles().get(style)

    def path_entry(self, path: str) -> dict[str, str] | None:
        return _paths().get(path)


@functools.cache
def _styles() -> dict[str, tuple[str | None, str]]:
    from harness.kernel.styles import KNOWN_STYLES

    return KNOWN_STYLES


@functools.cache
def _paths() -> dict[str, dict[str, str]]:
    """path -> its group and its function's docstring's first sentence."""
    from harness.cell.paths import PATH_GROUPS, PATHS

    def first_sentence(function: Any) -> str:
        return " ".join((function.__doc__ or "").split()).split(". ")[0].rstrip(".")

    return {path: {"group": PATH_GROUPS[path], "doc": first_sentence(function)} for path, function in PATHS.items()}
