"""Paths: the ways a model reaches the GPU (or CPU), each a function that runs a cell and compares it.

One module per chart group, each declaring ``GROUP``; a path is one function registered with ``@path`` there.
Importing this package registers every path: ``PATHS`` (id -> function) and ``PATH_GROUPS`` (id -> group).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.cell import Cell

PathRunner = Callable[["Cell"], None]
PATHS: dict[str, PathRunner] = {}
PATH_GROUPS: dict[str, str] = {}  # path id -> the chart group of the module that registered it


def path(runner: PathRunner) -> PathRunner:
    """Register a path under its function's name (the id used in matrix.toml and cell ids), in the group its
    module declares (``GROUP``)."""
    PATHS[runner.__name__] = runner
    PATH_GROUPS[runner.__name__] = sys.modules[runner.__module__].GROUP
    return runner


from harness.paths import compilation, export, training, subsystems  # noqa: E402, F401, I001  (registers them)
